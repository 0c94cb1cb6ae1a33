// Token-exact continuation across an interrupting weight sync (issue 30): a token-in turn cut
// after k tokens keeps them, and after the resume goes on with the original prompt ids plus
// those k ids as its prompt; its sample is the kept tokens followed by the continuation's, each
// with its own logprob and the version that sampled it. A chat turn restarts instead, its
// tokens counted as discarded. Eviction between the interrupt and the resume, or a continuation
// lost with its instance, changes nothing.
import { evictDurableObject, runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { generationSeed, SamplingSchema } from "../../src/rollout/group-spec";
import {
  d1,
  getEpisode,
  groupStub,
  guessExample,
  itemAt,
  runInFlight,
  setPolicy,
  simulatorRequests,
  startGroup,
  until,
  waitForGroup,
} from "./helpers";
import { float32, type HostAnswer, hostAnswer, leaseOne, sampledOf } from "./token-helpers";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * One guess-number episode whose first generation streams a token every 100 ms, interrupted
 * 500 ms into it (a few tokens in) by a sync to version 1; `whilePaused` runs between the
 * interrupt and the resume.
 */
async function interruptFirstTurn(
  run: string,
  generation: "tokens" | "chat",
  hooks: { whilePaused?: (id: string) => Promise<void> } = {},
) {
  const model = `sim+tag:${run}+trickle:100+record`;
  const sampling = { model, temperature: 1, seed: 11 };
  await setPolicy(run, { version: 0 });
  const id = await startGroup({
    env: "guess-number",
    example: guessExample(`${run}-g`, 37),
    group_size: 1,
    run_id: run,
    generation,
    tokens: "required",
    sampling,
  });
  await until(async () => (await runInFlight(run)) === 1, "the first generation in flight");
  await sleep(500);
  const seed = generationSeed(SamplingSchema.parse(sampling), 0, 0);
  // What the host planned for the cut generation (the simulator keeps it as the request comes).
  const cut = await hostAnswer(model, seed);
  await setPolicy(run, { version: 1, paused: true, interrupt: true });
  await hooks.whilePaused?.(id);
  await setPolicy(run, { version: 1, paused: false });
  const landed = await waitForGroup(id);
  expect(landed.status).toBe("landed");
  const episode = await getEpisode(itemAt(landed.episodes).episode_id);
  return { id, model, seed, cut, episode, continued: await hostAnswer(model, seed) };
}

/** The sample's first turn: its prompt, then its completion's ids, logprobs and versions. */
function firstTurn(sample: {
  mask: number[];
  token_ids: number[];
  logprobs: number[];
  policy_versions: number[];
}) {
  const start = sample.mask.indexOf(1);
  let end = start;
  while (sample.mask[end] === 1) end++;
  return {
    prompt: sample.token_ids.slice(0, start),
    ids: sample.token_ids.slice(start, end),
    logprobs: sample.logprobs.slice(start, end),
    versions: sample.policy_versions.slice(start, end),
    promptVersions: sample.policy_versions.slice(0, start),
  };
}

async function expectContinuedExactly(
  run: string,
  cut: HostAnswer,
  continued: HostAnswer,
  kept: number,
) {
  // Some tokens streamed before the cut, and the continuation sampled the rest.
  expect(kept).toBeGreaterThan(0);
  expect(kept).toBeLessThan(cut.token_ids.length);
  // The continuation's prompt: the original prompt's ids, then the k kept ids.
  expect(continued.prompt_token_ids).toEqual([
    ...cut.prompt_token_ids,
    ...cut.token_ids.slice(0, kept),
  ]);
  const group = await leaseOne(run);
  const episode = itemAt(group.episodes);
  expect(episode.token_mode).toBe("exact");
  expect(episode.policy_version_min).toBe(0);
  expect(episode.policy_version_max).toBe(1);
  const turn = firstTurn(itemAt(episode.samples));
  expect(turn.prompt).toEqual(cut.prompt_token_ids);
  expect(turn.ids).toEqual([...cut.token_ids.slice(0, kept), ...continued.token_ids]);
  expect(float32(turn.logprobs)).toEqual(
    float32([...cut.logprobs.slice(0, kept), ...continued.logprobs]),
  );
  expect(turn.versions).toEqual([
    ...Array(kept).fill(0),
    ...Array(continued.token_ids.length).fill(1),
  ]);
  expect(new Set(turn.promptVersions)).toEqual(new Set([-1]));
  // Every later turn was sampled whole by version 1.
  const sample = itemAt(episode.samples);
  const later = sampledOf(sample, sample.policy_versions).slice(turn.ids.length);
  expect(later.every((v) => v === 1)).toBe(true);
}

describe("a token-in turn cut by an interrupting sync", () => {
  it("continues from the k tokens it kept: prompt + k ids, exact sample, old version then new", async () => {
    const run = `cont-${crypto.randomUUID()}`;
    const { cut, continued, episode } = await interruptFirstTurn(run, "tokens");
    const kept = episode.kept_tokens;
    await expectContinuedExactly(run, cut, continued, kept);
    expect(episode.discarded_tokens).toBe(0);
    const [syncs] = await d1<{ kept_tokens: number; discarded_tokens: number }>(
      "SELECT kept_tokens, discarded_tokens FROM run_syncs WHERE run_id = ?",
      run,
    );
    expect(syncs).toEqual({ kept_tokens: kept, discarded_tokens: 0 });
  });

  it("changes nothing when its object is evicted between the interrupt and the resume", async () => {
    const run = `cont-evict-${crypto.randomUUID()}`;
    const { cut, continued, episode, model } = await interruptFirstTurn(run, "tokens", {
      whilePaused: async (id) => {
        await evictDurableObject(groupStub(id));
        await sleep(200);
      },
    });
    await expectContinuedExactly(run, cut, continued, episode.kept_tokens);
    expect(episode.redispatches).toBe(0);
    // The cut request, the continuation, and one a later turn: nothing sent twice.
    expect(await simulatorRequests(model)).toBe(episode.turns + 1);
  });

  it("starts again from exactly the kept tokens when the continuation is lost with its instance", async () => {
    const run = `cont-lost-${crypto.randomUUID()}`;
    const { cut, continued, episode } = await interruptFirstTurn(run, "tokens", {
      whilePaused: async (id) => {
        await evictDurableObject(groupStub(id));
        // What storage holds when an instance dies with the continuation in flight: the turn
        // marked sent, its kept tokens beside it. (Graceful eviction drains in-flight work, so
        // the loss itself cannot be staged here; reliability/policy-crash.ts kills workerd.)
        const marked = await runInDurableObject(groupStub(id), (_instance, state) => {
          state.storage.sql.exec("UPDATE generations SET state = 'sent' WHERE state = 'queued'");
          return Number(
            state.storage.sql
              .exec("SELECT COUNT(*) AS n FROM interrupted_turns WHERE open = 1")
              .one().n,
          );
        });
        expect(marked).toBe(1);
      },
    });
    // The continuation lost with the instance was sent again, from the same kept tokens.
    expect(episode.redispatches).toBe(1);
    await expectContinuedExactly(run, cut, continued, episode.kept_tokens);
  });
});

describe("a chat turn cut by an interrupting sync", () => {
  it("restarts, its tokens counted as discarded, and its sample is the restart's alone", async () => {
    const run = `cont-chat-${crypto.randomUUID()}`;
    const { cut, continued, episode } = await interruptFirstTurn(run, "chat");
    expect(episode.kept_tokens).toBe(0);
    expect(episode.discarded_tokens).toBeGreaterThan(0);
    expect(episode.discarded_tokens).toBeLessThan(cut.token_ids.length);
    // Sent again from the same prompt; the sample holds what the restart sampled, at version 1.
    expect(continued.prompt_token_ids).toEqual(cut.prompt_token_ids);
    const turn = firstTurn(itemAt(itemAt((await leaseOne(run)).episodes).samples));
    expect(turn.ids).toEqual(continued.token_ids);
    expect(new Set(turn.versions)).toEqual(new Set([1]));
  });
});
