/**
 * One pass over an uploaded dataset as it streams in: its bytes counted against the limit, its
 * lines checked, its SHA-256 taken, and each chunk handed on to be stored, until the first bad
 * line, after which nothing more is worth storing. The whole file is never in memory.
 */
import type { LineProblem } from "../sdk";
import { hex } from "../utils/digest";
import { MAX_DATASET_BYTES, MAX_DATASET_EXAMPLES } from "./dataset-wire";
import { LineChecker } from "./line-checker";

/** What reading found: the file whole and sound, or why it is refused. */
export type BodyRead =
  | { kind: "whole"; bytes: number; examples: number; sha256: string }
  | { kind: "invalid"; problems: LineProblem[] }
  | { kind: "empty" }
  | { kind: "too_large"; message: string };

/** Where the chunks go while the file is still sound (an R2 upload); null: nowhere. */
export type ChunkSink = ((chunk: Uint8Array) => Promise<void>) | null;

export async function readDatasetBody(
  body: ReadableStream<Uint8Array>,
  sink: ChunkSink,
): Promise<BodyRead> {
  const checker = new LineChecker();
  const digest = new crypto.DigestStream("SHA-256");
  const hashing = digest.getWriter();
  const reader = body.getReader();
  let bytes = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) {
      checker.end();
      break;
    }
    bytes += value.byteLength;
    if (bytes > MAX_DATASET_BYTES) {
      await reader.cancel();
      return {
        kind: "too_large",
        message: `the dataset is over ${MAX_DATASET_BYTES} bytes, the most one push may carry; split it`,
      };
    }
    checker.push(value);
    if (checker.settled) {
      // Ten bad lines name enough to fix; the rest of the file would change no answer.
      await reader.cancel();
      break;
    }
    // Past a bad line the file is refused: nothing more is worth storing, or hashing.
    if (checker.problems.length > 0) continue;
    // Sink and checker copy what they keep before the digest, which may take the chunk over.
    await sink?.(value);
    await hashing.write(value);
  }
  if (checker.tooManyExamples)
    return {
      kind: "too_large",
      message: `the dataset has over ${MAX_DATASET_EXAMPLES} examples, the most one push may carry; split it`,
    };
  if (checker.problems.length > 0) return { kind: "invalid", problems: checker.problems };
  if (checker.examples === 0) return { kind: "empty" };
  await hashing.close();
  return {
    kind: "whole",
    bytes,
    examples: checker.examples,
    sha256: hex(new Uint8Array(await digest.digest)),
  };
}
