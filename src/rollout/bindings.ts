/**
 * Every stub of another object or service the Worker calls, looked up in one place.
 *
 * Workers' RPC types (`Rpc.Stub`) rewrite each method's arguments and result into what the
 * structured clone can carry, and in doing so turn every field typed `unknown` — our JSON:
 * example metadata, rewards' metadata, step metadata — into `never`. The values themselves
 * cross intact. So each stub is cast once, here, to the interface its class implements, and
 * nowhere else: a class that stops implementing its interface fails to compile at its own
 * `implements` clause.
 */
import type { ScoreWorkerApi } from "../env-workers/score-worker";
import type { StepWorkerApi } from "../env-workers/step-worker";
import type { FleetApi } from "../fleet/fleet-api";
import type { RolloutGroupApi } from "./group-api";
import type { LanderApi } from "./landing";

/** The group's own object: one per group id. */
export function rolloutGroup(env: Env, groupId: string): RolloutGroupApi {
  return env.ROLLOUT_GROUP.get(env.ROLLOUT_GROUP.idFromName(groupId)) as unknown as RolloutGroupApi;
}

/** The one lander that group-commits every finished group to D1. */
export function lander(env: Env): LanderApi {
  return env.LANDER.get(env.LANDER.idFromName("global")) as unknown as LanderApi;
}

/** The fleet scheduler: one global object, unless a test wants one of its own. */
export function fleetScheduler(env: Env, name = "global"): FleetApi {
  return env.FLEET.get(env.FLEET.idFromName(name)) as unknown as FleetApi;
}

export function stepWorker(env: Env): StepWorkerApi {
  return env.STEP_WORKER as unknown as StepWorkerApi;
}

export function scoreWorker(env: Env): ScoreWorkerApi {
  return env.SCORE_WORKER as unknown as ScoreWorkerApi;
}
