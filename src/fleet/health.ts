/**
 * A host's health as the fleet sees it, a circuit breaker: `healthy` until `ejectAfter`
 * consecutive failures (no answer, a 5xx, a timeout) eject it; an ejected host is probed on a
 * timer and, once a probe answers, is `probing`: it takes new episodes again, and its first
 * failure (or a probe it fails) ejects it at once; its first success makes it `healthy`, and so
 * does a probe answered a period later while no episode is on it (an idle fleet sends it nothing
 * to succeed at; one with episodes waits for their answers, since a host can answer `/models`
 * and hang on generation). A generation answered after the ejection readmits it as a probe
 * would. "Consecutive" is judged across
 * every group: each report carries when its group last saw the host answer, so a success anyone
 * saw after a failure clears it, with no report sent per success.
 */

export type HealthState = "healthy" | "ejected" | "probing";

export interface HostHealth {
  state: HealthState;
  /** Failures seen after `lastOkAt`. */
  failures: number;
  /** The latest time any group (or a probe) saw the host answer; 0 if none has. */
  lastOkAt: number;
  /** When it was ejected (null while it is not). */
  ejectedAt: number | null;
  lastError: string | null;
}

export const HEALTHY: HostHealth = {
  state: "healthy",
  failures: 0,
  lastOkAt: 0,
  ejectedAt: null,
  lastError: null,
};

/**
 * Someone saw the host answer at `at`: a probing host is healthy again, and an ejected one that
 * answered after its ejection is on trial, as if a probe had answered.
 */
export function answered(health: HostHealth, at: number): HostHealth {
  if (at <= health.lastOkAt) return health;
  if (health.state === "ejected")
    return health.ejectedAt !== null && at > health.ejectedAt
      ? readmitted(health, at)
      : { ...health, lastOkAt: at };
  return { ...health, state: "healthy", failures: 0, lastOkAt: at };
}

/**
 * A call failed at `at`, its group having last seen the host answer at `okAt`. Returns the new
 * health; `ejected` is true when this report ejected it.
 */
export function failed(
  health: HostHealth,
  report: { at: number; okAt: number; error: string },
  ejectAfter: number,
): { health: HostHealth; ejected: boolean } {
  // Out already: a failure keeps it out (even after an answer its group saw since), and is not a
  // new ejection to tell the groups about.
  if (health.state === "ejected")
    return {
      health: {
        ...health,
        lastOkAt: Math.max(health.lastOkAt, report.okAt),
        lastError: report.error,
      },
      ejected: false,
    };
  const seen = answered(health, report.okAt);
  // A failure older than the last answer anyone saw is not part of a streak.
  if (report.at <= seen.lastOkAt) return { health: seen, ejected: false };
  const failures = seen.failures + 1;
  const eject = seen.state === "probing" || (seen.state === "healthy" && failures >= ejectAfter);
  if (!eject) return { health: { ...seen, failures, lastError: report.error }, ejected: false };
  return {
    health: { ...seen, state: "ejected", failures, ejectedAt: report.at, lastError: report.error },
    ejected: true,
  };
}

/** An ejected host answered (a probe, or a generation after its ejection): on trial again. */
export function readmitted(health: HostHealth, at: number): HostHealth {
  if (health.state !== "ejected") return health;
  return { ...health, state: "probing", failures: 0, ejectedAt: null, lastOkAt: at };
}

/**
 * A probe answered at `at`: an ejected host goes on trial; one on trial is healthy once a
 * probe period has passed with no failure and nothing of its own to answer (`idle`).
 */
export function probed(
  health: HostHealth,
  at: number,
  trial: { idle: boolean; periodMs: number },
): HostHealth {
  if (health.state === "ejected") return readmitted(health, at);
  if (health.state === "probing" && trial.idle && at - health.lastOkAt >= trial.periodMs)
    return { ...health, state: "healthy", failures: 0, lastOkAt: at };
  return health;
}

/** A probe failed: a host on trial is out again; an ejected one stays out, the reason kept. */
export function probeFailed(health: HostHealth, at: number, error: string): HostHealth {
  if (health.state === "probing")
    return {
      ...health,
      state: "ejected",
      failures: health.failures + 1,
      ejectedAt: at,
      lastError: error,
    };
  return { ...health, lastError: error };
}
