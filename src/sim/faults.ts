/**
 * Which fault, if any, one request meets: the model name's directives first (a counted fault,
 * one on every try, chaos), then the simulator's global rates.
 */

import type { Random } from "../utils/random";
import type { Directives, Fault } from "./directives";

export interface FaultRates {
  /** Share of requests answered with one of `errorStatuses`. */
  errorRate: number;
  errorStatuses: number[];
  hangRate: number;
  malformedRate: number;
  cutRate: number;
  resetRate: number;
}

export const NO_FAULTS: FaultRates = {
  errorRate: 0,
  errorStatuses: [503],
  hangRate: 0,
  malformedRate: 0,
  cutRate: 0,
  resetRate: 0,
};

const CHAOS: readonly Fault[] = [
  "error_500",
  "error_503",
  "error_429",
  "reset",
  "malformed",
  "cut",
];

/**
 * `attempt` counts tries of the same request (from 1), `turn` the assistant messages already in
 * its transcript. The rolls use `Math.random()`, so a seeded request plays the same whatever
 * faults are about; only an error's status is drawn from `random`, and that answer plays nothing.
 */
export function chooseFault(
  directives: Directives,
  rates: FaultRates,
  attempt: number,
  turn: number,
  random: Random,
): Fault | null {
  for (const { fault, times, atTurn } of directives.failFirst) {
    if (attempt <= times && (atTurn === undefined || atTurn === turn)) return fault;
  }
  if (directives.always !== null) return directives.always;
  if (directives.chaos > 0 && Math.random() < directives.chaos)
    return CHAOS[Math.floor(Math.random() * CHAOS.length)] ?? "error_503";
  const roll = Math.random();
  let edge = rates.errorRate;
  if (roll < edge)
    return `error_${rates.errorStatuses[Math.floor(random() * rates.errorStatuses.length)] ?? 503}`;
  for (const [fault, rate] of [
    ["hang", rates.hangRate],
    ["malformed", rates.malformedRate],
    ["cut", rates.cutRate],
    ["reset", rates.resetRate],
  ] as const) {
    edge += rate;
    if (roll < edge) return fault;
  }
  return null;
}
