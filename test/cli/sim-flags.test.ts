// `edgeroll sim`'s flags, as the simulator's options.
import { describe, expect, it } from "vitest";
import { type SimFlags, simOptions } from "../../src/cli/sim";

const DEFAULTS: SimFlags = {
  port: "8000",
  host: "127.0.0.1",
  ttftMs: "0",
  msPerToken: "0",
  msPerPromptToken: "0",
  errorRate: "0",
  errorStatuses: "500,503,429",
  hangRate: "0",
  malformedRate: "0",
  cutRate: "0",
  resetRate: "0",
  template: "chatml",
  tokenIds: true,
  hosts: "1",
};

describe("edgeroll sim's flags", () => {
  it("--tokens-per-s sets the token rate, --long every completion's length", () => {
    const options = simOptions({ ...DEFAULTS, tokensPerS: "50", long: "2000" });
    expect(options.latency?.msPerToken).toBe(20);
    expect(options.longTokens).toBe(2000);
    expect(simOptions(DEFAULTS).longTokens).toBeUndefined();
  });

  it("refuses two token rates, and a rate of zero", () => {
    expect(() => simOptions({ ...DEFAULTS, msPerToken: "5", tokensPerS: "50" })).toThrow(
      /--tokens-per-s and --ms-per-token both set the token rate/,
    );
    expect(() => simOptions({ ...DEFAULTS, tokensPerS: "0" })).toThrow(
      /--tokens-per-s must be more than 0/,
    );
    expect(() => simOptions({ ...DEFAULTS, long: "lots" })).toThrow(/--long must be a number/);
  });
});
