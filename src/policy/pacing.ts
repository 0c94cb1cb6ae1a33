/**
 * What a producer paces itself by (`pacing` in GET /v1/runs/:id; `edgeroll run --max-ahead N`
 * keeps `ahead` at most N): the run's groups in flight, and its landed groups waiting for the
 * trainer, by the version leases filter on. The rule is here once. Groups more than max_lag
 * behind will not be leased by a trainer that keeps to it: they are listed by version, but not
 * counted as feeding the trainer. The SQL view `run_policy_state` mirrors it in its
 * `groups_unleased` (migrations/0014_run_policy_state_mirrors_pacing.sql).
 */
import type { PacingRow } from "../db/queries";
import type { KnownPolicy } from "./known-policy";
import { beyondMaxLag } from "./lag";

/** The run's pacing, from its rows of the `run_pacing` view and its policy (null: none set). */
export function pacing(
  rows: readonly PacingRow[],
  policy: Pick<KnownPolicy, "version" | "maxLag"> | null,
) {
  const inFlight = rows.reduce((n, r) => n + r.in_flight, 0);
  const unleased = rows.reduce(
    (n, r) => n + (policy !== null && beyondMaxLag(policy, r.version) ? 0 : r.unleased),
    0,
  );
  return {
    in_flight: inFlight,
    unleased,
    ahead: inFlight + unleased,
    by_version: rows.map((r) => ({
      policy_version: r.version,
      in_flight: r.in_flight,
      unleased: r.unleased,
    })),
  };
}

export type Pacing = ReturnType<typeof pacing>;
