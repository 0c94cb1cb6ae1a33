// Rewards from rubrics and judges (issue 33): a rubric's components land in `reward_components`
// with the score their weighted sum, a weight-0 metric recorded and not rewarded, from a built-in
// and from a remote environment; a judge (the simulator's `judge` model, over HTTP) that fails
// once is retried and the episode scored; one that never grades ends the episode `judge_error`
// with no score (never 0), and every call is in `judgements` with its attempt.
import { exports } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { EdgerollClient } from "../../src/client/edgeroll-client";
import { END } from "../../src/rollout/outcomes";
import {
  BASE,
  d1,
  getGroup,
  judgedExample,
  judgedGroup,
  leaseBatch,
  post,
  startGroup,
  TOKENS,
  waitForGroup,
} from "./helpers";

interface EpisodeRow {
  id: string;
  status: string;
  end_reason: string;
  played_end_reason: string | null;
  failure_detail: string | null;
  score: number | null;
  response_text: string;
}

interface ComponentRow {
  episode_id: string;
  name: string;
  value: number;
  weight: number;
}

interface JudgementRow {
  episode_id: string;
  seq: number;
  component: string;
  model: string;
  value: number | null;
  error: string | null;
  attempt: number;
  latency_ms: number;
}

const episodesOf = (group: string) =>
  d1<EpisodeRow>("SELECT * FROM episodes WHERE group_id = ? ORDER BY idx", group);
const componentsOf = (group: string) =>
  d1<ComponentRow>(
    "SELECT episode_id, name, value, weight FROM reward_components WHERE group_id = ? ORDER BY episode_id, name",
    group,
  );
const judgementsOf = (group: string) =>
  d1<JudgementRow>("SELECT * FROM judgements WHERE group_id = ? ORDER BY episode_id, seq", group);

async function rubricGroup(env: string, run: string): Promise<string> {
  return startGroup({
    env,
    example: { id: `${run}-q`, input: "What is 17 * 23?", output: "391" },
    group_size: 8,
    run_id: run,
    // Hot enough that some answers slip (with probability 0.15 x the temperature).
    sampling: { model: "sim", temperature: 2, seed: 7 },
  });
}

/** Each episode's score against Σ weight × value of its components, and its metric's value. */
async function expectWeightedSums(group: string) {
  const episodes = await episodesOf(group);
  const components = await componentsOf(group);
  expect(components).toHaveLength(episodes.length * 3);
  for (const episode of episodes) {
    const own = components.filter((c) => c.episode_id === episode.id);
    expect(Object.fromEntries(own.map((c) => [c.name, c.weight]))).toEqual({
      correct: 1,
      concise: 0.5,
      chars: 0,
    });
    const sum = own.reduce((total, c) => total + c.weight * c.value, 0);
    expect(episode.score).toBeCloseTo(sum, 12);
    // The metric is recorded (the reply's length, far from 0) and takes no part in the score.
    const chars = own.find((c) => c.name === "chars");
    expect(chars?.value).toBe(episode.response_text.length);
    const rewarded = own.filter((c) => c.name !== "chars");
    expect(episode.score).toBeCloseTo(
      rewarded.reduce((total, c) => total + c.weight * c.value, 0),
      12,
    );
  }
  return { episodes, components };
}

describe("rubrics", () => {
  it("land every component with its weight, the score their weighted sum, a weight-0 metric recorded and not rewarded", async () => {
    const group = await rubricGroup("rubric-quiz", "rubric-built-in");
    await waitForGroup(group);
    const { episodes } = await expectWeightedSums(group);
    // Some answers slipped: the scores differ, and the components say why.
    expect(new Set(episodes.map((e) => e.score)).size).toBeGreaterThan(1);
    const stats = await d1<{ name: string; weight: number; episodes: number; mean_value: number }>(
      "SELECT name, weight, episodes, mean_value FROM reward_component_stats WHERE run_id = ? ORDER BY name",
      "rubric-built-in",
    );
    const meanChars = episodes.reduce((t, e) => t + e.response_text.length, 0) / episodes.length;
    expect(stats).toEqual([
      { name: "chars", weight: 0, episodes: 8, mean_value: meanChars },
      expect.objectContaining({ name: "concise", weight: 0.5, episodes: 8 }),
      expect.objectContaining({ name: "correct", weight: 1, episodes: 8 }),
    ]);
  });

  it("land a remote environment's components, as its /score answered them", async () => {
    const group = await rubricGroup("rubric-quiz-remote", "rubric-remote");
    await waitForGroup(group);
    await expectWeightedSums(group);
  });
});

describe("judges", () => {
  it("grade an episode, each call recorded with its attempt", async () => {
    const group = await judgedGroup(
      "judge-ok",
      judgedExample("judge-ok-1", "What is 6 * 7?", "42", "judge"),
      2,
    );
    const episodes = await episodesOf(group);
    expect(episodes.map((e) => [e.status, e.score])).toEqual([
      ["completed", 1],
      ["completed", 1],
    ]);
    const judgements = await judgementsOf(group);
    expect(judgements.map((j) => [j.component, j.model, j.attempt, j.value, j.error])).toEqual([
      ["correctness", "judge", 1, 1, null],
      ["correctness", "judge", 1, 1, null],
    ]);
    const components = await componentsOf(group);
    expect(components.map((c) => [c.name, c.value, c.weight])).toEqual([
      ["correctness", 1, 1],
      ["length", 1, 0],
      ["correctness", 1, 1],
      ["length", 1, 0],
    ]);
  });

  it("retry a judge that fails once, and the episode is scored", async () => {
    const group = await judgedGroup(
      "judge-once",
      judgedExample("judge-once-1", "What is 5 * 9?", "45", "judge+fail:500:1"),
    );
    const [episode] = await episodesOf(group);
    expect(episode).toMatchObject({ status: "completed", end_reason: END.done, score: 1 });
    const judgements = await judgementsOf(group);
    expect(judgements.map((j) => [j.attempt, j.value, j.error])).toEqual([
      [1, null, "HTTP 500 from the judge host"],
      [2, 1, null],
    ]);
  });

  for (const [name, model, error, run] of [
    ["answers 500 every time", "judge+fail:500", /^HTTP 500 from the judge host$/, "judge-500"],
    [
      "answers prose, not a verdict",
      "judge+garbage",
      /^unparsable verdict: not one JSON object/,
      "judge-garbage",
    ],
  ] as const) {
    it(`that ${name} ends the episode judge_error, never scored, every attempt recorded`, async () => {
      const group = await judgedGroup(
        run,
        judgedExample(`${run}-1`, "What is 8 * 3?", "24", model),
      );
      const [episode] = await episodesOf(group);
      expect(episode).toMatchObject({
        status: "failed",
        end_reason: END.judge_error,
        played_end_reason: END.done,
        score: null,
      });
      expect(episode?.failure_detail).toMatch(
        /judge judge.* gave component "correctness" no grade in 3 calls/,
      );
      const judgements = await judgementsOf(group);
      expect(judgements.map((j) => j.attempt)).toEqual([1, 2, 3]);
      for (const j of judgements) {
        expect(j.value).toBeNull();
        expect(j.error).toMatch(error);
      }
      expect(await componentsOf(group)).toEqual([]);
    });
  }

  it("that hangs is given up inside the score call's deadline: judge_error, not score_error", async () => {
    const group = await judgedGroup(
      "judge-hang",
      judgedExample("judge-hang-1", "What is 9 * 4?", "36", "judge+hang"),
    );
    const [episode] = await episodesOf(group);
    expect(episode).toMatchObject({ status: "failed", end_reason: END.judge_error, score: null });
    const judgements = await judgementsOf(group);
    expect(judgements.length).toBeGreaterThanOrEqual(1);
    expect(judgements[0]?.error).toMatch(/^timed out after/);
  });

  it("with no model configured ends the episode judge_error, saying so", async () => {
    const group = await judgedGroup(
      "judge-none",
      judgedExample("judge-none-1", "What is 7 * 7?", "49"),
    );
    const [episode] = await episodesOf(group);
    expect(episode).toMatchObject({ status: "failed", end_reason: END.judge_error, score: null });
    expect(episode?.failure_detail).toMatch(/no judge model \(set JUDGE_MODEL/);
    expect(await judgementsOf(group)).toEqual([]);
  });
});

describe("re-scoring", () => {
  it("grades a judge_error episode once the judge is back, its played end restored, the group leasable", async () => {
    // The judge fails the first 3 tries of this request: the grading's every attempt.
    const group = await judgedGroup(
      "rescore-back",
      judgedExample("rescore-back-1", "What is 12 * 4?", "48", "judge+fail:500:3"),
    );
    expect((await getGroup(group)).status).toBe("failed");
    const refused = await leaseBatch({ run_id: "rescore-back", max_groups: 5 });
    expect(refused.body.groups).toEqual([]);
    // As a trainer's client asks it.
    const trainer = new EdgerollClient({
      baseUrl: BASE,
      token: TOKENS.trainer,
      fetch: (input, init) => exports.default.fetch(input, init),
    });
    const rescored = await trainer.rescore(group);
    expect(rescored).toMatchObject({
      group_id: group,
      rescored: 1,
      judge_errors: 0,
      group: { status: "landed" },
    });
    const [episode] = await episodesOf(group);
    expect(episode).toMatchObject({
      status: "completed",
      end_reason: END.done,
      played_end_reason: null,
      failure_detail: null,
      score: 1,
    });
    const judgements = await judgementsOf(group);
    expect(judgements.map((j) => [j.seq, j.attempt, j.value])).toEqual([
      [0, 1, null],
      [1, 2, null],
      [2, 3, null],
      [3, 1, 1],
    ]);
    expect((await componentsOf(group)).map((c) => [c.name, c.value])).toEqual([
      ["correctness", 1],
      ["length", 1],
    ]);
    expect(await getGroup(group)).toMatchObject({ status: "landed", score_mean: 1 });
    const leased = await leaseBatch({
      run_id: "rescore-back",
      max_groups: 5,
      skip_uniform_groups: false,
    });
    expect(leased.body.groups.map((g) => g.group_id)).toEqual([group]);
  });

  it("with all: true grades every episode again, its components replaced, not doubled", async () => {
    const group = await rubricGroup("rubric-quiz", "rescore-all");
    await waitForGroup(group);
    const before = await componentsOf(group);
    const trainer = { authorization: `Bearer ${TOKENS.trainer}` };
    const nothing = await post<{ rescored: number }>(`/v1/groups/${group}/rescore`, {}, trainer);
    expect(nothing.body).toMatchObject({ rescored: 0 });
    const all = await post<{ rescored: number }>(
      `/v1/groups/${group}/rescore`,
      { all: true },
      trainer,
    );
    expect(all.body).toMatchObject({ rescored: 8, judge_errors: 0 });
    expect(await componentsOf(group)).toEqual(before);
    await expectWeightedSums(group);
  });

  it("refuses what it cannot re-score, naming why", async () => {
    const trainer = { authorization: `Bearer ${TOKENS.trainer}` };
    const missing = await post("/v1/groups/g_nosuchgroup0000000000000/rescore", {}, trainer);
    expect(missing.status).toBe(404);
    const group = await rubricGroup("rubric-quiz", "rescore-refused");
    await waitForGroup(group);
    const bad = await post(`/v1/groups/${group}/rescore`, { all: "yes" }, trainer);
    expect(bad.status).toBe(400);
    const reader = await post(
      `/v1/groups/${group}/rescore`,
      {},
      { authorization: `Bearer ${TOKENS.reader}` },
    );
    expect(reader.status).toBe(403);
    const leased = await leaseBatch({
      run_id: "rescore-refused",
      max_groups: 5,
      skip_uniform_groups: false,
    });
    expect(leased.body.groups).toHaveLength(1);
    const out = await post(`/v1/groups/${group}/rescore`, { all: true }, trainer);
    expect(out.status).toBe(409);
    expect(out.body).toMatchObject({ error: { code: "group_leased" } });
  });
});
