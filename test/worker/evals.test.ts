// Evaluation groups (issue 31): `kind: "eval"` names the policy version it measures, is never
// leased, is never cancelled as stale by a version bump, and lands where the `eval_results` view
// and GET /v1/runs/:id/evals compute pass@k, maj@k and the mean reward from its episodes.
import { beforeAll, describe, expect, it } from "vitest";
import type { EpisodeView, EvalResultRow, GroupView } from "../../src/client/edgeroll-client";
import { END } from "../../src/rollout/outcomes";
import {
  api,
  count,
  episodesOf,
  errorOf,
  type FieldProblems,
  getJson,
  guessExample,
  leaseBatch,
  postGroup,
  setPolicy,
  startGroup,
  untilGroup,
  waitForGroup,
} from "./helpers";

const QUESTIONS = [
  { id: "ev-1", input: "What is 17 * 23?", output: "391" },
  { id: "ev-2", input: "What is 144 / 12?", output: "12" },
  { id: "ev-3", input: "What is 1000 - 1?", output: "999" },
  { id: "ev-4", input: "What is 0.5 + 0.25?", output: "0.75" },
];

/** An eval group of exact-answer: at temperature 2 the simulator slips by one 30 % of the time. */
const evalGroup = (run: string, example: (typeof QUESTIONS)[number], seed: number) => ({
  env: "exact-answer",
  example,
  group_size: 8,
  run_id: run,
  kind: "eval" as const,
  policy_version: 3,
  sampling: { model: "sim", temperature: 2, seed },
});

/** C(n, k), exactly enough for n ≤ 8. */
function choose(n: number, k: number): number {
  if (k < 0 || k > n) return 0;
  let c = 1;
  for (let i = 0; i < k; i++) c = (c * (n - i)) / (i + 1);
  return c;
}

/** pass@k as Chen et al. (2021) define it: 1 − C(n − c, k) / C(n, k). */
const passAtK = (n: number, c: number, k: number) => 1 - choose(n - c, k) / choose(n, k);

/** The majority answer of the first k episodes (a tie goes to the one given first), scored. */
function majorityRight(answers: readonly string[], right: readonly boolean[], k: number): boolean {
  const votes = new Map<string, number>();
  for (const answer of answers.slice(0, k)) votes.set(answer, (votes.get(answer) ?? 0) + 1);
  let best = answers[0] as string;
  for (const [answer, n] of votes) if (n > (votes.get(best) ?? 0)) best = answer;
  return right[answers.indexOf(best)] === true;
}

const mean = (xs: readonly number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;

describe("an evaluation group", () => {
  it("is refused without the policy_version it measures, and nothing is stored", async () => {
    const before = await count("SELECT COUNT(*) AS n FROM groups WHERE run_id = 'ev-refused'");
    const { policy_version: _, ...body } = evalGroup("ev-refused", QUESTIONS[0] as never, 1);
    const response = await postGroup(body);
    expect(response.status).toBe(400);
    const error = await errorOf<FieldProblems>(response);
    expect(error.details).toEqual([
      {
        path: "policy_version",
        message: 'required with kind "eval": an evaluation measures one named policy version',
      },
    ]);
    expect(await count("SELECT COUNT(*) AS n FROM groups WHERE run_id = 'ev-refused'")).toBe(
      before,
    );
  });

  it("refuses a kind it does not know", async () => {
    const response = await postGroup({
      ...evalGroup("ev-refused", QUESTIONS[0] as never, 1),
      kind: "test",
    });
    expect(response.status).toBe(400);
    expect((await errorOf(response)).message).toContain("kind");
  });
});

describe("evaluation metrics", () => {
  const run = "ev-metrics";
  let groups: GroupView[];
  /** Each group's episodes, with their scores and answers. */
  let episodes: EpisodeView[][];
  let rows: EvalResultRow[];
  const successes = (es: readonly EpisodeView[]) => es.filter((e) => e.success === true).length;

  beforeAll(async () => {
    // A training group of the same run, which no metric may count.
    const train = await startGroup({ ...evalGroup(run, QUESTIONS[0] as never, 99), kind: "train" });
    const ids = await Promise.all(QUESTIONS.map((q, i) => startGroup(evalGroup(run, q, 11 + i))));
    groups = await Promise.all(ids.map((id) => waitForGroup(id)));
    episodes = await Promise.all(groups.map(episodesOf));
    await waitForGroup(train);
    rows = await getJson<EvalResultRow[]>(`/v1/runs/${run}/evals`);
  });

  it("lands its groups as any group, kind eval, every episode scored", () => {
    for (const group of groups) {
      expect(group).toMatchObject({ status: "landed", kind: "eval", policy_version: 3 });
      expect(group.episodes.every((e) => e.state === "completed" && e.score !== null)).toBe(true);
    }
    // Successes vary within some example: otherwise pass@k could not tell k apart.
    expect(episodes.map(successes).some((c) => c > 0 && c < 8)).toBe(true);
  });

  it("has pass@k equal to the unbiased estimator over the episodes' successes, k = 1, 2, 4, 8", () => {
    expect(rows.map((r) => r.k)).toEqual([1, 2, 4, 8]);
    for (const row of rows) {
      const expected = mean(episodes.map((es) => passAtK(8, successes(es), row.k)));
      expect(row.pass_at_k).toBeCloseTo(expected, 9);
      expect(row).toMatchObject({
        run_id: run,
        env: "exact-answer",
        policy_version: 3,
        examples: 4,
        episodes: 32,
        unmeasured_episodes: 0,
      });
    }
  });

  it("has the mean reward, and maj@k from the answers the environment exposes", () => {
    const reward = mean(episodes.map((es) => mean(es.map((e) => e.score ?? 0))));
    for (const row of rows) {
      expect(row.avg_reward).toBeCloseTo(reward, 9);
      const majority = mean(
        episodes.map((es) =>
          majorityRight(
            es.map((e) => String(e.reward_metadata?.answer)),
            es.map((e) => e.success === true),
            row.k,
          )
            ? 1
            : 0,
        ),
      );
      expect(row.maj_at_k).toBeCloseTo(majority, 9);
    }
  });

  it("are plotted on the dashboard by policy version; the training curve leaves them out", async () => {
    const page = await (await api(`/?run=${run}`)).text();
    expect(page).toContain('data-testid="eval-chart"');
    for (const name of ["pass@1", "pass@8", "maj@8"])
      expect(page).toContain(`${run} · exact-answer · ${name}`);
    // The run's training group alone is its mean reward by version: 8 episodes, not 40.
    expect(
      await count(
        "SELECT episodes AS n FROM reward_by_policy_version WHERE run_id = ?1 AND policy_version = 3",
        run,
      ),
    ).toBe(8);
  });

  it("are listed apart from training episodes: export takes training episodes alone", async () => {
    const listed = async (kind: string) =>
      (
        await getJson<{ episodes: { group_id: string }[] }>(
          `/v1/episodes?run_id=${run}&kind=${kind}&limit=500`,
        )
      ).episodes;
    const evalIds = new Set(groups.map((g) => g.group_id));
    const train = await listed("train");
    expect(train).toHaveLength(8);
    expect(train.some((e) => evalIds.has(e.group_id))).toBe(false);
    const evals = await listed("eval");
    expect(evals).toHaveLength(32);
    expect(evals.every((e) => evalIds.has(e.group_id))).toBe(true);
    const refused = await api(`/v1/episodes?run_id=${run}&kind=test`);
    expect(refused.status).toBe(400);
    expect((await errorOf(refused)).message).toContain("kind");
  });

  it("are answered 404 for a run nobody started", async () => {
    const response = await api("/v1/runs/ev-nobody/evals");
    expect(response.status).toBe(404);
    expect((await errorOf(response)).message).toContain('no run "ev-nobody"');
  });

  it("are never leased, whatever the lease asks", async () => {
    const leased = await leaseBatch({
      run_id: run,
      max_groups: 100,
      include_parked: true,
      skip_uniform_groups: false,
    });
    const served = leased.body.groups.map((g) => g.group_id);
    expect(served).toHaveLength(1);
    expect(served.some((id) => groups.some((g) => g.group_id === id))).toBe(false);
  });
});

describe("a version bump past max_lag", () => {
  const run = "ev-bump";
  let training: GroupView;
  let evaluation: GroupView;

  beforeAll(async () => {
    await setPolicy(run, { version: 0, max_lag: 1 });
    // The training group's second generation hangs: only the cancellation ends it.
    const trainId = await startGroup({
      env: "guess-number",
      example: guessExample("ev-bump-train", 40),
      group_size: 2,
      run_id: run,
      sampling: { model: "sim+hang:9@1", temperature: 0 },
    });
    const evalId = await startGroup({
      env: "guess-number",
      example: guessExample("ev-bump-eval", 40),
      group_size: 2,
      run_id: run,
      kind: "eval",
      policy_version: 0,
      sampling: { model: "sim+latency:200+tag:ev-bump", temperature: 0 },
    });
    await untilGroup(
      trainId,
      (g) => g.episodes.every((e) => e.turns === 1 && e.state === "generating"),
      "waiting on its second generation",
    );
    await untilGroup(evalId, (g) => g.episodes.every((e) => e.turns >= 1), "past its first turn");
    await setPolicy(run, { version: 2 });
    training = await waitForGroup(trainId);
    evaluation = await waitForGroup(evalId);
  });

  it("cancels the training group as stale and leaves the evaluation running to its end", () => {
    expect(training.status).toBe("failed");
    expect(training.episodes.map((e) => e.failure_reason)).toEqual([
      END.stale_policy,
      END.stale_policy,
    ]);
    expect(evaluation.status).toBe("landed");
    expect(evaluation.episodes.map((e) => e.state)).toEqual(["completed", "completed"]);
  });

  it("counts the evaluation's turns sampled after the bump, by hosts declaring no version, as unmeasured", async () => {
    // Nothing says which weights the host served once the run moved on: the run's version is
    // recorded, and an episode that straddles it measures no single version.
    expect(evaluation.policy_version_max).toBe(2);
    const rows = await getJson<EvalResultRow[]>(`/v1/runs/${run}/evals`);
    expect(rows).toEqual([]);
    expect(
      await count(
        "SELECT COUNT(*) AS n FROM episodes e JOIN groups g ON g.id = e.group_id WHERE g.run_id = ?1 AND g.kind = 'eval'",
        run,
      ),
    ).toBe(2);
  });

  it("may name a version beyond max_lag, which a training group may not", async () => {
    const body = {
      env: "guess-number",
      example: guessExample("ev-bump-old", 40),
      group_size: 1,
      run_id: run,
      policy_version: 0,
      sampling: { model: "sim", temperature: 0 },
    };
    expect((await postGroup(body)).status).toBe(409);
    const evalId = await startGroup({ ...body, kind: "eval" });
    expect(await waitForGroup(evalId)).toMatchObject({ status: "landed", kind: "eval" });
  });
});
