// The simulator's tokenizer: decoding is a function of its ids alone.
import { describe, expect, it } from "vitest";
import { detokenize, tokenize } from "../../src/sim/chat-template";

describe("detokenize", () => {
  it("decodes the same ids the same, whatever it decoded before (a character split or not)", () => {
    const parrot = tokenize("🦜");
    expect(parrot.length).toBeGreaterThan(1);
    const half = parrot.slice(0, 1);
    expect(detokenize(half)).toBe("\uFFFD");
    // A half character left behind once started the next decoding, which then read as whole.
    expect(detokenize(parrot.slice(1))).toBe(detokenize(parrot.slice(1)));
    expect(detokenize(half)).toBe("\uFFFD");
    expect(detokenize(tokenize("abc"))).toBe("abc");
    expect(detokenize(parrot)).toBe("🦜");
  });
});
