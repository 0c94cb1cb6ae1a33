/**
 * What `POST /v1/runs/:run_id/producer` asks: a dataset in DATASETS, how many times to cover it
 * and in what order, how far ahead of the trainer to run, and what to do with a group that
 * carries no signal. Every other field is a group request's (`sampling`, `prompt_text`, `kind`,
 * ...), checked as `POST /v1/groups` checks it, against the dataset's first example.
 */
import { z } from "zod";
import { PoolOptionsSchema } from "./pool-sampler";

export const ProducerRequestSchema = z
  .object({
    env: z.string().min(1).max(128),
    /** A dataset uploaded with `POST /v1/datasets/:name`. */
    dataset: z
      .string()
      .regex(/^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/, "a dataset name: letters, digits, . _ -"),
    group_size: z.number().int().min(1).max(256),
    /** Passes over the dataset; each example gets one group per pass (plus its resamples). */
    epochs: z.number().int().min(1).max(1000).default(1),
    /** Each pass in its own seeded order; absent, the dataset's order every pass. */
    shuffle_seed: z
      .number()
      .int()
      .min(0)
      .max(2 ** 31 - 1)
      .optional(),
    /** Start a group only while the run's groups in flight plus landed-unleased are fewer. */
    max_ahead: z.number().int().min(1).max(1_000_000).optional(),
    /** This producer's groups in flight at most (the bound when nothing else paces it). */
    max_in_flight: z.number().int().min(1).max(1024).default(32),
    /**
     * DAPO's dynamic sampling: a group that lands uniform (every episode scored the same, so no
     * GRPO signal) has its example sampled again, with a new seed, up to `max_resamples` times.
     */
    dynamic_sampling: z.strictObject({ max_resamples: z.number().int().min(0).max(64) }).optional(),
    /** `uniform`: every example every epoch; `pool`: skip what the run's history says (`pool`). */
    sampler: z.enum(["uniform", "pool"]).default("uniform"),
    pool: PoolOptionsSchema.optional(),
  })
  .catchall(z.unknown())
  .superRefine((r, ctx) => {
    const pool = r.pool;
    if (
      r.sampler === "pool" &&
      pool?.skip_solved_after === undefined &&
      pool?.skip_unsolved_after === undefined
    )
      ctx.addIssue({
        code: "custom",
        path: ["pool"],
        message:
          'sampler "pool" skips by {skip_solved_after, skip_unsolved_after}: give one or both',
      });
    if (r.sampler !== "pool" && pool !== undefined)
      ctx.addIssue({ code: "custom", path: ["pool"], message: 'only with sampler "pool"' });
  });
export type ProducerRequest = z.infer<typeof ProducerRequestSchema>;

/** The producer's own fields: everything else in the request is the groups'. */
export const PRODUCER_FIELDS = [
  "dataset",
  "epochs",
  "shuffle_seed",
  "max_ahead",
  "max_in_flight",
  "dynamic_sampling",
  "sampler",
  "pool",
] as const;

/** The group request a producer's requests share, without `example` and `run_id`. */
export function groupTemplate(request: ProducerRequest): Record<string, unknown> {
  const template: Record<string, unknown> = { ...request };
  for (const field of PRODUCER_FIELDS) delete template[field];
  return template;
}
