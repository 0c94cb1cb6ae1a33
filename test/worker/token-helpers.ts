/** Token-exact tests' helpers: what the simulator sent, and leases with tokens. */

import { evictDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { expect } from "vitest";
import type {
  Batch,
  GroupView,
  LeaseInput,
  StartGroupInput,
  TrainerEpisode,
  TrainerGroup,
} from "../../src/client/edgeroll-client";
import { generationSeed, SamplingSchema } from "../../src/rollout/group-spec";
import type { RecordedAnswer } from "../../src/sim/host-ledger";
import type { EncodedSample } from "../../src/tokens/sample-encoding";
import {
  groupStub,
  guessExample,
  itemAt,
  post,
  startGroup,
  untilGroup,
  waitForGroup,
} from "./helpers";

/** What the simulator sent for one generation (its `record` directive keeps it, by seed). */
export type HostAnswer = RecordedAnswer;

/** A sample as JSON lists (`token_encoding: "json"`, the default). */
export type JsonSample = Extract<EncodedSample, { token_ids: number[] }>;
/** A sample as base64 of little-endian arrays (`token_encoding: "base64"`). */
export type Base64Sample = Extract<EncodedSample, { token_ids: string }>;

/** Omit, member by member of a union (the batch format's optional parts are one). */
type OmitEach<T, K extends PropertyKey> = T extends unknown ? Omit<T, K> : never;

/** A leased episode asked with its messages and tokens: those fields are there. */
export type TokenEpisode<S = JsonSample> = OmitEach<
  TrainerEpisode,
  "messages" | "samples" | "token_mode" | "prefix_breaks"
> &
  Required<Pick<TrainerEpisode, "messages" | "token_mode" | "prefix_breaks">> & { samples: S[] };
export type TokenGroup<S = JsonSample> = Omit<TrainerGroup, "episodes"> & {
  episodes: TokenEpisode<S>[];
};
export type TokenBatch<S = JsonSample> = Omit<Batch, "groups"> & { groups: TokenGroup<S>[] };

export async function hostAnswer(model: string, seed: number | undefined): Promise<HostAnswer> {
  const url = new URL(`${env.INFERENCE_BASE_URL.replace(/\/v1$/, "")}/sim/answers`);
  url.searchParams.set("model", model);
  url.searchParams.set("seed", String(seed));
  const response = await fetch(url);
  if (!response.ok) throw new Error(`no recorded answer for ${model} seed ${seed}`);
  return response.json<HostAnswer>();
}

/** Leases the run's groups with their messages and tokens, uniform ones too. */
export async function lease<S = JsonSample>(
  runId: string,
  extra: Partial<LeaseInput> = {},
): Promise<TokenBatch<S>> {
  const request: LeaseInput = {
    max_groups: 10,
    run_id: runId,
    skip_uniform_groups: false,
    include: ["messages", "tokens"],
    ...extra,
  };
  return (await post<TokenBatch<S>>("/v1/batches/lease", request)).body;
}

/** The first group a lease of the run serves. */
export async function leaseOne(runId: string, extra: Partial<LeaseInput> = {}) {
  return itemAt((await lease(runId, extra)).groups);
}

export const float32 = (values: readonly number[]) => values.map((v) => Math.fround(v));

/** The host's answers for every sampled turn of every episode of a group. */
export async function answersOf(
  group: GroupView,
  model: string,
  sampling: object,
): Promise<HostAnswer[][]> {
  const parsed = SamplingSchema.parse({ model, ...sampling });
  return Promise.all(
    group.episodes.map((e) =>
      Promise.all(
        Array.from({ length: e.turns }, (_, turn) =>
          hostAnswer(model, generationSeed(parsed, e.index, turn)),
        ),
      ),
    ),
  );
}

/** The sampled entries of a sample's list: those its mask marks 1. */
export const sampledOf = <T>(sample: JsonSample, values: readonly T[]): T[] =>
  values.filter((_, i) => sample.mask[i] === 1);

/** Checks a leased episode's samples against the host's answers, turn by turn. */
export function expectExact(episode: TokenEpisode, answers: readonly HostAnswer[]) {
  expect(episode.token_mode).toBe("exact");
  const sampled = episode.samples.flatMap((s) => sampledOf(s, s.token_ids));
  const logprobs = episode.samples.flatMap((s) => sampledOf(s, s.logprobs));
  expect(sampled).toEqual(answers.flatMap((a) => a.token_ids));
  expect(float32(logprobs)).toEqual(float32(answers.flatMap((a) => a.logprobs)));
  // Each sample begins with the host's own prompt of its first turn.
  for (const sample of episode.samples) {
    const first = itemAt(answers, itemAt(sample.turns));
    expect(sample.token_ids.slice(0, first.prompt_token_ids.length)).toEqual(
      first.prompt_token_ids,
    );
  }
}

/**
 * Waits until every unfinished episode of the group is parked on a Retry-After, then evicts its
 * object: the next instance must resume mid-episode from storage alone.
 */
export async function evictWhileParked(groupId: string): Promise<void> {
  await untilGroup(
    groupId,
    (live) => {
      expect(live.status).toBe("running");
      const open = live.episodes.filter((e) => e.state === "generating");
      return open.length > 0 && open.every((e) => e.retry_at !== null);
    },
    "parked every open episode",
  );
  await evictDurableObject(groupStub(groupId));
}

/**
 * Lands a recorded guess-number group of two whose object is evicted mid-episode, while every
 * open episode waits out a Retry-After (the host answers each episode's third generation 503
 * with Retry-After: 1.5, a wait kept in storage). The host's answers, and the group as leased.
 */
export async function landEvictedMidEpisode(
  run: string,
  seed: number,
  extra: Partial<StartGroupInput> = {},
): Promise<{ answers: HostAnswer[][]; leased: TokenGroup }> {
  const model = "sim+fail:503:1@2+retryafter:1.5+record";
  const sampling = { temperature: 1, seed };
  const id = await startGroup({
    env: "guess-number",
    example: guessExample(run, 88),
    group_size: 2,
    run_id: run,
    sampling: { model, ...sampling },
    ...extra,
  });
  await evictWhileParked(id);
  const group = await waitForGroup(id);
  expect(group.status).toBe("landed");
  return { answers: await answersOf(group, model, sampling), leased: await leaseOne(run) };
}
