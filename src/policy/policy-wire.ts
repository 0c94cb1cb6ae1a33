/**
 * The policy's wire shapes, once: what a trainer sends to POST /v1/runs/:id/policy, and what
 * that and GET /v1/runs/:id/policy answer. The route validates with them, the views build to
 * them (views/policy-view.ts), and the TypeScript client takes its types from them.
 */
import { z } from "zod";

export const PolicyRequestSchema = z
  .strictObject({
    version: z
      .number()
      .int()
      .min(0)
      .max(2 ** 31 - 1),
    /** How many versions behind a group's policy may be when it starts; null lifts the limit. */
    max_lag: z.number().int().min(0).nullable().optional(),
    /** Holds the run's new generations (a weight sync) until set false again. Absent: unchanged. */
    paused: z.boolean().optional(),
    /**
     * With `paused: true`: the generations of the run in flight are aborted at once too, and sent
     * again once it resumes, so the sync waits for no generation to finish.
     */
    interrupt: z.boolean().optional(),
  })
  .refine((body) => body.interrupt !== true || body.paused === true, {
    message:
      "interrupt: only with paused: true (an interrupt is a pause that also aborts the generations in flight)",
    path: ["interrupt"],
  });

/** A run's policy as its trainer set it (GET and POST /v1/runs/:id/policy). */
export const PolicyViewSchema = z.object({
  run_id: z.string(),
  version: z.number().int(),
  max_lag: z.number().int().nullable(),
  paused: z.boolean(),
  /** The pause also aborted the run's generations in flight. */
  interrupt: z.boolean(),
  /** Counts every update; a group keeps the latest it heard. */
  revision: z.number().int(),
  updated_at: z.string(),
});
export type PolicyView = z.infer<typeof PolicyViewSchema>;

/**
 * POST's answer: the policy, the run's running groups, and how many of them were told of it at
 * once (the rest follow within a heartbeat).
 */
export const PolicySetSchema = PolicyViewSchema.extend({
  groups_running: z.number().int(),
  groups_notified: z.number().int(),
  /**
   * Generations of the run still in flight once its running groups took the update: 0 after
   * an interrupt (the aborts are sent); after a plain pause, those still finishing. Null when
   * some running group could not be told (it follows within a heartbeat): unknown, not 0.
   */
  in_flight_generations: z.number().int().nullable(),
});
export type PolicySet = z.infer<typeof PolicySetSchema>;
