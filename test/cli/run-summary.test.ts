// What `edgeroll run` reports: its default run id, its rate, and the notes under its summary.
import { describe, expect, it } from "vitest";
import { summaryTable } from "../../src/cli/progress";
import { defaultRunId, readableDetail, runNotes } from "../../src/cli/run";
import { emptyProgress, episodesPerSecond } from "../../src/cli/run-job";

describe("edgeroll run's default run id", () => {
  it("is the dataset's name, without repeating the environment's", () => {
    expect(defaultRunId("guess-number", "datasets/guess-number.jsonl")).toBe("guess-number");
    expect(defaultRunId("guess-number", "datasets/guess-number-hard.jsonl")).toBe(
      "guess-number-hard",
    );
    expect(defaultRunId("guess-number", "data/week1.jsonl")).toBe("guess-number-week1");
  });
});

describe("edgeroll run's rate and notes", () => {
  it("counts only this run's episodes per second when it resumed earlier groups", () => {
    const progress = { ...emptyProgress(4), startedAt: 0, done: 4, resumed: 3 };
    progress.episodes = 32;
    progress.resumedEpisodes = 24;
    expect(episodesPerSecond(progress, 2000)).toBe(4); // 8 new episodes in 2 s, not 32
    expect(summaryTable("run x", progress)).toMatch(/this run's groups only/);
  });

  it("says when groups landed uniform, and that leases skip them", () => {
    const progress = { ...emptyProgress(3), done: 3, uniformGroups: 2, scored: 24, rewardSum: 12 };
    const notes = runNotes(progress, "guess-number", "sim");
    expect(notes).toHaveLength(1);
    expect(notes[0]).toMatch(/^2 of 3 landed groups are uniform/);
    expect(notes[0]).toMatch(/leases skip them by default \(skip_uniform_groups/);
    expect(summaryTable("run x", progress)).toMatch(/uniform groups +│ 2/);
  });

  it("says when the simulator cannot play the environment, and how to fix it", () => {
    const progress = { ...emptyProgress(2), done: 2, uniformGroups: 2, scored: 16, rewardSum: 0 };
    const notes = runNotes(progress, "my-env", "sim");
    expect(notes[1]).toMatch(/simulator, which plays only guess-number, tool-agent, exact-answer/);
    expect(notes[1]).toMatch(/Simulating your own environment/);
    expect(notes[1]).toMatch(/--inference-url/);
    // Not for a real model, nor for an environment the simulator plays, nor when it scores.
    expect(runNotes(progress, "my-env", "Qwen/Qwen3-8B")).toHaveLength(1);
    expect(runNotes(progress, "guess-number", "sim")).toHaveLength(1);
    expect(runNotes({ ...progress, rewardSum: 4 }, "my-env", "sim+latency:5")).toHaveLength(1);
  });

  it("says what the failures said, one of each reason: a host's refusal names its fix", () => {
    const progress = {
      ...emptyProgress(1),
      done: 1,
      failedGroups: 1,
      episodes: 2,
      failedEpisodes: 2,
      failures: { inference_rejected: 2 },
      failureDetails: {
        inference_rejected:
          "inference host answered 404: The model `Qwen/Qwen3-8B` does not exist. edgeroll's simulator plays `sim` (the CLI's default --model) and a judge, `judge`",
      },
    };
    const [note] = runNotes(progress, "guess-number", "Qwen/Qwen3-8B");
    expect(note).toMatch(
      /^Every episode failed\. What the failures said, one of each: inference_rejected: inference host answered 404: The model `Qwen\/Qwen3-8B` does not exist/,
    );
  });

  it("shows a host's JSON error body by its message", () => {
    const body = JSON.stringify({
      error: { message: "The model `x` does not exist.", type: "NotFoundError" },
    });
    expect(readableDetail(`inference host answered 404: ${body}`)).toBe(
      "inference host answered 404: The model `x` does not exist.",
    );
    expect(readableDetail("inference host answered 500: not json")).toBe(
      "inference host answered 500: not json",
    );
  });
});
