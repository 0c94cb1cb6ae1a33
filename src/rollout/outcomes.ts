/**
 * How the rollout records an episode's end. The states and end reasons themselves are defined
 * once, below the database (domain/episode-outcomes.ts), and re-exported here for the store,
 * the drivers, the tests and the reliability suites, which name reasons through `END`.
 */
import type { CompletedReason, FailureReason, TruncatedReason } from "../domain/episode-outcomes";

export {
  type CompletedReason,
  CompletedReasonSchema,
  END,
  type EndReason,
  EndReasonSchema,
  type EndState,
  EndStateSchema,
  type EpisodeState,
  EpisodeStateSchema,
  type FailureReason,
  FailureReasonSchema,
  TERMINAL_STATES,
  type TruncatedReason,
  TruncatedReasonSchema,
} from "../domain/episode-outcomes";

/** An episode's end, as the store records it: a failure always says what happened. */
export type EpisodeEnd =
  | { state: "completed"; reason: CompletedReason }
  | { state: "truncated"; reason: TruncatedReason; detail?: string }
  | { state: "failed"; reason: FailureReason; detail: string };

export const failed = (reason: FailureReason, detail: string): EpisodeEnd => ({
  state: "failed",
  reason,
  detail,
});
