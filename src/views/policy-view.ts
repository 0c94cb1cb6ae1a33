/** The answers of GET and POST /v1/runs/:id/policy, built to the policy's wire schemas. */
import type { RunPolicy } from "../db/run-policies";
import type { Pushed } from "../policy/fan-out";
import type { PolicySet, PolicyView } from "../policy/policy-wire";

/** A run's policy as its trainer set it. */
export function policyView(policy: RunPolicy): PolicyView {
  return {
    run_id: policy.runId,
    version: policy.version,
    max_lag: policy.maxLag,
    paused: policy.paused,
    interrupt: policy.interrupt,
    revision: policy.revision,
    updated_at: policy.updatedAt,
  };
}

/**
 * The policy just set, and the push to the run's running groups. Fewer told than running: the
 * rest follow within a heartbeat (HEARTBEAT_S); a trainer about to sync weights waits that long.
 */
export function policySetView(policy: RunPolicy, pushed: Pushed): PolicySet {
  return {
    ...policyView(policy),
    groups_running: pushed.running,
    groups_notified: pushed.told,
    in_flight_generations: pushed.inFlight,
  };
}
