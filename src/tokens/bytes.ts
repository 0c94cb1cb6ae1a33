/** The bytes under a typed array, without a copy (little-endian on every Workers machine). */
export function bytesOf(array: Int32Array | Uint8Array | Float32Array): Uint8Array {
  return new Uint8Array(array.buffer, array.byteOffset, array.byteLength);
}
