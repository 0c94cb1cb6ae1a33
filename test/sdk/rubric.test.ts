// Rubrics and the judge contract, without a host: a rubric's score is the weighted sum of its
// components (a weight-0 metric recorded, not rewarded); a reward whose score is not that sum is
// refused; a judged component asks the context's judge; a judge that fails fails only its own
// episode (`judge_error`), and each episode is asked once; per-turn rewards ride along.
import { describe, expect, it } from "vitest";
import {
  assignGroupCredit,
  type EnvironmentEpisode,
  type Judge,
  JudgeError,
  type JudgeRequest,
  judgedComponent,
  type RewardResultInput,
  RewardResultSchema,
  Rubric,
  runEpisode,
  type ScoreContext,
  scoreGroup,
  type TaskExample,
} from "../../src/sdk";
import { example, ScriptedEnv } from "./fixtures";

const rubric = new Rubric(
  [
    { name: "right", weight: 1, value: (_x, e) => (e.responseText.endsWith("ok") ? 1 : 0) },
    { name: "short", weight: 0.5, value: (_x, e) => (e.responseText.length < 5 ? 1 : 0) },
    { name: "chars", weight: 0, value: (_x, e) => e.responseText.length },
  ],
  { threshold: 1 },
);

async function episode(reply: string): Promise<EnvironmentEpisode> {
  const env = new ScriptedEnv();
  env.turns = 1;
  return runEpisode(env, example, { policy: () => reply });
}

/** A judge that answers from a script, and remembers what it was asked. */
function scriptedJudge(answer: (request: JudgeRequest) => number | Error): Judge & {
  asked: JudgeRequest[];
} {
  const asked: JudgeRequest[] = [];
  return {
    asked,
    async grade(request) {
      asked.push(request);
      const value = answer(request);
      if (value instanceof Error) throw value;
      return { score: value, reason: "scripted" };
    },
  };
}

describe("a rubric", () => {
  it("scores the weighted sum of its components; a weight-0 metric is recorded, not rewarded", async () => {
    const long = await rubric.score(example, await episode("this is ok"));
    expect(long).toEqual({
      score: 1,
      threshold: 1,
      components: [
        { name: "right", value: 1, weight: 1 },
        { name: "short", value: 0, weight: 0.5 },
        { name: "chars", value: 10, weight: 0 },
      ],
    });
    const short = await rubric.score(example, await episode("ok"));
    expect(short.score).toBe(1.5);
  });

  it("is refused when its score is not the weighted sum, or a name repeats", () => {
    const components = [{ name: "a", value: 1, weight: 2 }];
    expect(RewardResultSchema.safeParse({ score: 2, components }).success).toBe(true);
    const off = RewardResultSchema.safeParse({ score: 1.5, components });
    expect(off.error?.issues[0]?.message).toBe("1.5 is not the weighted sum of its components (2)");
    const twice = RewardResultSchema.safeParse({
      score: 2,
      components: [...components, ...components],
    });
    expect(twice.error?.issues[0]?.message).toBe("component names must be distinct");
    expect(() => new Rubric([{ name: "a b", weight: 1, value: () => 1 }])).toThrow(/letters/);
  });

  it("asks the episode's judge for a judged component, and one judge failure fails only its episode", async () => {
    class Judged extends ScriptedEnv {
      private readonly judgedRubric = new Rubric([
        judgedComponent({
          name: "quality",
          weight: 1,
          messages: (_x: TaskExample, e: EnvironmentEpisode) => [
            { role: "user", content: e.responseText },
          ],
        }),
      ]);
      override scoreEpisode(
        x: TaskExample,
        e: EnvironmentEpisode,
        context?: ScoreContext,
      ): Promise<RewardResultInput> {
        return this.judgedRubric.score(x, e, context);
      }
    }
    const judge = scriptedJudge((r) =>
      r.messages[0]?.content === "bad" ? new JudgeError("the judge gave up") : 0.75,
    );
    const replies = ["good", "bad", "fine"];
    const outcomes = await scoreGroup(
      new Judged(),
      example,
      await Promise.all(replies.map(episode)),
      replies.map(() => ({ judge })),
    );
    expect(outcomes).toEqual([
      expect.objectContaining({ ok: true, reward: expect.objectContaining({ score: 0.75 }) }),
      {
        ok: false,
        by: "judge",
        error: "scoreEpisode: the judge gave up",
      },
      expect.objectContaining({ ok: true }),
    ]);
    // Graded episode by episode from the start: no episode was asked twice.
    expect(judge.asked.map((r) => r.messages[0]?.content)).toEqual(replies);
    expect(judge.asked.every((r) => r.component === "quality")).toBe(true);
  });

  it("without a judge, a judged component fails as judge_error", async () => {
    const lone = new Rubric([
      judgedComponent({ name: "q", weight: 1, messages: () => [{ role: "user", content: "?" }] }),
    ]);
    await expect(lone.score(example, await episode("x"))).rejects.toBeInstanceOf(JudgeError);
  });

  it("keeps per-turn credit working: per_turn_rewards ride beside the components", async () => {
    const graded = await Promise.all(
      ["ok", "no"].map(async (reply) => ({
        ...(await rubric.score(example, await episode(reply))),
        metadata: { per_turn_rewards: [reply === "ok" ? 1 : 0] },
      })),
    );
    const parsed = graded.map((g) => RewardResultSchema.parse(g));
    const credit = assignGroupCredit(
      parsed.map((r, i) => ({
        id: `e${i}`,
        score: r.score,
        perTurnRewards: r.metadata.per_turn_rewards,
        sampledTurns: 1,
      })),
      { creditAssignment: "per_turn", advantage: "mean" },
    );
    expect(credit.creditAssignment).toBe("per_turn");
    expect(credit.perTurnAdvantages).toEqual([[0.5], [-0.5]]);
  });
});
