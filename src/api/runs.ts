/** A run's progress at a glance, and its policy: what the trainer says it is training now. */
import { Hono } from "hono";
import { evalResults, runPacing, runProgress } from "../db/queries";
import {
  markIdle,
  readRunPolicy,
  recordSync,
  runningGroupIds,
  setRunPolicy,
} from "../db/run-policies";
import { askEach, pushToRunningGroups } from "../policy/fan-out";
import { knownPolicy } from "../policy/known-policy";
import { PolicyRequestSchema } from "../policy/policy-wire";
import { rolloutGroup } from "../rollout/bindings";
import { policySetView, policyView } from "../views/policy-view";
import { runProgressView } from "../views/responses";
import type { AuthVariables } from "./auth";
import { ApiError } from "./errors";
import { validated } from "./validated";

export const runRoutes = new Hono<{ Bindings: Env; Variables: AuthVariables }>()
  .get("/runs/:id", async (c) => {
    const id = c.req.param("id");
    const [progress, pacing, policy, running] = await Promise.all([
      runProgress(c.env.DB, id),
      runPacing(c.env.DB, id),
      readRunPolicy(c.env.DB, id),
      runningGroupIds(c.env.DB, id),
    ]);
    // A run is its groups, or a policy its trainer set before any: with neither, a typo.
    if (progress.length === 0 && policy === null)
      throw new ApiError(
        404,
        "not_found",
        `no run "${id}": no group was started with run_id "${id}" and no trainer set its policy`,
      );
    const asked = await askEach(running, (groupId) =>
      rolloutGroup(c.env, groupId).inFlightGenerations(),
    );
    if (policy?.paused === true && asked.inFlight === 0) await markIdle(c.env.DB, id);
    return c.json(runProgressView(id, progress, pacing, policy, asked.inFlight));
  })
  .get("/runs/:id/evals", async (c) => {
    const id = c.req.param("id");
    const [rows, progress] = await Promise.all([
      evalResults(c.env.DB, id),
      runProgress(c.env.DB, id),
    ]);
    if (progress.length === 0)
      throw new ApiError(
        404,
        "not_found",
        `no run "${id}": no group was started with run_id "${id}"`,
      );
    return c.json(rows);
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
  .post("/runs/:id/policy", validated("json", PolicyRequestSchema), async (c) => {
    const id = c.req.param("id");
    const body = c.req.valid("json");
    const set = await setRunPolicy(
      c.env.DB,
      id,
      {
        version: body.version,
        maxLag: body.max_lag,
        paused: body.paused,
        interrupt: body.interrupt,
      },
      c.get("principal"),
    );
    if (!set.ok)
      throw new ApiError(
        409,
        "policy_version_regressed",
        `version: run "${id}" is at policy version ${set.current.version}; a run's version only moves forward (start a new run to train from an older checkpoint)`,
      );
    const known = knownPolicy(set.policy);
    const pushed = await pushToRunningGroups(c.env.DB, id, (groupId) =>
      rolloutGroup(c.env, groupId).policyChanged(known),
    );
    if (body.paused === true) await recordSync(c.env.DB, set.policy, pushed.inFlight);
    return c.json(policySetView(set.policy, pushed));
  });
