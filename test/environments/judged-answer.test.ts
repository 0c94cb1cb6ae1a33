import { describe, expect, it } from "vitest";
import { JudgedAnswer } from "../../src/environments/judged-answer";
import {
  checkExample,
  ExampleRejectedError,
  type Judge,
  JudgeError,
  type JudgeRequest,
  runEpisode,
  type TaskExample,
} from "../../src/sdk";

const env = new JudgedAnswer();
const example: TaskExample = { id: "j", input: "What is 6 * 7?", output: "42" };

/** Grades 1 when the answer to grade is the reference; remembers what it was asked. */
function judge(): Judge & { asked: JudgeRequest[] } {
  const asked: JudgeRequest[] = [];
  return {
    asked,
    async grade(request) {
      asked.push(request);
      const text = request.messages.map((m) => m.content).join("\n");
      const answer = /Answer to grade: (.*)/.exec(text)?.[1];
      return { score: answer === "42" ? 1 : 0, reason: "compared" };
    },
  };
}

describe("judged-answer", () => {
  it("asks the judge to compare the answer with the reference, for JSON, and scores its verdict", async () => {
    const grader = judge();
    const right = await runEpisode(env, example, { policy: () => "It is <answer>42</answer>" });
    expect(await env.scoreEpisode(example, right, { judge: grader })).toEqual({
      score: 1,
      threshold: 1,
      components: [
        { name: "correctness", value: 1, weight: 1 },
        { name: "length", value: 1, weight: 0 },
      ],
    });
    const [asked] = grader.asked;
    expect(asked?.component).toBe("correctness");
    expect(asked?.messages[0]?.content).toContain('{"score"');
    expect(asked?.messages[1]?.content).toBe(
      "Question: What is 6 * 7?\nReference answer: 42\nAnswer to grade: 42",
    );
    expect(asked?.model).toBeUndefined();
  });

  it("keeps length a metric: a long wrong answer scores 0 whatever its words", async () => {
    const wrong = await runEpisode(env, example, {
      policy: () => "<answer>forty three or so</answer>",
    });
    const graded = await env.scoreEpisode(example, wrong, { judge: judge() });
    expect(graded.score).toBe(0);
    expect(graded.components).toContainEqual({ name: "length", value: 4, weight: 0 });
  });

  it("asks the example's judge model when it names one, and fails with the judge", async () => {
    const grader = judge();
    const named = { ...example, metadata: { judge_model: "judge+fail:500" } };
    const episode = await runEpisode(env, named, { policy: () => "<answer>42</answer>" });
    await env.scoreEpisode(named, episode, { judge: grader });
    expect(grader.asked[0]?.model).toBe("judge+fail:500");
    await expect(env.scoreEpisode(example, episode)).rejects.toBeInstanceOf(JudgeError);
  });

  it("refuses an example without a reference", () => {
    expect(() => checkExample(env, { id: "x", input: "?" })).toThrow(ExampleRejectedError);
  });
});
