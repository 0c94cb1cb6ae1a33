/**
 * Bytes of unknown length on their way into one R2 object, a part at a time: an R2 multipart
 * upload, which stays invisible until completed and leaves nothing behind when aborted (R2 also
 * aborts an upload left incomplete, after 7 days by default). `put` would need the length up
 * front, which a streamed request body need not declare.
 */

/**
 * R2's parts are at least 5 MiB and all but the last the same size. The minimum keeps one part
 * in memory at a time, and a 100 MB dataset to 20 parts.
 */
export const PART_BYTES = 5 * 1024 * 1024;

export class PartWriter {
  private readonly parts: R2UploadedPart[] = [];
  private buffer = new Uint8Array(PART_BYTES);
  private filled = 0;

  private constructor(private readonly upload: R2MultipartUpload) {}

  static async open(
    bucket: R2Bucket,
    key: string,
    options: R2MultipartOptions,
  ): Promise<PartWriter> {
    return new PartWriter(await bucket.createMultipartUpload(key, options));
  }

  /** Copies `chunk` in; a full part is sent before this resolves, so memory stays one part. */
  async write(chunk: Uint8Array): Promise<void> {
    let at = 0;
    while (at < chunk.byteLength) {
      const taken = Math.min(PART_BYTES - this.filled, chunk.byteLength - at);
      this.buffer.set(chunk.subarray(at, at + taken), this.filled);
      this.filled += taken;
      at += taken;
      if (this.filled === PART_BYTES) await this.sendPart();
    }
  }

  /** Sends what is left as the last part and makes the object appear, whole. */
  async complete(): Promise<R2Object> {
    if (this.filled > 0 || this.parts.length === 0) await this.sendPart();
    return this.upload.complete(this.parts);
  }

  /** Drops every part sent: no object appears. */
  abort(): Promise<void> {
    return this.upload.abort();
  }

  private async sendPart(): Promise<void> {
    const part = this.buffer.subarray(0, this.filled);
    // A fresh buffer for the next part: the one sent may still be read by the runtime.
    this.buffer = new Uint8Array(PART_BYTES);
    this.filled = 0;
    this.parts.push(await this.upload.uploadPart(this.parts.length + 1, part));
  }
}
