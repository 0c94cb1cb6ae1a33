import { describe, expect, it } from "vitest";
import { MentalMath, parseAnswer } from "../../src/environments/mental-math";
import { exampleProblems, runEpisode, sampledTurns, type TaskExample } from "../../src/sdk";

const env = new MentalMath();
const example: TaskExample = {
  id: "m",
  input: "A quick drill of sums.",
  metadata: {
    questions: [
      [3, 4],
      [9, 9],
      [0, 5],
    ],
  },
};

describe("mental-math", () => {
  it("asks one sum a turn, marks each, and scores the share answered right", async () => {
    const answers = [
      "<answer>7</answer>",
      "The result is <answer>17</answer>",
      "<answer>5</answer>",
    ];
    const episode = await runEpisode(env, example, {
      policy: (_m, turn) => answers[turn.index] ?? "",
    });
    expect(sampledTurns(episode)).toHaveLength(3);
    const replies = episode.messages.filter((m) => m.role === "user").map((m) => m.content);
    expect(replies[0]).toMatch(/What is 3 \+ 4\?$/);
    expect(replies[1]).toBe("Correct.\nWhat is 9 + 9?");
    expect(replies[2]).toBe("Wrong: 9 + 9 = 18.\nWhat is 0 + 5?");
    expect(replies[3]).toBe("Correct.");
    expect(await env.scoreEpisode(example, episode)).toEqual({
      score: 2 / 3,
      threshold: 1,
      metadata: { per_turn_rewards: [1, 0, 1], right: 2 },
    });
  });

  it("reads the last <answer> block", () => {
    expect(parseAnswer("<answer>1</answer> no, <answer> 12 </answer>")).toBe(12);
    expect(parseAnswer("twelve")).toBeNull();
  });

  it("has a gold transcript that gets everything right", async () => {
    const gold = await env.sftCompletion(example);
    expect(gold.filter((m) => m.role === "assistant").map((m) => m.content)).toEqual([
      "<answer>7</answer>",
      "<answer>18</answer>",
      "<answer>5</answer>",
    ]);
  });

  it("refuses a drill that repeats an answer, which the context would give away", () => {
    const repeated = {
      ...example,
      metadata: {
        questions: [
          [2, 3],
          [4, 1],
          [6, 6],
        ],
      },
    };
    expect(exampleProblems(env, repeated)).toEqual([
      { path: "metadata.questions", message: expect.stringMatching(/must differ/) },
    ]);
    expect(exampleProblems(env, example)).toEqual([]);
  });
});
