/**
 * A host's health as the fleet sees it, a circuit breaker: `healthy` until `ejectAfter`
 * consecutive failures (no answer, a 5xx, a timeout) eject it; an ejected host is probed on a
 * timer and, once a probe answers, is `probing`: it takes new episodes again, and its first
 * failure ejects it at once; its first success, or a second probe answered a period later with
 * no failure between (an idle fleet sends it nothing to succeed at), makes it `healthy`. A
 * generation answered after the ejection readmits it as a probe would. "Consecutive" is judged across
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

/** A probe of an ejected host answered: it takes episodes again, on trial. */
export function readmitted(health: HostHealth, at: number): HostHealth {
  if (health.state !== "ejected") return health;
  return { ...health, state: "probing", failures: 0, ejectedAt: null, lastOkAt: at };
}

/** A probe answered at `at`: an ejected host goes on trial, one on trial is healthy again. */
export function probed(health: HostHealth, at: number): HostHealth {
  if (health.state === "ejected") return readmitted(health, at);
  if (health.state === "probing") return { ...health, state: "healthy", failures: 0, lastOkAt: at };
  return health;
}
