// Token-exact episodes through the whole pipeline, in workerd against the simulator: what the
// host sent each turn is what a trainer leases, a drifting template is caught, `required`
// refuses a host without token ids, and a restart or a retried landing loses or doubles nothing.
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { END } from "../../src/rollout/outcomes";
import { decodeTokenObject, tokenObjectKey } from "../../src/tokens/token-object";
import { api, guessExample, type Json, SUPPORT_EXAMPLE, startGroup, waitForGroup } from "./helpers";
import {
  answersOf,
  d1,
  evictWhileParked,
  expectExact,
  float32,
  type HostAnswer,
  lease,
} from "./token-helpers";

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
    await evictWhileParked(id);
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
    let firstBytes = new Uint8Array(0);
    try {
      id = await startGroup({
        env: "guess-number",
        example: guessExample("tok-twice", 30),
        group_size: 2,
        run_id: "tok-twice",
        sampling: { model: "sim", temperature: 1, seed: 8 },
      });
      // Each failed landing has already put the token object.
      for (;;) {
        const group = await (await api(`/v1/groups/${id}`)).json<Json>();
        if ((group.last_error ?? "").startsWith("D1:")) break;
        await new Promise((r) => setTimeout(r, 50));
      }
      const early = await env.TOKENS.get(tokenObjectKey(id));
      firstBytes = new Uint8Array(await (early as R2ObjectBody).arrayBuffer());
    } finally {
      await env.DB.exec("ALTER TABLE messages_away RENAME TO messages");
    }
    const group = await waitForGroup(id);
    expect(group.status).toBe("landed");
    const listed = await env.TOKENS.list({ prefix: tokenObjectKey(id) });
    expect(listed.objects.map((o) => o.key)).toEqual([tokenObjectKey(id)]);
    const object = await env.TOKENS.get(tokenObjectKey(id));
    const bytes = new Uint8Array(await (object as R2ObjectBody).arrayBuffer());
    // The retried landings wrote the same bytes the first attempt did.
    expect(bytes).toEqual(firstBytes);
    const decoded = decodeTokenObject(bytes);
    expect(decoded.episodes.map((e) => e.turns.length)).toEqual(
      group.episodes.map((e: Json) => e.turns),
    );
  });

  it("with tokens: off, store none and say so", async () => {
    const id = await startGroup({
      env: "guess-number",
      example: guessExample("tok-off", 20),
      group_size: 2,
      run_id: "tok-off",
      tokens: "off",
      sampling: { model: "sim", temperature: 1, seed: 12 },
    });
    await waitForGroup(id);
    const [leased] = (await lease("tok-off")).groups;
    for (const episode of leased.episodes) {
      expect(episode).toMatchObject({ token_mode: "none", samples: [] });
      expect(episode.token_mode_reason).toMatch(/tokens: "off"/);
    }
    expect(await env.TOKENS.head(tokenObjectKey(id))).toBeNull();
  });

  it("give failed episodes no samples, and keep cut and tool-calling turns exact", async () => {
    // chaos: the step of half the episodes throws at turn 1, after a recorded turn 0.
    const failing = await startGroup({
      env: "chaos",
      example: {
        ...guessExample("tok-failed", 50),
        metadata: { secret: 50, chaos: { fault: "throw", share: 0.5, turn: 1 } },
      },
      group_size: 6,
      run_id: "tok-failed",
      sampling: { model: "sim", temperature: 1, seed: 31 },
    });
    const group = await waitForGroup(failing);
    const [leased] = (await lease("tok-failed")).groups;
    const failed = leased.episodes.filter((e: Json) => e.status === "failed");
    expect(failed.length).toBeGreaterThan(0);
    for (const e of failed) expect(e).toMatchObject({ token_mode: "exact", samples: [] });
    for (const e of leased.episodes.filter((x: Json) => x.status !== "failed"))
      expect(e.samples.length).toBeGreaterThan(0);
    expect(group.episodes.length).toBe(6);

    // Cut at the token budget: the completion has no end-of-turn token, and is still exact.
    const model = "sim+record";
    const cut = await startGroup({
      env: "guess-number",
      example: guessExample("tok-cut", 50),
      group_size: 1,
      run_id: "tok-cut",
      sampling: { model, temperature: 0, seed: 5, max_completion_tokens: 3 },
    });
    const cutGroup = await waitForGroup(cut);
    const [cutLeased] = (await lease("tok-cut")).groups;
    const [answers] = await answersOf(cutGroup, model, {
      temperature: 0,
      seed: 5,
      max_completion_tokens: 3,
    });
    expectExact(cutLeased.episodes[0], answers as HostAnswer[]);
    expect((answers as HostAnswer[])[0]?.token_ids).toHaveLength(3);

    // Native tool calls: the raw completion tokens are the training truth, calls or not.
    const native = "sim+native+record";
    const tools = await startGroup({
      env: "tool-agent",
      example: { ...SUPPORT_EXAMPLE, id: "tok-native" },
      group_size: 1,
      run_id: "tok-native",
      sampling: { model: native, temperature: 0, seed: 6 },
    });
    const toolGroup = await waitForGroup(tools);
    const [toolLeased] = (await lease("tok-native")).groups;
    const [toolAnswers] = await answersOf(toolGroup, native, { temperature: 0, seed: 6 });
    expectExact(toolLeased.episodes[0], toolAnswers as HostAnswer[]);
  });

  it("say so when a group's token object is gone, rather than serve it as tokenless", async () => {
    const id = await startGroup({
      env: "guess-number",
      example: guessExample("tok-gone", 33),
      group_size: 2,
      run_id: "tok-gone",
      sampling: { model: "sim", temperature: 1, seed: 17 },
    });
    await waitForGroup(id);
    await env.TOKENS.delete(tokenObjectKey(id));
    const [leased] = (await lease("tok-gone")).groups;
    for (const episode of leased.episodes) {
      expect(episode).toMatchObject({ token_mode: "missing", samples: [] });
      expect(episode.token_mode_reason).toMatch(/is not in the TOKENS bucket/);
    }
  });
});
