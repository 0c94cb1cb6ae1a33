/**
 * A call to the host that did not produce an action, settled: parked behind the host's
 * Retry-After, queued to be sent again once after a timeout, or the end of the episode.
 */
import {
  type GenerationFailure,
  type GenerationOutcome,
  refusesTokenFields,
} from "../../inference/client";
import type { GroupRuntime } from "../group-runtime";
import { END, type FailureReason, failed } from "../outcomes";
import { type AttemptResult, ENDED, PARKED, QUEUED } from "./results";

/** The inference client's failures, as the episode's end reasons. */
const INFERENCE_FAILURE: Record<GenerationFailure, FailureReason> = {
  rejected: END.inference_rejected,
  unavailable: END.inference_unavailable,
  malformed: END.inference_malformed,
};

/** Where one attempt stood: its deadline, and the length of a window. */
export interface AttemptWindow {
  deadlineAt: number;
  windowMs: number;
}

/** One retry after a first timeout; a second one fails the episode. */
function timedOut(
  rt: GroupRuntime,
  idx: number,
  attempts: number,
  window: AttemptWindow,
): AttemptResult {
  if (rt.store.generations.timedOut(idx, attempts) < 2) return QUEUED;
  const late = `two attempts ran past the ${window.windowMs / 1000} s deadline`;
  rt.store.finish(idx, failed(END.generation_timeout, late));
  return ENDED;
}

export function settle(
  rt: GroupRuntime,
  idx: number,
  outcome: Exclude<GenerationOutcome, { kind: "ok" }>,
  window: AttemptWindow,
): AttemptResult {
  const { store } = rt;
  switch (outcome.kind) {
    case "retry_later": {
      const retryAt = Date.now() + outcome.delayMs;
      if (retryAt < window.deadlineAt) {
        store.parkGeneration(idx, retryAt, outcome.attempts);
        return PARKED;
      }
      // Waiting would outlast the deadline: that is a timeout, handled as one.
      return timedOut(rt, idx, outcome.attempts, window);
    }
    case "timeout":
      // The output of a timed-out attempt is dropped: it never reaches the environment.
      return timedOut(rt, idx, outcome.attempts, window);
    case "context_exceeded":
      store.finish(idx, {
        state: "truncated",
        reason: END.context_length,
        detail: outcome.message,
      });
      return ENDED;
    case "failed": {
      const refused = refusesTokenFields(outcome.message)
        ? rt.generation.tokens.onRefused(outcome.message)
        : null;
      store.finish(idx, refused ?? failed(INFERENCE_FAILURE[outcome.failure], outcome.message));
      return ENDED;
    }
  }
}
