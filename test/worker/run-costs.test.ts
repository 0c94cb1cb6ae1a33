// What a run costs, and a limit it cannot pass (issue 34). The `run_costs` view sums to what the
// run's messages and judgements say; a budget of sampled tokens refuses starts once the run's
// spend (landed and in flight) reaches it, the overshoot within what was in flight, and raising
// it lets starts through; the spend read after the group's object is killed is the one read
// before; a token's quota of groups in flight answers 429 with Retry-After.
import { abortAllDurableObjects } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import type {
  BudgetView,
  ProducerView,
  RunProgress,
  SpendView,
} from "../../src/client/edgeroll-client";
import {
  api,
  count,
  d1,
  errorOf,
  getJson,
  guessExample,
  judgedExample,
  judgedGroup,
  post,
  postGroup,
  setPolicy,
  startGroup,
  TOKENS,
  until,
  waitForGroup,
} from "./helpers";

/** The test run's prices (vitest.config.ts), USD per million tokens. */
const INFERENCE_PRICE = { prompt: 1, cached: 0.25, completion: 4 };
const JUDGE_PRICE = { prompt: 2, completion: 8 };

const runOf = (name: string) => `${name}-${crypto.randomUUID().slice(0, 8)}`;
const getRun = (run: string) => getJson<RunProgress>(`/v1/runs/${run}`);
const setBudget = (run: string, body: object, token = TOKENS.trainer) =>
  post<BudgetView>(`/v1/runs/${run}/budget`, body, { authorization: `Bearer ${token}` });

/** A guess-number group of two, each of its generations `latencyMs` late. */
function guessGroup(run: string, id: string, latencyMs = 0, token = TOKENS.all) {
  return postGroup(
    {
      env: "guess-number",
      example: guessExample(id, 37),
      group_size: 2,
      run_id: run,
      sampling: { model: latencyMs > 0 ? `sim+trickle:${latencyMs}` : "sim", temperature: 0 },
    },
    { authorization: `Bearer ${token}` },
  );
}

async function started(response: Response): Promise<string> {
  if (response.status !== 202)
    throw new Error(`POST /v1/groups: ${response.status} ${await response.text()}`);
  return ((await response.json()) as { group_id: string }).group_id;
}

/** Sums taken straight from the run's messages and judgements, as a check on `run_costs`. */
async function rawSums(run: string) {
  const [m] = await d1<Record<string, number>>(
    `SELECT COUNT(*) AS generations, SUM(m.prompt_tokens) AS prompt_tokens,
       SUM(COALESCE(m.cached_tokens, 0)) AS cached_tokens,
       SUM(m.completion_tokens) AS sampled_tokens, SUM(m.attempts - 1) AS retries,
       SUM(m.usd) AS usd,
       SUM((m.prompt_tokens - COALESCE(m.cached_tokens, 0)) * ${INFERENCE_PRICE.prompt}
         + COALESCE(m.cached_tokens, 0) * ${INFERENCE_PRICE.cached}
         + m.completion_tokens * ${INFERENCE_PRICE.completion}) / 1e6 AS priced
     FROM messages m JOIN episodes e ON e.id = m.episode_id
     WHERE e.run_id = ? AND m.sampled = 1`,
    run,
  );
  const [j] = await d1<Record<string, number>>(
    `SELECT COUNT(*) AS calls, SUM(j.prompt_tokens IS NULL) AS unmetered,
       SUM(j.prompt_tokens + j.completion_tokens) AS judge_tokens,
       SUM(j.usd) AS usd,
       SUM(j.prompt_tokens * ${JUDGE_PRICE.prompt} + j.completion_tokens * ${JUDGE_PRICE.completion}) / 1e6 AS priced
     FROM judgements j JOIN episodes e ON e.id = j.episode_id WHERE e.run_id = ?`,
    run,
  );
  return { messages: m as Record<string, number>, judgements: j as Record<string, number> };
}

describe("a run's bill", () => {
  it("run_costs sums to what its messages and judgements say, priced per host, and GET /v1/runs says the same", async () => {
    const run = runOf("bill");
    // A judged group whose judge fails its first call (a failed call is billed too), and a
    // multi-turn group whose first generation of each request hangs past its deadline (retries).
    const judged = await startGroup({
      env: "judged-answer",
      example: judgedExample(`${run}-judged`, "What is 6 * 7?", "42", "judge+fail:500:1"),
      group_size: 2,
      run_id: run,
      sampling: { model: "sim", temperature: 0 },
    });
    const guessed = await started(
      await postGroup({
        env: "guess-number",
        example: guessExample(`${run}-guess`, 64),
        group_size: 2,
        run_id: run,
        sampling: { model: "sim+hang:1@1", temperature: 0 },
      }),
    );
    await waitForGroup(judged);
    await waitForGroup(guessed);

    const [row] = await d1<SpendView & { run_id: string; episodes: number }>(
      "SELECT * FROM run_costs WHERE run_id = ?",
      run,
    );
    const raw = await rawSums(run);
    expect(row).toMatchObject({
      groups: 2,
      groups_in_flight: 0,
      episodes: 4,
      generations: raw.messages.generations,
      prompt_tokens: raw.messages.prompt_tokens,
      cached_tokens: raw.messages.cached_tokens,
      sampled_tokens: raw.messages.sampled_tokens,
      retries: raw.messages.retries,
      judge_tokens: raw.judgements.judge_tokens,
      teacher_tokens: 0,
      // The judge's 500 reported no tokens: a call the bill cannot price, and says so.
      unpriced_calls: 1,
    });
    // The judge was called and billed; the hung first attempts were retried and billed as such.
    expect(raw.judgements.calls).toBe(3);
    expect(raw.judgements.unmetered).toBe(1);
    expect(row?.judge_tokens).toBeGreaterThan(0);
    expect(row?.retries).toBeGreaterThan(0);
    expect(row?.env_seconds).toBeGreaterThan(0);
    // Each call priced at its host's price: the messages' and judgements' own usd, and the
    // prices applied to their tokens here, agree.
    expect(raw.messages.usd).toBeCloseTo(raw.messages.priced ?? Number.NaN, 12);
    expect(raw.judgements.usd).toBeCloseTo(raw.judgements.priced ?? Number.NaN, 12);
    expect(row?.usd).toBeCloseTo((raw.messages.usd ?? 0) + (raw.judgements.usd ?? 0), 12);

    // The API's live count says the same once nothing is in flight.
    const costs = (await getRun(run)).costs;
    expect(costs.groups_in_flight).toBe(0);
    expect(costs.in_flight.sampled_tokens).toBe(0);
    const columns = row as unknown as Record<string, number>;
    for (const key of Object.keys(costs.total) as (keyof SpendView)[])
      expect(costs.total[key], key).toBeCloseTo(columns[key] ?? Number.NaN, 6);

    // The per-host and per-version views break the same generations down.
    const byHost = await d1<{ generations: number; sampled_tokens: number }>(
      "SELECT generations, sampled_tokens FROM run_costs_by_host WHERE run_id = ?",
      run,
    );
    expect(byHost.reduce((n, h) => n + h.sampled_tokens, 0)).toBe(raw.messages.sampled_tokens);
    const byVersion = await d1<{ generations: number }>(
      "SELECT generations FROM run_costs_by_policy_version WHERE run_id = ?",
      run,
    );
    expect(byVersion.reduce((n, v) => n + v.generations, 0)).toBe(raw.messages.generations);
  });
});

describe("a run's budget", () => {
  it("refuses starts once the sampled tokens in flight reach it, overshoots by no more than was in flight, and lets starts through once raised", async () => {
    const run = runOf("budget");
    const limit = 30;
    // Settable before the run has any group.
    const set = await setBudget(run, { max_sampled_tokens: limit });
    expect(set.status).toBe(200);
    expect(set.body).toMatchObject({
      limits: { max_sampled_tokens: limit, max_usd: null },
      spent: { max_sampled_tokens: 0 },
      exhausted: false,
    });

    const first = await started(await guessGroup(run, `${run}-a`, 150));
    // The group is still running when its transcripts alone reach the limit.
    await until(async () => {
      const { costs } = await getRun(run);
      return costs.groups_in_flight === 1 && costs.in_flight.sampled_tokens >= limit;
    }, "the group in flight reaches the limit");
    const refused = await guessGroup(run, `${run}-b`);
    expect(refused.status).toBe(429);
    const error = await errorOf(refused);
    expect(error.code).toBe("budget_exhausted");
    expect(error.message).toMatch(
      new RegExp(
        `max_sampled_tokens is ${limit} sampled tokens and the run has spent \\d+ sampled tokens`,
      ),
    );
    // Nothing of the refused start was stored.
    expect(await count("SELECT COUNT(*) AS n FROM groups WHERE run_id = ?", run)).toBe(1);

    // The group in flight finishes: the run passes its limit by what that group spent past it.
    await waitForGroup(first);
    const after = await getJson<BudgetView>(`/v1/runs/${run}/budget`);
    const [landed] = await d1<{ sampled: number }>(
      "SELECT SUM(completion_tokens) AS sampled FROM episodes WHERE group_id = ?",
      first,
    );
    expect(after.exhausted).toBe(true);
    expect(after.spent.max_sampled_tokens).toBe(landed?.sampled);
    expect(after.overshoot.max_sampled_tokens).toBe((landed?.sampled ?? 0) - limit);
    expect(after.overshoot.max_sampled_tokens).toBeLessThanOrEqual(landed?.sampled ?? 0);
    expect((await guessGroup(run, `${run}-c`)).status).toBe(429);

    // Raised past what was spent: starts go through again.
    const raised = await setBudget(run, { max_sampled_tokens: (landed?.sampled ?? 0) + 1000 });
    expect(raised.body.exhausted).toBe(false);
    await waitForGroup(await started(await guessGroup(run, `${run}-d`)));
  });

  it("keeps the spent figure of a group in flight when every object is killed (no draining) and restarts", async () => {
    const run = runOf("budget-kill");
    await setBudget(run, { max_sampled_tokens: 1_000_000 });
    await setPolicy(run, { version: 0 });
    const id = await started(await guessGroup(run, `${run}-a`, 100));
    await until(
      async () => (await getRun(run)).costs.in_flight.generations >= 2,
      "two generations",
    );
    // Paused, with nothing in flight: the spend stands still while the object is killed.
    await setPolicy(run, { version: 0, paused: true, interrupt: true });
    await until(async () => (await getRun(run)).in_flight_generations === 0, "nothing in flight");
    const before = (await getRun(run)).costs;
    expect(before.groups_in_flight).toBe(1);
    expect(before.in_flight.sampled_tokens).toBeGreaterThan(0);

    // Every object of the runtime is aborted, as a SIGKILL would: no draining, memory gone.
    await abortAllDurableObjects();
    const afterKill = (await getRun(run)).costs;
    expect(afterKill.total).toEqual(before.total);
    const budget = await getJson<BudgetView>(`/v1/runs/${run}/budget`);
    expect(budget.spent.max_sampled_tokens).toBe(before.total.sampled_tokens);

    // Resumed, it lands, and the landed rows carry on from the same count, not twice it.
    await setPolicy(run, { version: 0, paused: false });
    await waitForGroup(id);
    const landed = (await getRun(run)).costs;
    expect(landed.in_flight.sampled_tokens).toBe(0);
    expect(landed.total.sampled_tokens).toBeGreaterThanOrEqual(before.total.sampled_tokens);
    const [sums] = await d1<{ sampled: number }>(
      "SELECT SUM(completion_tokens) AS sampled FROM episodes WHERE run_id = ?",
      run,
    );
    expect(landed.total.sampled_tokens).toBe(sums?.sampled);
  });

  it("with max_groups, stops the run's producer, and raising it resumes the producer", async () => {
    const run = runOf("budget-producer");
    const lines = Array.from({ length: 4 }, (_, i) =>
      JSON.stringify({ id: `q${i}`, input: `What is ${i} + ${i}?`, output: String(2 * i) }),
    );
    const pushed = await api(`/v1/datasets/${run}`, {
      method: "POST",
      headers: { "content-type": "application/x-ndjson" },
      body: lines.join("\n"),
    });
    expect(pushed.ok).toBe(true);
    await setBudget(run, { max_groups: 2 });
    const producer = await post<ProducerView>(`/v1/runs/${run}/producer`, {
      dataset: run,
      env: "exact-answer",
      group_size: 2,
      max_in_flight: 4,
      sampling: { model: "sim", temperature: 0 },
    });
    expect(producer.status).toBe(202);
    const producerOf = () => getJson<ProducerView>(`/v1/runs/${run}/producer`);
    let view = await producerOf();
    await until(async () => {
      view = await producerOf();
      return view.waiting !== null && view.groups_landed === 2;
    }, "the producer waits on its budget");
    expect(view.state).toBe("running");
    expect(view.waiting).toMatch(/^budget_exhausted: .*max_groups is 2 groups/);
    expect(await count("SELECT COUNT(*) AS n FROM groups WHERE run_id = ?", run)).toBe(2);

    await setBudget(run, { max_groups: null });
    await until(async () => {
      view = await producerOf();
      return view.state === "done";
    }, "the producer finishes once the limit is lifted");
    expect(view).toMatchObject({ groups_landed: 4, waiting: null, cancelled: 0 });
  });

  it("holds max_groups exactly against starts racing for the last places", async () => {
    const run = runOf("budget-race");
    await setBudget(run, { max_groups: 2 });
    const answers = await Promise.all(
      Array.from({ length: 6 }, (_, i) => guessGroup(run, `${run}-${i}`)),
    );
    const statuses = answers.map((a) => a.status).sort();
    expect(statuses).toEqual([202, 202, 429, 429, 429, 429]);
    for (const refused of answers.filter((a) => a.status === 429))
      expect((await errorOf(refused)).code).toBe("budget_exhausted");
    const ids = await Promise.all(answers.filter((a) => a.status === 202).map(started));
    await Promise.all(ids.map((id) => waitForGroup(id)));
    expect(await count("SELECT COUNT(*) AS n FROM groups WHERE run_id = ?", run)).toBe(2);
  });

  it("refuses a rescore once the run has spent its max_usd, calling no judge, and rescores once it is lifted", async () => {
    const run = runOf("rescore");
    // The judge fails this request's first 3 tries, every attempt of the grading: judge_error.
    const group = await judgedGroup(
      run,
      judgedExample(`${run}-judged`, "What is 9 * 6?", "54", "judge+fail:500:3"),
    );
    const judgements = () =>
      count(`SELECT COUNT(*) AS n FROM judgements WHERE episode_id LIKE '${group}%'`);
    expect(await judgements()).toBe(3);
    const trainer = { authorization: `Bearer ${TOKENS.trainer}` };
    const rescore = () =>
      post<{ rescored: number; judge_errors: number; error?: { code: string; message: string } }>(
        `/v1/groups/${group}/rescore`,
        {},
        trainer,
      );

    // Its generations were priced: any max_usd under that is spent already.
    expect((await setBudget(run, { max_usd: 1e-9 })).status).toBe(200);
    const refused = await rescore();
    expect(refused.status).toBe(429);
    expect(refused.body.error?.code).toBe("budget_exhausted");
    expect(refused.body.error?.message).toMatch(/max_usd/);
    expect(await judgements()).toBe(3);

    // A limit a rescore does not spend against (sampled tokens) does not hold it back.
    expect((await setBudget(run, { max_usd: null, max_sampled_tokens: 1 })).status).toBe(200);
    const rescored = await rescore();
    expect(rescored.status).toBe(200);
    expect(rescored.body).toMatchObject({ rescored: 1, judge_errors: 0 });
    expect(await judgements()).toBe(4);
  });

  it("refuses a budget it cannot read, and stores nothing", async () => {
    const run = runOf("budget-bad");
    for (const [body, problem] of [
      [{}, /name at least one of max_sampled_tokens/],
      [{ max_usd: -1 }, /max_usd/],
      [{ max_groups: 1.5 }, /max_groups/],
      [{ max_tokens: 10 }, /max_tokens/],
    ] as const) {
      const answer = await setBudget(run, body);
      expect(answer.status).toBe(400);
      expect(JSON.stringify(answer.body)).toMatch(problem);
    }
    // Only a trainer sets a budget.
    expect((await setBudget(run, { max_groups: 1 }, TOKENS.producer)).status).toBe(403);
    expect(await count("SELECT COUNT(*) AS n FROM run_budgets WHERE run_id = ?", run)).toBe(0);
    expect((await api(`/v1/runs/${run}`)).status).toBe(404);
  });
});

describe("a token's quota", () => {
  it("admits one of several starts racing for a token's last place", async () => {
    const run = runOf("quota-race");
    const answers = await Promise.all(
      Array.from({ length: 4 }, (_, i) => guessGroup(run, `${run}-${i}`, 0, TOKENS.quota)),
    );
    expect(answers.map((a) => a.status).sort()).toEqual([202, 429, 429, 429]);
    const admitted = answers.find((a) => a.status === 202);
    if (admitted !== undefined) await waitForGroup(await started(admitted));
  });

  it("refuses a start past max_inflight_groups with 429 and Retry-After, and admits it once a group lands", async () => {
    const run = runOf("quota");
    const first = await started(await guessGroup(run, `${run}-a`, 100, TOKENS.quota));
    const refused = await guessGroup(run, `${run}-b`, 0, TOKENS.quota);
    expect(refused.status).toBe(429);
    expect(refused.headers.get("retry-after")).toBe("5");
    const error = await errorOf(refused);
    expect(error.code).toBe("quota_exceeded");
    expect(error.message).toMatch(
      /may have 1 groups in flight \(max_inflight_groups\) and has them all running/,
    );
    // Another token's starts are not this one's quota.
    await started(await guessGroup(run, `${run}-c`));
    await waitForGroup(first);
    await waitForGroup(await started(await guessGroup(run, `${run}-b`, 0, TOKENS.quota)));
  });
});
