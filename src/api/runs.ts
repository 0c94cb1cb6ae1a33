/** A run's progress at a glance, and its policy: what the trainer says it is training now. */
import { zValidator } from "@hono/zod-validator";
import { Hono } from "hono";
import pMap from "p-map";
import { z } from "zod";
import { runPacing, runProgress } from "../db/queries";
import {
  knownPolicy,
  type RunPolicy,
  readRunPolicy,
  runningGroupIds,
  setRunPolicy,
} from "../db/run-policies";
import { rolloutGroup } from "../rollout/bindings";
import { policyView, runProgressView } from "../views/responses";
import type { AuthVariables } from "./auth";
import { ApiError, invalidRequest } from "./errors";

const PolicyRequestSchema = z.strictObject({
  version: z
    .number()
    .int()
    .min(0)
    .max(2 ** 31 - 1),
  /** How many versions behind a group's policy may be when it starts; null lifts the limit. */
  max_lag: z.number().int().min(0).nullable().optional(),
  paused: z.boolean().optional(),
});

/** Group objects told of a change at once; a run's running groups can be many. */
const PUSH_CONCURRENCY = 16;
/**
 * Groups told per POST: each push is a subrequest, and a request may make 1,000 of them on the
 * older Workers plans (10,000 now). Groups beyond it learn of the change on their heartbeat.
 */
export const MAX_PUSHES = 900;

/**
 * Tells each running group of the run about the change before answering, so that once the POST
 * returns a pause holds every new generation and a bump is what the next turns record. A group
 * that cannot be reached (it is restarting), or one past MAX_PUSHES, reads the policy on its
 * next heartbeat instead.
 */
async function pushToRunningGroups(
  env: Env,
  policy: RunPolicy,
): Promise<{ running: number; told: number }> {
  const running = await runningGroupIds(env.DB, policy.runId);
  const ids = running.slice(0, MAX_PUSHES);
  const known = knownPolicy(policy);
  const told = await pMap(
    ids,
    (id) =>
      rolloutGroup(env, id)
        .policyChanged(known)
        .then(
          () => true,
          () => false,
        ),
    { concurrency: PUSH_CONCURRENCY },
  );
  return { running: running.length, told: told.filter(Boolean).length };
}

export const runRoutes = new Hono<{ Bindings: Env; Variables: AuthVariables }>()
  .get("/runs/:id", async (c) => {
    const id = c.req.param("id");
    const [progress, pacing, policy] = await Promise.all([
      runProgress(c.env.DB, id),
      runPacing(c.env.DB, id),
      readRunPolicy(c.env.DB, id),
    ]);
    return c.json(runProgressView(id, progress, pacing, policy));
  })
  .get("/runs/:id/policy", async (c) => {
    const id = c.req.param("id");
    const policy = await readRunPolicy(c.env.DB, id);
    if (policy === null)
      throw new ApiError(
        404,
        "not_found",
        `run "${id}" has no policy: its trainer has not set one (POST /v1/runs/${id}/policy)`,
      );
    return c.json(policyView(policy));
  })
  .post(
    "/runs/:id/policy",
    zValidator("json", PolicyRequestSchema, (result) => {
      if (!result.success) throw invalidRequest(result.error);
    }),
    async (c) => {
      const id = c.req.param("id");
      const body = c.req.valid("json");
      const set = await setRunPolicy(
        c.env.DB,
        id,
        { version: body.version, maxLag: body.max_lag, paused: body.paused },
        c.get("principal"),
      );
      if (!set.ok)
        throw new ApiError(
          409,
          "policy_version_regressed",
          `version: run "${id}" is at policy version ${set.current.version}; a run's version only moves forward (start a new run to train from an older checkpoint)`,
        );
      const pushed = await pushToRunningGroups(c.env, set.policy);
      // Fewer told than running: the rest follow within a heartbeat (HEARTBEAT_S); a trainer
      // about to sync weights waits that long first.
      return c.json({
        ...policyView(set.policy),
        groups_running: pushed.running,
        groups_notified: pushed.told,
      });
    },
  );
