import { describe, expect, it } from "vitest";
import { z } from "zod";
import { ExactAnswer } from "../../src/environments/exact-answer";
import { GuessNumber } from "../../src/environments/guess-number";
import {
  CHECKS,
  checkEnvironment,
  ExampleRejectedError,
  exampleProblems,
  openEpisode,
  runEpisode,
  type TaskExample,
} from "../../src/sdk";
import { ScriptedEnv } from "./fixtures";

/** Counts its openings: a refused example must not reach `startEpisode`. */
class NeedsAColour extends ScriptedEnv {
  override readonly exampleSchema = z.object({
    metadata: z.object({ colour: z.enum(["red", "blue"]), shades: z.array(z.string()).min(1) }),
  });
  opened = 0;
  override startEpisode() {
    this.opened++;
    return super.startEpisode();
  }
}

const example = (metadata?: Record<string, unknown>): TaskExample => ({
  id: "c-1",
  input: "paint",
  ...(metadata === undefined ? {} : { metadata }),
});

describe("an environment's example schema", () => {
  it("names every field at fault by its path in the row, and reads no metadata as {}", () => {
    const env = new NeedsAColour();
    const expected = [
      { path: "metadata.colour", message: expect.stringMatching(/expected one of/) },
      { path: "metadata.shades", message: expect.stringMatching(/expected array/) },
    ];
    expect(exampleProblems(env, example())).toEqual(expected);
    expect(exampleProblems(env, example({}))).toEqual(expected);
    expect(exampleProblems(env, example({ colour: "red", shades: [""], extra: 1 }))).toEqual([]);
    expect(exampleProblems(env, example({ colour: "red", shades: [7] }))).toEqual([
      { path: "metadata.shades.0", message: expect.stringMatching(/expected string/) },
    ]);
  });

  it("is checked when the episode opens, before startEpisode runs", async () => {
    const env = new NeedsAColour();
    const refused = openEpisode(env, example({ colour: "green", shades: ["x"] }), "");
    await expect(refused).rejects.toThrow(ExampleRejectedError);
    await expect(refused).rejects.toThrow(/^metadata\.colour: /);
    await expect(runEpisode(env, example(), { policy: () => "hi" })).rejects.toThrow(
      ExampleRejectedError,
    );
    expect(env.opened).toBe(0);
  });

  it("checks nothing where none is declared", async () => {
    expect(exampleProblems(new ScriptedEnv(), example())).toEqual([]);
    await expect(openEpisode(new ScriptedEnv(), example(), "")).resolves.toHaveLength(1);
  });

  it("asks exact-answer for the output it scores against", () => {
    expect(exampleProblems(new ExactAnswer(), { id: "q", input: "2 + 2?" })).toEqual([
      { path: "output", message: "required: the answer to match, a string or a number" },
    ]);
    expect(exampleProblems(new ExactAnswer(), { id: "q", input: "2 + 2?", output: 4 })).toEqual([]);
  });

  it("makes env check report the rows outside it as dataset problems, and check the rest", async () => {
    const report = await checkEnvironment(new GuessNumber(), [
      { id: "good", input: "find it", metadata: { secret: 37 } },
      { id: "bad", input: "find it", metadata: { secret: 0 } },
      { id: "none", input: "find it" },
    ]);
    const dataset = report.checks.find((c) => c.name === CHECKS.dataset);
    expect(dataset?.failures).toEqual([
      expect.stringMatching(/^example bad: metadata\.secret: /),
      expect.stringMatching(/^example none: metadata\.secret: /),
    ]);
    expect(report.checks.filter((c) => !c.ok).map((c) => c.name)).toEqual([CHECKS.dataset]);
    const gold = report.checks.find((c) => c.name === CHECKS.goldReward);
    expect(gold?.detail).toBe("mean gold score 1.00, 1/1 successful");
  });
});
