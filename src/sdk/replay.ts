/**
 * Replay for stateful environments: the transcript is the source of truth, so state is
 * rebuilt from `messages[:-1]` and the current action is applied exactly once.
 */
import { ReplayInvariantError } from "./errors";
import { isSampledAction } from "./transcript";
import type { ChatMessage, TaskExample } from "./types";

export interface ReplayContext {
  example: TaskExample;
  /** 0-based index of the action among the sampled actions. */
  turnIndex: number;
  /**
   * True only for the action being stepped. Historical actions must be replayed purely;
   * perform external effects only when this is true, and make them idempotent on
   * `(example.id, turnIndex)` so a retried step does not repeat them.
   */
  isCurrent: boolean;
}

/** How an environment's state evolves with each sampled action. */
export interface ActionReducer<S> {
  initial(example: TaskExample): S;
  apply(state: S, action: ChatMessage, context: ReplayContext): S;
}

/** Checks invariant 1: `messages[-1]` is the sampled action `assistantResponse`. */
export function currentAction(
  messages: readonly ChatMessage[],
  assistantResponse: string,
): ChatMessage {
  const last = messages.at(-1);
  if (last === undefined || !isSampledAction(last)) {
    throw new ReplayInvariantError("messages[-1] must be the sampled action being stepped");
  }
  if (last.content !== assistantResponse) {
    throw new ReplayInvariantError(
      "messages[-1] differs from the assistant response being stepped",
    );
  }
  return last;
}

/** Folds every sampled action of a finished transcript; all of them are historical. */
export function replayHistory<S>(
  example: TaskExample,
  messages: readonly ChatMessage[],
  reducer: ActionReducer<S>,
): S {
  let state = reducer.initial(example);
  let turnIndex = 0;
  for (const message of messages) {
    if (!isSampledAction(message)) continue;
    state = reducer.apply(state, message, { example, turnIndex, isCurrent: false });
    turnIndex++;
  }
  return state;
}

export interface ReplayedStep<S> {
  /** State after the earlier actions, before the current one. */
  before: S;
  /** State after the current action was applied once. */
  after: S;
  turnIndex: number;
}

/** Rebuilds state from `messages[:-1]`, then applies the current action once. */
export function replayStep<S>(
  example: TaskExample,
  messages: readonly ChatMessage[],
  assistantResponse: string,
  reducer: ActionReducer<S>,
): ReplayedStep<S> {
  const action = currentAction(messages, assistantResponse);
  const history = messages.slice(0, -1);
  const before = replayHistory(example, history, reducer);
  const turnIndex = history.filter(isSampledAction).length;
  const after = reducer.apply(before, action, { example, turnIndex, isCurrent: true });
  return { before, after, turnIndex };
}
