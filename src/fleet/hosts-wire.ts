/** The fleet on the wire: `GET /v1/hosts` and `POST /v1/hosts` (src/api/hosts.ts). */
import { z } from "zod";

export const HostUpdateSchema = z
  .strictObject({
    /** A configured host's base URL, as configured (a trailing slash is ignored). */
    url: z.string().min(1),
    /** True: no new generations go to it (in-flight ones finish); false: it takes them again. */
    paused: z.boolean().optional(),
    /**
     * With `paused: true`: its generations in flight are aborted at once too, and sent again
     * to another host (or to it once it is resumed), so its weight load waits for none of them.
     */
    interrupt: z.boolean().optional(),
    /** The policy version it serves now (after a weight sync); null: no longer declared. */
    policy_version: z
      .number()
      .int()
      .min(0)
      .max(2 ** 31 - 1)
      .nullable()
      .optional(),
  })
  .refine((b) => b.paused !== undefined || b.policy_version !== undefined, {
    message: "say what changes: paused, policy_version, or both",
    path: ["paused"],
  })
  .refine((b) => b.interrupt !== true || b.paused === true, {
    message:
      "interrupt: only with paused: true (an interrupt is a pause that also aborts the host's generations in flight)",
    path: ["interrupt"],
  });
export type HostUpdate = z.infer<typeof HostUpdateSchema>;

export const HostViewSchema = z.object({
  url: z.string(),
  name: z.string(),
  state: z.enum(["healthy", "ejected", "probing", "paused"]),
  in_flight: z.number().int(),
  eval_in_flight: z.number().int(),
  cap: z.number().int().nullable(),
  weight: z.number(),
  policy_version: z.number().int().nullable(),
  last_error: z.string().nullable(),
  waiting: z.number().int(),
});

export const HostsViewSchema = z.object({ hosts: z.array(HostViewSchema) });
export type HostsView = z.infer<typeof HostsViewSchema>;
