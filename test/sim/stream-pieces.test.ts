// How a stream splits a choice: two ids a chunk, the choice's own text spread over them.
import { describe, expect, it } from "vitest";
import { tokenize } from "../../src/sim/chat-template";
import { streamPieces } from "../../src/sim/stream-pieces";

describe("streamPieces", () => {
  it("sends a character whose bytes two tokens share whole, in the chunk that completes it", () => {
    const text = "naïve 🦜🦜 über 日本語";
    const ids = tokenize(text);
    const pieces = streamPieces({ ids, text }, ids.length);
    expect(pieces.map((p) => [p.from, p.to])).toEqual(
      Array.from({ length: Math.ceil(ids.length / 2) }, (_, i) => [
        2 * i,
        Math.min(2 * i + 2, ids.length),
      ]),
    );
    expect(pieces.map((p) => p.text).join("")).toBe(text);
    expect(pieces.some((p) => p.text.includes("\uFFFD"))).toBe(false);
  });

  it("sends no more of the text than it has, whatever the ids spell past it", () => {
    const ids = tokenize("Narrowing it down: <guess>");
    const pieces = streamPieces({ ids, text: "Narrowing it down: " }, ids.length);
    expect(pieces.map((p) => p.text).join("")).toBe("Narrowing it down: ");
    expect(pieces.at(-1)?.to).toBe(ids.length);
  });
});
