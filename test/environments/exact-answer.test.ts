import { describe, expect, it } from "vitest";
import { ExactAnswer, extractAnswer, normaliseAnswer } from "../../src/environments/exact-answer";
import { runEpisode, type TaskExample } from "../../src/sdk";

const env = new ExactAnswer();
const example: TaskExample = { id: "e", input: "What is 17 * 23?", output: "391" };

describe("exact-answer", () => {
  it("is a one-turn episode scored by normalised exact match", async () => {
    const right = await runEpisode(env, example, { policy: () => "It is <answer> 391. </answer>" });
    expect(right.turns).toHaveLength(1);
    expect(await env.scoreEpisode(example, right)).toMatchObject({ score: 1, threshold: 1 });
    const wrong = await runEpisode(env, example, { policy: () => "<answer>392</answer>" });
    expect(await env.scoreEpisode(example, wrong)).toMatchObject({ score: 0 });
  });

  it("normalises case, spaces, quotes, trailing punctuation and number formats", () => {
    expect(normaliseAnswer('  "The  Answer." ')).toBe("the answer");
    expect(normaliseAnswer("1,000.0")).toBe("1000");
    expect(normaliseAnswer("+12")).toBe("12");
    expect(normaliseAnswer("0.750")).toBe("0.75");
    expect(normaliseAnswer("Ｐａｒｉｓ")).toBe("paris");
  });

  it("takes the last <answer> block, or the whole reply without one", () => {
    expect(extractAnswer("<answer>1</answer> wait <answer>2</answer>")).toBe("2");
    expect(extractAnswer("Paris")).toBe("Paris");
  });

  it("accepts aliases from metadata", async () => {
    const hexagon = {
      id: "h",
      input: "Sides of a hexagon?",
      output: "6",
      metadata: { aliases: ["six"] },
    };
    expect((await env.scoreResponse(hexagon, "<answer>Six</answer>")).score).toBe(1);
  });

  it("uses the prompt's answer format for its SFT target", async () => {
    expect(await env.sftCompletion(example)).toEqual([
      { role: "assistant", content: "<answer>391</answer>" },
    ]);
  });
});
