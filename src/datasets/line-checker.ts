/**
 * Checks a JSONL file as its bytes arrive, holding only the line in progress: the SDK's rule for
 * a line (`readDatasetLine`, what `edgeroll run` holds a file to), plus what a stream needs that
 * a whole text does not: each line's UTF-8 checked apart, and a line's length bounded.
 */
import { type LineProblem, readDatasetLine } from "../sdk";
import { MAX_DATASET_EXAMPLES, MAX_LINE_BYTES, MAX_LISTED_PROBLEMS } from "./dataset-wire";

const NEWLINE = 0x0a;

export class LineChecker {
  /** Non-blank lines that are examples. */
  examples = 0;
  /** The first bad lines, in file order, at most `MAX_LISTED_PROBLEMS`. */
  readonly problems: LineProblem[] = [];
  /** More examples than `MAX_DATASET_EXAMPLES`: the file is refused whole. */
  tooManyExamples = false;

  private lines = 0;
  private held: Uint8Array[] = [];
  private heldBytes = 0;
  private readonly seen = new Set<string>();
  private readonly utf8 = new TextDecoder("utf-8", { fatal: true, ignoreBOM: false });

  /** True once reading further would change no answer. */
  get settled(): boolean {
    return this.problems.length >= MAX_LISTED_PROBLEMS || this.tooManyExamples;
  }

  /**
   * The next bytes of the file. A newline byte never occurs inside a UTF-8 sequence, so lines
   * are cut on bytes and each is decoded whole.
   */
  push(chunk: Uint8Array): void {
    let start = 0;
    for (let end = chunk.indexOf(NEWLINE); end !== -1; end = chunk.indexOf(NEWLINE, start)) {
      this.hold(chunk.subarray(start, end));
      this.endLine();
      start = end + 1;
    }
    this.hold(chunk.subarray(start));
  }

  /** The file ended: its last line needs no newline. */
  end(): void {
    if (this.heldBytes > 0) this.endLine();
  }

  private hold(bytes: Uint8Array): void {
    const before = this.heldBytes;
    this.heldBytes += bytes.byteLength;
    if (this.heldBytes <= MAX_LINE_BYTES) {
      // A copy: the caller may reuse the chunk (and a Node Buffer's `slice` is a view).
      if (bytes.byteLength > 0) this.held.push(new Uint8Array(bytes));
    } else if (before <= MAX_LINE_BYTES) {
      // Refused as soon as it is too long, so nothing more is stored; its bytes are not kept.
      this.held = [];
      this.refuse({
        line: this.lines + 1,
        message: `longer than ${MAX_LINE_BYTES} bytes, the most one example may take (what a group request carries)`,
      });
    }
  }

  private endLine(): void {
    const line = ++this.lines;
    const bytes = this.heldBytes;
    const pieces = this.held;
    this.held = [];
    this.heldBytes = 0;
    if (bytes > MAX_LINE_BYTES) return;
    let text: string;
    try {
      text = this.utf8.decode(concat(pieces, bytes));
    } catch {
      this.refuse({ line, message: "not valid UTF-8" });
      return;
    }
    const read = readDatasetLine(text, line, this.seen);
    if (read.kind === "problem") this.refuse(read.problem);
    else if (read.kind === "example" && ++this.examples > MAX_DATASET_EXAMPLES)
      this.tooManyExamples = true;
  }

  private refuse(problem: LineProblem): void {
    if (this.problems.length < MAX_LISTED_PROBLEMS) this.problems.push(problem);
  }
}

function concat(pieces: readonly Uint8Array[], bytes: number): Uint8Array {
  if (pieces.length === 1) return pieces[0] as Uint8Array;
  const whole = new Uint8Array(bytes);
  let at = 0;
  for (const piece of pieces) {
    whole.set(piece, at);
    at += piece.byteLength;
  }
  return whole;
}
