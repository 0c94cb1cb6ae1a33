// `edgeroll eval`'s own flag and table (src/cli/eval.ts): --k names powers of two up to the group
// size, as the eval_results view computes them, and the table shows one line per k.
import { describe, expect, it } from "vitest";
import { evalTable, parseKs } from "../../src/cli/eval";

describe("edgeroll eval", () => {
  it("takes --k as powers of two up to the group size, and refuses anything else by name", () => {
    expect(parseKs(undefined, 8)).toBeUndefined();
    expect(parseKs("1, 4,8", 8)).toEqual([1, 4, 8]);
    for (const bad of ["3", "16", "0", "1,x", ""])
      expect(() => parseKs(bad, 8)).toThrow(
        `--k takes powers of two from 1 to the group size (8), comma-separated; got "${bad}"`,
      );
  });

  it("prints a line per k, with a dash where no answer gave a majority", () => {
    const row = {
      run_id: "r",
      env: "e",
      env_version: "1",
      policy_version: 2,
      examples: 4,
      episodes: 32,
      avg_reward: 0.5,
      avg_success: 0.5,
      unmeasured_episodes: 0,
    };
    const table = evalTable([
      { ...row, k: 1, pass_at_k: 0.5, maj_at_k: null },
      { ...row, k: 8, pass_at_k: 0.96875, maj_at_k: 0.75 },
    ]);
    const lines = table.split("\n").filter((l) => /^│ [18] /.test(l));
    expect(
      lines.map((l) =>
        l
          .split("│")
          .map((c) => c.trim())
          .slice(1, 6),
      ),
    ).toEqual([
      ["1", "4", "32", "0.500", "-"],
      ["8", "4", "32", "0.969", "0.750"],
    ]);
  });
});
