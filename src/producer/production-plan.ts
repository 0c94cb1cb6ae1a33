/**
 * What a producer starts, and under which idempotency key: pure functions, so a producer that
 * restarts computes the same order and the same keys, and a retried start reaches the group the
 * first attempt made rather than a second one.
 */
import { requestHash } from "../rollout/group-ids";
import { sha256Hex } from "../utils/digest";
import { seededRandom } from "../utils/random";

/**
 * The dataset positions in the order epoch `epoch` visits them: the file's order without a
 * seed, else a Fisher-Yates shuffle seeded by the seed and the epoch (each pass its own order).
 */
export function epochOrder(size: number, epoch: number, shuffleSeed?: number): number[] {
  const order = Array.from({ length: size }, (_, i) => i);
  if (shuffleSeed === undefined) return order;
  const random = seededRandom(shuffleSeed * 1_000_003 + epoch);
  for (let i = size - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    [order[i], order[j]] = [order[j] as number, order[i] as number];
  }
  return order;
}

/** One group a producer starts: an example, in an epoch, at an attempt (0, then resamples). */
export interface PlannedGroup {
  epoch: number;
  exampleId: string;
  attempt: number;
}

/**
 * What the producer's groups are asked, as a short digest: its group fields and the dataset's
 * sha256. It is in every key, so a producer started again with the same request and dataset
 * reaches the groups the last one made (a rerun resumes), and one with another request makes
 * groups of its own instead of colliding with theirs (a 409 on every start).
 */
export async function planDigest(
  template: Record<string, unknown>,
  datasetSha256: string,
): Promise<string> {
  return (await requestHash({ template, datasetSha256 })).slice(0, 12);
}

/**
 * The group's idempotency key: the plan, run, epoch, example and attempt name it, so there is one
 * group per example, epoch and attempt, however often the producer restarts. Over 255
 * characters (a long example id), the id is shortened and a hash of the whole key keeps it unique.
 */
export async function producerKey(
  runId: string,
  digest: string,
  planned: PlannedGroup,
): Promise<string> {
  const key = `producer:${runId}:${digest}:e${planned.epoch}:a${planned.attempt}:${planned.exampleId}`;
  if (key.length <= 255) return key;
  return `${key.slice(0, 190)}~${await sha256Hex(key)}`;
}

/**
 * The seed of an epoch's attempt: a new one per epoch and per attempt, so an example is sampled
 * afresh each pass and each resample rather than replayed; without a seed in the request,
 * sampling is random anyway and stays unseeded.
 */
export function attemptSeed(
  seed: number | undefined,
  epoch: number,
  attempt: number,
): number | undefined {
  if (seed === undefined) return undefined;
  return (seed + epoch * 1_000_003 + attempt * 7919) % 2 ** 31;
}
