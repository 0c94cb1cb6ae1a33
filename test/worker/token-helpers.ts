/** Token-exact tests' helpers: what the simulator sent, leases with tokens, D1 queries. */

import { evictDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { expect } from "vitest";
import { generationSeed, SamplingSchema } from "../../src/rollout/group-spec";
import { api, groupStub, type Json } from "./helpers";

export interface HostAnswer {
  prompt_token_ids: number[];
  token_ids: number[];
  logprobs: number[];
}

/** What the simulator sent for one generation (its `record` directive keeps it, by seed). */
export async function hostAnswer(model: string, seed: number | undefined): Promise<HostAnswer> {
  const url = new URL(`${env.INFERENCE_BASE_URL.replace(/\/v1$/, "")}/sim/answers`);
  url.searchParams.set("model", model);
  url.searchParams.set("seed", String(seed));
  const response = await fetch(url);
  if (!response.ok) throw new Error(`no recorded answer for ${model} seed ${seed}`);
  return response.json();
}

export async function lease(runId: string, extra: object = {}): Promise<Json> {
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

export const d1 = (query: string, ...params: unknown[]) =>
  env.DB.prepare(query)
    .bind(...params)
    .all<Json>()
    .then((r) => r.results);

export const float32 = (values: readonly number[]) => values.map((v) => Math.fround(v));

/** The host's answers for every sampled turn of every episode of a group. */
export async function answersOf(
  group: Json,
  model: string,
  sampling: object,
): Promise<HostAnswer[][]> {
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
export function expectExact(episode: Json, answers: HostAnswer[]) {
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

/**
 * Waits until every unfinished episode of the group is parked on a Retry-After, then evicts its
 * object: the next instance must resume mid-episode from storage alone.
 */
export async function evictWhileParked(groupId: string): Promise<void> {
  for (;;) {
    const live = await (await api(`/v1/groups/${groupId}`)).json<Json>();
    expect(live.status).toBe("running");
    const open = live.episodes.filter((e: Json) => e.state === "generating");
    if (open.length > 0 && open.every((e: Json) => e.retry_at !== null)) break;
    await new Promise((r) => setTimeout(r, 50));
  }
  await evictDurableObject(groupStub(groupId));
}
