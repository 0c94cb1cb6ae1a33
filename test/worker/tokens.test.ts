// Token-exact episodes through the whole pipeline, in workerd against the simulator: what the
// host sent each turn is what a trainer leases, a drifting template is caught, `required`
// refuses a host without token ids, and a restart or a retried landing loses or doubles nothing.
import { env } from "cloudflare:workers";
import { beforeAll, describe, expect, it } from "vitest";
import type { GroupView } from "../../src/client/edgeroll-client";
import { END } from "../../src/rollout/outcomes";
import { decodeTokenObject, tokenObjectKey } from "../../src/tokens/token-object";
import {
  d1,
  getGroup,
  guessExample,
  itemAt,
  lastError,
  post,
  SUPPORT_EXAMPLE,
  startGroup,
  until,
  waitForGroup,
} from "./helpers";
import {
  answersOf,
  type Base64Sample,
  expectExact,
  float32,
  type HostAnswer,
  landEvictedMidEpisode,
  lease,
  leaseOne,
  type TokenGroup,
} from "./token-helpers";

describe("a token-exact group", () => {
  const model = "sim+record";
  const sampling = { temperature: 1, seed: 301 };
  let group: GroupView;
  let answers: HostAnswer[][];
  let leased: TokenGroup;

  beforeAll(async () => {
    const id = await startGroup({
      env: "guess-number",
      example: guessExample("tok-exact", 83),
      group_size: 3,
      run_id: "tok-exact",
      sampling: { model, ...sampling },
    });
    group = await waitForGroup(id);
    answers = await answersOf(group, model, sampling);
    leased = await leaseOne("tok-exact");
  });

  it("serves exactly the ids and logprobs the host sent, turn by turn", () => {
    expect(group.status).toBe("landed");
    for (const episode of leased.episodes) expectExact(episode, itemAt(answers, episode.index));
  });

  it("serves each episode in one sample: ChatML re-renders history as the model wrote it", () => {
    for (const episode of leased.episodes) {
      expect(episode.prefix_breaks).toBe(0);
      expect(episode.samples).toHaveLength(1);
      expect(itemAt(episode.samples).turns).toEqual([0, episode.turns - 1]);
    }
  });

  it("puts the advantage on exactly the sampled tokens", () => {
    for (const episode of leased.episodes) {
      const [sample] = episode.samples;
      for (const [i, a] of (sample?.advantages ?? []).entries()) {
        const expected = sample?.mask[i] === 1 ? (episode.advantage ?? 0) : 0;
        expect(Math.fround(a)).toBe(Math.fround(expected));
      }
    }
  });

  it("keeps in D1 what people query: per-turn logprob sums, new prompt tokens, the model", async () => {
    const turns = await d1<{
      logprob_sum: number;
      new_prompt_tokens: number;
      prefix_break: number;
      model: string;
    }>(
      "SELECT logprob_sum, new_prompt_tokens, prefix_break, model FROM messages WHERE group_id = ? AND sampled = 1",
      group.group_id,
    );
    expect(turns.length).toBe(group.episodes.reduce((n, e) => n + e.turns, 0));
    for (const t of turns) {
      expect(t.logprob_sum).toBeLessThanOrEqual(0);
      expect(t.new_prompt_tokens).toBeGreaterThan(0);
      expect(t.prefix_break).toBe(0);
      expect(t.model).toBe("sim");
    }
    const [row] = await d1("SELECT token_object FROM groups WHERE id = ?", group.group_id);
    expect(row?.token_object).toBe(tokenObjectKey(group.group_id));
  });
});

describe("token-exact episodes", () => {
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
    await post(`/v1/batches/${json.batch_id}/release`);
    const b64 = await lease<Base64Sample>("tok-b64", { token_encoding: "base64" });
    const bytes = (s: string) => Uint8Array.from(atob(s), (ch) => ch.charCodeAt(0));
    for (const [e, episode] of itemAt(b64.groups).episodes.entries()) {
      const plain = itemAt(itemAt(itemAt(json.groups).episodes, e).samples);
      const sample = itemAt(episode.samples);
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
    const leased = await leaseOne("tok-drift");
    for (const episode of leased.episodes) {
      if (episode.turns < 2) continue;
      // Qwen3's template re-renders each earlier action without its <think> block.
      expect(episode.prefix_breaks).toBe(episode.turns - 1);
      expect(episode.samples.length).toBeGreaterThan(1);
      expect(episode.samples).toHaveLength((episode.prefix_breaks ?? 0) + 1);
      expectExact(episode, itemAt(answers, episode.index));
    }
    const [breaks] = await d1<{ n: number }>(
      "SELECT SUM(prefix_break) AS n FROM messages WHERE group_id = ? AND sampled = 1",
      id,
    );
    expect(breaks?.n).toBeGreaterThan(0);
    const view = await d1("SELECT * FROM prefix_breaks WHERE run_id = 'tok-drift'");
    expect(view).toEqual([
      expect.objectContaining({
        env: "guess-number",
        model: "sim",
        policy_version: 0,
        breaks: breaks?.n,
      }),
    ]);
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
      for (const episode of (await leaseOne(run)).episodes) {
        expect(episode).toMatchObject({ token_mode: "none", samples: [] });
        expect(episode.turns).toBeGreaterThan(0);
      }
      expect(await d1("SELECT token_object FROM groups WHERE id = ?", id)).toEqual([
        { token_object: null },
      ]);
    }
  });

  it("lose no token of a recorded turn when the object is evicted mid-episode", async () => {
    const { answers, leased } = await landEvictedMidEpisode("tok-evict", 41);
    for (const episode of leased.episodes) expectExact(episode, itemAt(answers, episode.index));
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
      await until(
        async () => (lastError(await getGroup(id)) ?? "").startsWith("D1:"),
        "met the D1 outage",
      );
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
    expect(decoded.episodes.map((e) => e.turns.length)).toEqual(group.episodes.map((e) => e.turns));
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
    for (const episode of (await leaseOne("tok-off")).episodes) {
      expect(episode).toMatchObject({ token_mode: "none", samples: [] });
      expect(episode.token_mode_reason).toMatch(/tokens: "off"/);
    }
    expect(await env.TOKENS.head(tokenObjectKey(id))).toBeNull();
  });

  it("give failed episodes no samples, and the others theirs", async () => {
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
    expect(group.episodes.length).toBe(6);
    const leased = await leaseOne("tok-failed");
    const failed = leased.episodes.filter((e) => e.status === "failed");
    expect(failed.length).toBeGreaterThan(0);
    for (const e of failed) expect(e).toMatchObject({ token_mode: "exact", samples: [] });
    for (const e of leased.episodes.filter((x) => x.status !== "failed"))
      expect(e.samples.length).toBeGreaterThan(0);
  });

  it("keep a turn cut at the token budget exact: no end-of-turn token, as the host sent it", async () => {
    const model = "sim+record";
    const sampling = { temperature: 0, seed: 5, max_completion_tokens: 3 };
    const cut = await startGroup({
      env: "guess-number",
      example: guessExample("tok-cut", 50),
      group_size: 1,
      run_id: "tok-cut",
      sampling: { model, ...sampling },
    });
    const [answers] = await answersOf(await waitForGroup(cut), model, sampling);
    expectExact(itemAt((await leaseOne("tok-cut")).episodes), answers ?? []);
    expect(answers?.[0]?.token_ids).toHaveLength(3);
  });

  it("keep native tool-calling turns exact: the raw completion tokens are the training truth", async () => {
    const native = "sim+native+record";
    const sampling = { temperature: 0, seed: 6 };
    const tools = await startGroup({
      env: "tool-agent",
      example: { ...SUPPORT_EXAMPLE, id: "tok-native" },
      group_size: 1,
      run_id: "tok-native",
      sampling: { model: native, ...sampling },
    });
    const [answers] = await answersOf(await waitForGroup(tools), native, sampling);
    expectExact(itemAt((await leaseOne("tok-native")).episodes), answers ?? []);
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
    for (const episode of (await leaseOne("tok-gone")).episodes) {
      expect(episode).toMatchObject({ token_mode: "missing", samples: [] });
      expect(episode.token_mode_reason).toMatch(/is not in the TOKENS bucket/);
    }
  });
});
