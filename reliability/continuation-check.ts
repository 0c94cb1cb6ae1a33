/**
 * Whether each continued turn of a leased token-in run is exact: the continuation the host last
 * answered (the simulator keeps each seed's last answer) was asked with the turn's prompt plus
 * exactly the kept tokens, and the sample holds the kept tokens followed by that continuation,
 * the old version on the first and the new one after.
 */
import type { Batch } from "../src/client/edgeroll-client";
import { generationSeed, type Sampling } from "../src/rollout/group-spec";
import type { RecordedAnswer } from "../src/sim/host-ledger";
import type { EncodedSample } from "../src/tokens/sample-encoding";

/** A sample as JSON lists (the lease's default encoding). */
type JsonSample = Extract<EncodedSample, { token_ids: number[] }>;

const isJson = (sample: EncodedSample): sample is JsonSample => Array.isArray(sample.token_ids);

export interface ContinuationCheck {
  /** Episodes with kept tokens. */
  continued: number;
  /** Of those, how many continued from exactly what they kept, with an exact sample. */
  exact: number;
  /** What the first inexact one showed, if any. */
  problem: string | null;
}

/** Each sampled run of a sample (one per turn): where its completion starts and ends. */
function completions(sample: JsonSample): { start: number; end: number }[] {
  const runs: { start: number; end: number }[] = [];
  for (let i = 0; i < sample.mask.length; i++) {
    if (sample.mask[i] !== 1) continue;
    if (i > 0 && sample.mask[i - 1] === 1) (runs.at(-1) as { end: number }).end = i + 1;
    else runs.push({ start: i, end: i + 1 });
  }
  return runs;
}

const same = (a: readonly number[], b: readonly number[]) =>
  a.length === b.length && a.every((x, i) => x === b[i]);

export async function checkContinuations(
  batch: Batch,
  /** The sampling a group was started with, by its example's id. */
  samplingOf: (exampleId: string) => Sampling,
  kept: (episodeId: string) => Promise<number>,
  answer: (seed: number | undefined) => Promise<RecordedAnswer>,
): Promise<ContinuationCheck> {
  let continued = 0;
  let exact = 0;
  let problem: string | null = null;
  for (const group of batch.groups)
    for (const episode of group.episodes) {
      const sampling = samplingOf(group.example.id);
      const k = await kept(episode.episode_id);
      if (k === 0) continue;
      continued++;
      const fail = (why: string) => {
        problem ??= `${episode.episode_id}: ${why}`;
      };
      const samples = (episode.samples ?? []).filter(isJson);
      // The cut turn: the one whose tokens two versions sampled.
      const found = samples.flatMap((sample) =>
        completions(sample).flatMap((run, r) => {
          const versions = new Set(sample.policy_versions.slice(run.start, run.end));
          return versions.size > 1 ? [{ sample, run, turn: sample.turns[0] + r }] : [];
        }),
      );
      const cut = found[0];
      if (found.length !== 1 || cut === undefined) {
        fail(`${found.length} turns sampled by two versions, not one`);
        continue;
      }
      const { sample, run, turn } = cut;
      const host = await answer(generationSeed(sampling, episode.index, turn));
      const ids = sample.token_ids;
      const versions = sample.policy_versions;
      if (!same(host.prompt_token_ids, ids.slice(0, run.start + k)))
        fail(`the continuation's prompt is not the turn's prompt plus the ${k} kept tokens`);
      else if (!same(host.token_ids, ids.slice(run.start + k, run.end)))
        fail("the sample's tokens after the kept ones are not the continuation's");
      else if (!versions.slice(run.start, run.start + k).every((v) => v === versions[run.start]))
        fail("the kept tokens carry more than one version");
      else if (!versions.slice(run.start + k, run.end).every((v) => v === versions[run.end - 1]))
        fail("the continuation's tokens carry more than one version");
      else exact++;
    }
  return { continued, exact, problem };
}
