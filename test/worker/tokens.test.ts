// Token-exact episodes through the whole pipeline, in workerd against the simulator: what the
// host sent each turn is what a trainer leases, a drifting template is caught, `required`
// refuses a host without token ids, and a restart or a retried landing loses or doubles nothing.
import { evictDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { generationSeed, SamplingSchema } from "../../src/rollout/group-spec";
import { END } from "../../src/rollout/outcomes";
import { decodeTokenObject, tokenObjectKey } from "../../src/tokens/token-object";
import { api, groupStub, guessExample, type Json, startGroup, waitForGroup } from "./helpers";

interface HostAnswer {
  prompt_token_ids: number[];
  token_ids: number[];
  logprobs: number[];
}

/** What the simulator sent for one generation (its `record` directive keeps it, by seed). */
async function hostAnswer(model: string, seed: number | undefined): Promise<HostAnswer> {
  const url = new URL(`${env.INFERENCE_BASE_URL.replace(/\/v1$/, "")}/sim/answers`);
  url.searchParams.set("model", model);
  url.searchParams.set("seed", String(seed));
  const response = await fetch(url);
  if (!response.ok) throw new Error(`no recorded answer for ${model} seed ${seed}`);
  return response.json();
}

async function lease(runId: string, extra: object = {}): Promise<Json> {
  const response = await api("/v1/batches/lease", {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({
      max_groups: 10,
      run_id: runId,
      skip_uniform_groups: false,
      include: ["messages", "tokens"],
      ...extra,
    }),
  });
  return response.json();
}

const d1 = (query: string, ...params: unknown[]) =>
  env.DB.prepare(query)
    .bind(...params)
    .all<Json>()
    .then((r) => r.results);

const float32 = (values: readonly number[]) => values.map((v) => Math.fround(v));

/** The host's answers for every sampled turn of every episode of a group. */
async function answersOf(group: Json, model: string, sampling: object): Promise<HostAnswer[][]> {
  const parsed = SamplingSchema.parse({ model, ...sampling });
  return Promise.all(
    group.episodes.map((e: Json) =>
      Promise.all(
        Array.from({ length: e.turns }, (_, turn) =>
          hostAnswer(model, generationSeed(parsed, e.index, turn)),
        ),
      ),
    ),
  );
}

/** Checks a leased episode's samples against the host's answers, turn by turn. */
function expectExact(episode: Json, answers: HostAnswer[]) {
  expect(episode.token_mode).toBe("exact");
  const sampled = episode.samples.flatMap((s: Json) =>
    s.token_ids.filter((_: number, i: number) => s.mask[i] === 1),
  );
  const logprobs = episode.samples.flatMap((s: Json) =>
    s.logprobs.filter((_: number, i: number) => s.mask[i] === 1),
  );
  expect(sampled).toEqual(answers.flatMap((a) => a.token_ids));
  expect(float32(logprobs)).toEqual(float32(answers.flatMap((a) => a.logprobs)));
  // Each sample begins with the host's own prompt of its first turn.
  for (const sample of episode.samples) {
    const first = answers[sample.turns[0]] as HostAnswer;
    expect(sample.token_ids.slice(0, first.prompt_token_ids.length)).toEqual(
      first.prompt_token_ids,
    );
  }
}

describe("token-exact episodes", () => {
  it("serve exactly the ids and logprobs the host sent, turn by turn, in one sample", async () => {
    const model = "sim+record";
    const sampling = { temperature: 1, seed: 301 };
    const id = await startGroup({
      env: "guess-number",
      example: guessExample("tok-exact", 83),
      group_size: 3,
      run_id: "tok-exact",
      sampling: { model, ...sampling },
    });
    const group = await waitForGroup(id);
    expect(group.status).toBe("landed");
    const answers = await answersOf(group, model, sampling);
    const batch = await lease("tok-exact");
    const [leased] = batch.groups;
    for (const episode of leased.episodes) {
      expectExact(episode, answers[episode.index] as HostAnswer[]);
      // ChatML re-renders history as the model wrote it: every turn extends the last.
      expect(episode.prefix_breaks).toBe(0);
      expect(episode.samples).toHaveLength(1);
      expect(episode.samples[0].turns).toEqual([0, episode.turns - 1]);
      // The advantage rides on exactly the sampled tokens.
      for (const [i, a] of episode.samples[0].advantages.entries()) {
        const expected = episode.samples[0].mask[i] === 1 ? episode.advantage : 0;
        expect(Math.fround(a)).toBe(Math.fround(expected));
      }
    }
    // D1 keeps what people query: per-turn logprob sums, new prompt tokens, the model.
    const turns = await d1(
      "SELECT logprob_sum, new_prompt_tokens, prefix_break, model FROM messages WHERE group_id = ? AND sampled = 1",
      id,
    );
    expect(turns.length).toBe(group.episodes.reduce((n: number, e: Json) => n + e.turns, 0));
    for (const t of turns) {
      expect(t.logprob_sum).toBeLessThanOrEqual(0);
      expect(t.new_prompt_tokens).toBeGreaterThan(0);
      expect(t.prefix_break).toBe(0);
      expect(t.model).toBe("sim");
    }
    const [row] = await d1("SELECT token_object, token_object_bytes FROM groups WHERE id = ?", id);
    expect(row.token_object).toBe(tokenObjectKey(id));
  });

  it("serve the same samples as base64 of little-endian arrays", async () => {
    const id = await startGroup({
      env: "guess-number",
      example: guessExample("tok-b64", 12),
      group_size: 2,
      run_id: "tok-b64",
      sampling: { model: "sim", temperature: 1, seed: 5 },
    });
    await waitForGroup(id);
    const json = await lease("tok-b64", { lease_seconds: 1 });
    await api(`/v1/batches/${json.batch_id}/release`, { method: "POST" });
    const b64 = await lease("tok-b64", { token_encoding: "base64" });
    const bytes = (s: string) => Uint8Array.from(atob(s), (ch) => ch.charCodeAt(0));
    for (const [e, episode] of b64.groups[0].episodes.entries()) {
      const plain = json.groups[0].episodes[e].samples[0];
      const sample = episode.samples[0];
      expect(Array.from(new Int32Array(bytes(sample.token_ids).buffer))).toEqual(plain.token_ids);
      expect(Array.from(bytes(sample.mask))).toEqual(plain.mask);
      expect(Array.from(new Float32Array(bytes(sample.logprobs).buffer))).toEqual(
        float32(plain.logprobs),
      );
      expect(Array.from(new Float32Array(bytes(sample.advantages).buffer))).toEqual(
        float32(plain.advantages),
      );
    }
  });

  it("split at a template that drops earlier reasoning, and record each break", async () => {
    const model = "sim+think+record";
    const sampling = { temperature: 1, seed: 77 };
    const id = await startGroup({
      env: "guess-number",
      example: guessExample("tok-drift", 91),
      group_size: 2,
      run_id: "tok-drift",
      sampling: { model, ...sampling },
    });
    const group = await waitForGroup(id);
    const answers = await answersOf(group, model, sampling);
    const [leased] = (await lease("tok-drift")).groups;
    for (const episode of leased.episodes) {
      if (episode.turns < 2) continue;
      // Qwen3's template re-renders each earlier action without its <think> block.
      expect(episode.prefix_breaks).toBe(episode.turns - 1);
      expect(episode.samples.length).toBeGreaterThan(1);
      expect(episode.samples).toHaveLength(episode.prefix_breaks + 1);
      expectExact(episode, answers[episode.index] as HostAnswer[]);
    }
    const breaks = await d1(
      "SELECT SUM(prefix_break) AS n FROM messages WHERE group_id = ? AND sampled = 1",
      id,
    );
    expect(breaks[0].n).toBeGreaterThan(0);
    const view = await d1("SELECT * FROM prefix_breaks WHERE run_id = 'tok-drift'");
    expect(view).toEqual([
      expect.objectContaining({ env: "guess-number", model: "sim", policy_version: 0 }),
    ]);
    expect(view[0].breaks).toBe(breaks[0].n);
  });

  it("with tokens: required, fail against a host without token ids, saying what fixes it", async () => {
    const id = await startGroup({
      env: "guess-number",
      example: guessExample("tok-required", 40),
      group_size: 2,
      run_id: "tok-required",
      tokens: "required",
      sampling: { model: "sim+notokens", temperature: 1, seed: 3 },
    });
    const group = await waitForGroup(id);
    expect(group.status).toBe("failed");
    for (const failure of group.failures) {
      expect(failure.reason).toBe(END.tokens_unavailable);
      expect(failure.detail).toMatch(/no prompt_token_ids .*vLLM sends them from 0\.10\.2/);
      expect(failure.detail).toMatch(/tokens: "required"/);
    }
  });

  it("with tokens: auto, go on without them and say so (token_mode none)", async () => {
    for (const [run, model] of [
      ["tok-old-host", "sim+notokens"],
      // SGLang refuses the token fields while streaming: asked again without them.
      ["tok-sglang", "sim+sglang"],
    ] as const) {
      const id = await startGroup({
        env: "guess-number",
        example: guessExample(run, 40),
        group_size: 2,
        run_id: run,
        sampling: { model, temperature: 1, seed: 3 },
      });
      expect((await waitForGroup(id)).status).toBe("landed");
      const [leased] = (await lease(run)).groups;
      for (const episode of leased.episodes) {
        expect(episode).toMatchObject({ token_mode: "none", samples: [] });
        expect(episode.turns).toBeGreaterThan(0);
      }
      const [row] = await d1("SELECT token_object FROM groups WHERE id = ?", id);
      expect(row.token_object).toBeNull();
    }
  });

  it("lose no token of a recorded turn when the object is evicted mid-episode", async () => {
    // The third generation of each episode waits 1.5 s on a Retry-After, parked in storage.
    const model = "sim+fail:503:1@2+retryafter:1.5+record";
    const sampling = { temperature: 1, seed: 41 };
    const id = await startGroup({
      env: "guess-number",
      example: guessExample("tok-evict", 88),
      group_size: 2,
      run_id: "tok-evict",
      sampling: { model, ...sampling },
    });
    for (;;) {
      const live = await (await api(`/v1/groups/${id}`)).json<Json>();
      const open = live.episodes.filter((e: Json) => e.state === "generating");
      if (open.length > 0 && open.every((e: Json) => e.retry_at !== null)) break;
      if (live.status === "landed") break;
      await new Promise((r) => setTimeout(r, 50));
    }
    await evictDurableObject(groupStub(id));
    const group = await waitForGroup(id);
    expect(group.status).toBe("landed");
    const answers = await answersOf(group, model, sampling);
    const [leased] = (await lease("tok-evict")).groups;
    for (const episode of leased.episodes)
      expectExact(episode, answers[episode.index] as HostAnswer[]);
  });

  it("write one token object however often the landing is retried", async () => {
    await env.DB.exec("ALTER TABLE messages RENAME TO messages_away");
    let id: string;
    try {
      id = await startGroup({
        env: "guess-number",
        example: guessExample("tok-twice", 30),
        group_size: 2,
        run_id: "tok-twice",
        sampling: { model: "sim", temperature: 1, seed: 8 },
      });
      // Each failed landing has already put the token object: wait for two attempts.
      for (;;) {
        const group = await (await api(`/v1/groups/${id}`)).json<Json>();
        if ((group.last_error ?? "").startsWith("D1:")) break;
        await new Promise((r) => setTimeout(r, 50));
      }
      expect(await env.TOKENS.head(tokenObjectKey(id))).not.toBeNull();
    } finally {
      await env.DB.exec("ALTER TABLE messages_away RENAME TO messages");
    }
    const group = await waitForGroup(id);
    expect(group.status).toBe("landed");
    const listed = await env.TOKENS.list({ prefix: tokenObjectKey(id) });
    expect(listed.objects.map((o) => o.key)).toEqual([tokenObjectKey(id)]);
    const object = await env.TOKENS.get(tokenObjectKey(id));
    const decoded = decodeTokenObject(new Uint8Array(await (object as R2ObjectBody).arrayBuffer()));
    expect(decoded.episodes.map((e) => e.turns.length)).toEqual(
      group.episodes.map((e: Json) => e.turns),
    );
  });
});
