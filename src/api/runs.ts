/** A run's progress at a glance, and its policy: what the trainer says it is training now. */
import { Hono } from "hono";
import { anyPriced, configFrom } from "../config";
import { BudgetRequestSchema } from "../costs/budget";
import { evalResults, runPacing, runProgress } from "../db/queries";
import { NO_BUDGET, readBudget, writeBudget } from "../db/run-budgets";
import { markIdle, readRunPolicy, recordSync, setRunPolicy } from "../db/run-policies";
import { pushToRunningGroups } from "../policy/fan-out";
import { knownPolicy } from "../policy/known-policy";
import { PolicyRequestSchema } from "../policy/policy-wire";
import { rolloutGroup } from "../rollout/bindings";
import { RUN_ID_PATTERN, RUN_ID_RULE } from "../rollout/group-spec";
import { budgetView } from "../views/cost-view";
import { policySetView, policyView } from "../views/policy-view";
import { runProgressView } from "../views/responses";
import type { AuthVariables } from "./auth";
import { ApiError } from "./errors";
import { runSpend } from "./run-spend";
import { validated } from "./validated";

/** A run id as groups take it: a budget set under another could never apply. */
function runIdOf(id: string): string {
  if (!RUN_ID_PATTERN.test(id))
    throw new ApiError(400, "invalid_request", `run_id: ${RUN_ID_RULE}`);
  return id;
}

export const runRoutes = new Hono<{ Bindings: Env; Variables: AuthVariables }>()
  .get("/runs/:id", async (c) => {
    const id = c.req.param("id");
    const [progress, pacing, policy, budget] = await Promise.all([
      runProgress(c.env.DB, id),
      runPacing(c.env.DB, id),
      readRunPolicy(c.env.DB, id),
      readBudget(c.env.DB, id),
    ]);
    // A run is its groups, or a policy or budget its trainer set before any: with none, a typo.
    if (progress.length === 0 && policy === null && budget === null)
      throw new ApiError(
        404,
        "not_found",
        `no run "${id}": no group was started with run_id "${id}" and no trainer set its policy or budget`,
      );
    // One ask of each running group: what it has spent, and its generations in flight.
    const spend = await runSpend(c.env, id);
    const inFlight = spend.generationsInFlight;
    if (policy?.paused === true && inFlight === 0) await markIdle(c.env.DB, id);
    return c.json(runProgressView(id, progress, pacing, policy, inFlight, spend, budget));
  })
  .get("/runs/:id/budget", async (c) => {
    const id = runIdOf(c.req.param("id"));
    const [budget, spend] = await Promise.all([readBudget(c.env.DB, id), runSpend(c.env, id)]);
    return c.json(budgetView(id, budget ?? NO_BUDGET, spend));
  })
  .post("/runs/:id/budget", validated("json", BudgetRequestSchema), async (c) => {
    const id = runIdOf(c.req.param("id"));
    const body = c.req.valid("json");
    if (body.max_usd != null && !anyPriced(configFrom(c.env)))
      throw new ApiError(
        400,
        "invalid_request",
        "max_usd: no call of this deployment is priced (set INFERENCE_HOSTS[].price or INFERENCE_PRICE), so its spend stays $0 and the limit could never be reached",
        [{ path: "max_usd", message: "no prices configured" }],
      );
    const budget = await writeBudget(c.env.DB, id, body, c.get("principal"));
    // A producer waiting on the old budget asks again now rather than at its next check.
    // (Its method takes and answers nothing a stub rewrites, so no cast is needed to call it.)
    await c.env.PRODUCER.get(c.env.PRODUCER.idFromName(id))
      .budgetChanged()
      .catch(() => {});
    const spend = await runSpend(c.env, id);
    return c.json(budgetView(id, budget, spend));
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
    const pushed = await pushToRunningGroups(set.running, (groupId) =>
      rolloutGroup(c.env, groupId).policyChanged(known),
    );
    if (body.paused === true) await recordSync(c.env.DB, set.policy, pushed.inFlight);
    return c.json(policySetView(set.policy, pushed));
  });
