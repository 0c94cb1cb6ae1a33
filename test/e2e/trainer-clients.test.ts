// End to end, as a user runs it: the simulator and the Worker under `wrangler dev` (real
// workerd, Durable Objects and D1 on disk), driven by the TypeScript client, the CLI and the
// stdlib Python trainer example.
import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type LocalStack, startLocalStack } from "../../src/cli/local-stack";
import type { JsonSample } from "../../src/cli/token-formats";
import { EdgerollClient } from "../../src/client/edgeroll-client";

const ROOT = resolve(import.meta.dirname, "../..");
let stack: LocalStack;
let state: string;
let api: EdgerollClient;

function edgeroll(...args: string[]) {
  return spawnSync(process.execPath, [join(ROOT, "bin/edgeroll.mjs"), ...args], {
    cwd: ROOT,
    encoding: "utf8",
    env: { ...process.env, NO_COLOR: "1", EDGEROLL_TOKEN: stack.tokens.admin },
    timeout: 120_000,
  });
}

async function landRun(
  run: string,
  count: number,
  env: "guess-number" | "exact-answer" = "guess-number",
) {
  // Keyed starts, which the client retries: a connection the Worker closed as idle just as a
  // start went out on it is tried again, as a trainer's would be.
  const started = await Promise.all(
    Array.from({ length: count }, (_, i) =>
      api.startGroup(
        {
          env,
          example:
            env === "guess-number"
              ? { id: `${run}-${i}`, input: "Find the number.", metadata: { secret: 10 + i * 17 } }
              : { id: `${run}-${i}`, input: `What is ${i} * 7?`, output: String(i * 7) },
          group_size: 4,
          run_id: run,
          sampling: { model: "sim", temperature: 1, seed: 100 + i },
        },
        { idempotencyKey: `${run}-${i}` },
      ),
    ),
  );
  return Promise.all(
    started.map((s) => api.waitForGroup(s.group_id, { timeoutMs: 60_000, intervalMs: 100 })),
  );
}

/** A child's output once it exits, read while this process goes on serving (the simulator). */
function finished(
  child: ChildProcess,
): Promise<{ status: number | null; stdout: string; stderr: string }> {
  let stdout = "";
  let stderr = "";
  child.stdout?.on("data", (chunk: Buffer) => {
    stdout += chunk.toString();
  });
  child.stderr?.on("data", (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  return new Promise((resolve, reject) => {
    child.on("error", reject);
    child.on("close", (status) => resolve({ status, stdout, stderr }));
  });
}

beforeAll(async () => {
  state = mkdtempSync(join(tmpdir(), "edgeroll-e2e-"));
  stack = await startLocalStack({ persistTo: state });
  api = new EdgerollClient({ baseUrl: stack.apiUrl, token: stack.tokens.admin });
}, 180_000);

afterAll(async () => {
  await stack?.stop();
  rmSync(state, { recursive: true, force: true });
});

describe("against wrangler dev", () => {
  it("the TypeScript client starts groups that land, and reads them back", async () => {
    const groups = await landRun("ts-client", 2);
    expect(groups.map((g) => g.status)).toEqual(["landed", "landed"]);
    const episode = await api.getEpisode(groups[0]?.episodes[0]?.episode_id ?? "");
    expect(episode.messages.filter((m) => m.sampled)).toHaveLength(episode.turns);
    // The local stack leaves wrangler's per-call trace collector off (docs/development.md, "Local traces"):
    // with it on, wrangler writes a span for every statement, fetch and RPC to this store.
    expect(existsSync(join(state, "v3", "observability"))).toBe(false);
    expect(existsSync(join(state, "v3", "do", "edgeroll-RolloutGroup"))).toBe(true);
  }, 90_000);

  it("`edgeroll pull --ack` writes a batch as JSON lines and acks it", async () => {
    await landRun("pull", 3);
    const out = join(state, "pulled.jsonl");
    const result = edgeroll(
      "pull",
      "--url",
      stack.apiUrl,
      "--run",
      "pull",
      "--max-groups",
      "2",
      "--ack",
      "--out",
      out,
    );
    expect(result.stderr).toMatch(
      /leased b_\w+: 2 groups, 8 episodes, mean reward [\d.]+, appended to/,
    );
    expect(result.stderr).toMatch(/acked 2 groups/);
    expect(result.status).toBe(0);
    const lines = readFileSync(out, "utf8")
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l));
    expect(lines).toHaveLength(2);
    expect(lines[0].episodes[0].messages.some((m: { sampled: boolean }) => m.sampled)).toBe(true);
  }, 90_000);

  it("`edgeroll sql` prints a table of the episode logs, or JSON", async () => {
    const table = edgeroll(
      "sql",
      "SELECT accounting, COUNT(*) AS n FROM group_accounting WHERE run_id = 'pull' GROUP BY accounting ORDER BY accounting",
      "--persist-to",
      state,
    );
    expect(table.stderr).toBe("");
    expect(table.stdout).toMatch(/accounting.*n/);
    expect(table.stdout).toMatch(/acked\s*│\s*2/);
    const json = edgeroll(
      "sql",
      "SELECT COUNT(*) AS n FROM episodes WHERE run_id = 'pull'",
      "--json",
      "--persist-to",
      state,
    );
    expect(JSON.parse(json.stdout)).toEqual([{ n: 12 }]);
    const bad = edgeroll("sql", "SELECT nope FROM nowhere", "--persist-to", state);
    expect(bad.status).toBe(1);
    expect(bad.stderr).toMatch(/no such table: nowhere/);
  }, 60_000);

  it("`edgeroll export` writes scored episodes, or SFT rows from the successful ones", async () => {
    await landRun("export", 3, "exact-answer");
    const rl = join(state, "rl.jsonl");
    expect(
      edgeroll("export", "--url", stack.apiUrl, "--run", "export", "--kind", "rl", "--out", rl)
        .status,
    ).toBe(0);
    const episodes = readFileSync(rl, "utf8")
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l));
    expect(episodes).toHaveLength(12);
    const sft = join(state, "sft.jsonl");
    const result = edgeroll(
      "export",
      "--url",
      stack.apiUrl,
      "--run",
      "export",
      "--kind",
      "sft",
      "--out",
      sft,
    );
    expect(result.status).toBe(0);
    const rows = existsSync(sft)
      ? readFileSync(sft, "utf8")
          .trim()
          .split("\n")
          .filter(Boolean)
          .map((l) => JSON.parse(l))
      : [];
    expect(rows.length).toBe(episodes.filter((e) => e.success).length);
    expect(rows.length).toBeGreaterThan(0);
    for (const row of rows) {
      expect(row.masking).toBe("role_aware");
      expect(row.text).toContain("<|im_start|>assistant\n");
      expect(row.mask).toEqual([false, true]);
    }
  }, 90_000);

  describe("`edgeroll export --kind tokens`", () => {
    let episodes: number;
    /** The run's token samples as `--format samples` writes them. */
    let samples: JsonSample[];

    /** What `--format <format>` writes for the run, one parsed line each. */
    const exported = <Line>(format: string): Line[] => {
      const out = join(state, `tokens-${format}.jsonl`);
      const result = edgeroll(
        "export",
        "--url",
        stack.apiUrl,
        "--run",
        "export-tokens",
        "--kind",
        "tokens",
        "--format",
        format,
        "--out",
        out,
      );
      expect(result.status, result.stderr).toBe(0);
      return readFileSync(out, "utf8")
        .trim()
        .split("\n")
        .map((l) => JSON.parse(l));
    };

    beforeAll(async () => {
      const groups = await landRun("export-tokens", 2);
      episodes = groups.flatMap((g) => g.episodes).length;
      samples = exported<JsonSample>("samples");
    }, 90_000);

    it("writes samples: one per episode (ChatML keeps every turn's prefix), its sampled tokens masked in", () => {
      expect(samples).toHaveLength(episodes);
      for (const s of samples) {
        expect(s.token_ids.length).toBe(s.mask.length);
        expect(s.mask.filter((m) => m === 1).length).toBeGreaterThan(0);
      }
    });

    it("writes TRL rows: a sample's tokens as prompt and completion, with their mask and logprobs", () => {
      // What a TRL GRPOTrainer `rollout_func` returns per completion.
      const trl = exported<{
        prompt_ids: number[];
        completion_ids: number[];
        env_mask: number[];
        logprobs: number[];
      }>("trl");
      expect(trl).toHaveLength(samples.length);
      for (const [i, row] of trl.entries()) {
        expect([...row.prompt_ids, ...row.completion_ids]).toEqual(samples[i]?.token_ids);
        expect(row.env_mask.length).toBe(row.completion_ids.length);
        expect(row.logprobs.length).toBe(row.completion_ids.length);
      }
    });

    it("writes Atropos groups: each group's tokens, scores and masks", () => {
      // Atropos's ScoredDataGroup: per sequence its tokens and masks (-100 where not trained).
      const atropos = exported<{ tokens: number[][]; masks: number[][]; scores: number[] }>(
        "atropos",
      );
      expect(atropos).toHaveLength(2);
      for (const group of atropos) {
        expect(group.tokens.length).toBe(group.scores.length);
        const [mask = [], tokens = []] = [group.masks[0], group.tokens[0]];
        expect(mask.length).toBe(tokens.length);
        expect(mask.filter((m) => m === -100).length).toBeGreaterThan(0);
      }
    });
  });

  it("both clients evaluate a policy version: eval groups land, unleased, and the metrics come back", async () => {
    const examples = [0, 1, 2].map((i) => ({
      id: `ev-${i}`,
      input: `What is ${i + 3} * 7?`,
      output: String((i + 3) * 7),
    }));
    const sampling = { model: "sim", temperature: 2, seed: 7 };
    const ts = await api.evaluate({
      env: "exact-answer",
      examples,
      groupSize: 4,
      policyVersion: 1,
      runId: "evals",
      sampling,
      k: [1, 4],
    });
    expect(ts.groups.map((g) => [g.status, g.kind])).toEqual([
      ["landed", "eval"],
      ["landed", "eval"],
      ["landed", "eval"],
    ]);
    expect(ts.results.map((r) => [r.k, r.examples, r.episodes])).toEqual([
      [1, 3, 12],
      [4, 3, 12],
    ]);
    // pass@1 is the success rate; maj@k is there, as exact-answer exposes its answers.
    expect(ts.results[0]?.pass_at_k).toBeCloseTo(ts.results[0]?.avg_success ?? -1, 9);
    expect(ts.results[1]?.maj_at_k).not.toBeNull();
    // The Python client, at the next version: groups of its own, and the same view.
    const script = `
import json, sys
from edgeroll_client import EdgerollClient
client = EdgerollClient(sys.argv[1], sys.argv[2])
groups, rows = client.evaluate("exact-answer", json.loads(sys.argv[3]), group_size=4, policy_version=2,
    run_id="evals", sampling={"model": "sim", "temperature": 2, "seed": 7}, k=[1, 2])
print(json.dumps({"groups": [g["group_id"] for g in groups], "rows": rows}))
`;
    // Spawned, not spawnSync: the simulator answering its generations runs in this process.
    const python = await finished(
      spawn("python3", ["-c", script, stack.apiUrl, stack.tokens.admin, JSON.stringify(examples)], {
        env: { ...process.env, PYTHONPATH: join(ROOT, "python") },
      }),
    );
    expect(python.stderr).toBe("");
    const py = JSON.parse(python.stdout) as { groups: string[]; rows: { k: number }[] };
    expect(py.groups).toHaveLength(3);
    expect(py.groups.some((id) => ts.groups.some((g) => g.group_id === id))).toBe(false);
    const all = await api.getEvals("evals");
    expect(py.rows).toEqual(all.filter((r) => r.policy_version === 2 && r.k <= 2));
    expect(all.map((r) => [r.policy_version, r.k])).toEqual([
      [1, 1],
      [1, 2],
      [1, 4],
      [2, 1],
      [2, 2],
      [2, 4],
    ]);
    // Never leased: a trainer asking for this run gets nothing.
    expect((await api.lease({ run_id: "evals", max_groups: 10 })).groups).toEqual([]);
  }, 120_000);

  it("the stdlib Python trainer leases, trains on and acks batches", async () => {
    await landRun("python", 4);
    const result = spawnSync(
      "python3",
      [
        "examples/python/train_grpo.py",
        "--url",
        stack.apiUrl,
        "--token",
        stack.tokens.trainer,
        "--run",
        "python",
        "--steps",
        "2",
        "--max-groups",
        "2",
      ],
      // The client is the package in python/, found as the example's docstring says.
      {
        cwd: ROOT,
        encoding: "utf8",
        timeout: 60_000,
        env: { ...process.env, PYTHONPATH: join(ROOT, "python") },
      },
    );
    expect(result.stderr).toBe("");
    expect(result.status).toBe(0);
    const trained = result.stdout.match(/trained on group (g_\w+)/g) ?? [];
    expect(trained.length).toBeGreaterThan(0);
    // It trains on the host's token ids (base64 samples), not on text.
    const tokens = Number(
      /step 0: batch b_\w+ acked, (\d+) sampled tokens/.exec(result.stdout)?.[1],
    );
    expect(tokens).toBeGreaterThan(0);
    // After each step it told edgeroll the run's new policy version.
    const policy = await fetch(`${stack.apiUrl}/v1/runs/python/policy`, {
      headers: { authorization: `Bearer ${stack.tokens.reader}` },
    });
    expect(await policy.json()).toMatchObject({ run_id: "python", version: 2, max_lag: 2 });
  }, 90_000);

  it("the async RL loop: `edgeroll run --max-ahead` keeps pace while a trainer leases, pauses for a weight sync and bumps its version", async () => {
    const run = "async-loop";
    const trainer = new EdgerollClient({ baseUrl: stack.apiUrl, token: stack.tokens.trainer });
    await trainer.setPolicy(run, { version: 0, max_lag: 2 });
    // The producer: eight groups, four at a time at most, but never more than two ahead of the
    // trainer (in flight, or landed and not yet leased).
    const producer = spawn(
      process.execPath,
      [
        join(ROOT, "bin/edgeroll.mjs"),
        "run",
        "--url",
        stack.apiUrl,
        "--env",
        "guess-number",
        "--dataset",
        "datasets/guess-number.jsonl",
        "--limit",
        "8",
        "--group-size",
        "4",
        "--concurrency",
        "4",
        "--max-ahead",
        "2",
        "--model",
        "sim+latency:60",
        "--run",
        run,
      ],
      { cwd: ROOT, env: { ...process.env, NO_COLOR: "1", EDGEROLL_TOKEN: stack.tokens.producer } },
    );
    let output = "";
    producer.stdout.on("data", (d) => (output += d));
    producer.stderr.on("data", (d) => (output += d));
    const exited = new Promise<number | null>((done) => producer.on("exit", done));
    let finished = false;
    void exited.then(() => (finished = true));

    // The trainer: lease what is there, train, pause the run while the weights sync, resume at
    // the next version. Meanwhile, watch the run's pacing.
    let version = 0;
    let mostAhead = 0;
    let mostInFlight = 0;
    /** Each bump: the version, when it was asked for and when it was answered (this clock). */
    const bumps: { version: number; asked: number; done: number }[] = [];
    while (!finished) {
      const { pacing } = await trainer.getRun(run);
      mostAhead = Math.max(mostAhead, pacing.ahead);
      mostInFlight = Math.max(mostInFlight, pacing.in_flight);
      const batch = await trainer.lease({
        run_id: run,
        max_groups: 1,
        current_policy_version: version,
        max_policy_lag: 2,
      });
      if (batch.batch_id === null) {
        await new Promise((resolve) => setTimeout(resolve, 100));
        continue;
      }
      await trainer.ack(batch.batch_id);
      await trainer.setPolicy(run, { version, paused: true });
      // ... the new weights would go to the inference host here ...
      version += 1;
      const asked = Date.now();
      await trainer.setPolicy(run, { version, paused: false });
      bumps.push({ version, asked, done: Date.now() });
    }
    expect(await exited, output).toBe(0);
    expect(mostAhead).toBeLessThanOrEqual(2);
    expect(mostInFlight).toBeLessThanOrEqual(2);
    expect(version).toBeGreaterThan(0);
    const progress = await trainer.getRun(run);
    expect(progress.groups).toMatchObject({ total: 8, running: 0 });
    // Each group took the version current when it started: at least that of every bump answered
    // before it was created, at most that of the last one asked for. (Landed groups whose
    // rewards are all equal are not leased, so the producer may start them all before the
    // trainer's first bump: "newest above 0" is not a rule.) The margin covers the Worker's
    // time between reading the policy and stamping `created_at`; both clocks are this machine's.
    const groups: { policy_version: number; created_at: string }[] = JSON.parse(
      edgeroll(
        "sql",
        `SELECT policy_version, created_at FROM groups WHERE run_id = '${run}' ORDER BY created_at`,
        "--json",
        "--persist-to",
        state,
      ).stdout,
    );
    expect(groups).toHaveLength(8);
    const margin = 500;
    for (const group of groups) {
      const created = Date.parse(group.created_at);
      const answeredBefore = bumps.filter((b) => b.done < created - margin).at(-1)?.version ?? 0;
      const askedBefore = bumps.filter((b) => b.asked <= created + margin).at(-1)?.version ?? 0;
      const why = `${JSON.stringify(group)} against bumps ${JSON.stringify(bumps)}`;
      expect(group.policy_version, why).toBeGreaterThanOrEqual(answeredBefore);
      expect(group.policy_version, why).toBeLessThanOrEqual(askedBefore);
    }
  }, 120_000);
});
