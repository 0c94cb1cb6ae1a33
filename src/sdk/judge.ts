/**
 * What a score hook may ask a judge model, and what it answers. The SDK defines only the
 * contract: the engine's judge (src/judges/) calls an OpenAI-compatible host with a deadline,
 * retries, and records every call against the episode being scored. A judge that fails for good
 * throws `JudgeError`, and the episode ends `judge_error` (never a score of 0): nothing is learnt
 * from a grade nobody gave.
 */
import type { ChatMessage } from "./types";

/** The judge's answer, parsed strictly from one JSON object `{"score": <0..1>, "reason": "..."}`. */
export interface JudgeVerdict {
  score: number;
  reason: string;
}

export interface JudgeRequest {
  /** The rubric component this grade is for: each call is recorded under it. */
  component: string;
  /** The conversation sent to the judge; it must ask for the JSON object above. */
  messages: readonly ChatMessage[];
  /** Another judge model than the configured one (`JUDGE_MODEL`), for this component. */
  model?: string;
}

export interface Judge {
  grade(request: JudgeRequest): Promise<JudgeVerdict>;
}

/** The judge could not give a grade: the episode ends `judge_error`, retryable by a re-score. */
export class JudgeError extends Error {
  override name = "JudgeError";
}

/** What a score hook is handed besides the example and the episode. */
export interface ScoreContext {
  /** The judge for this episode: its calls are recorded against it. */
  judge: Judge;
}

/** A judge that refuses every call: scoring where no judge is configured (a local check). */
export const NO_JUDGE: Judge = {
  async grade(request: JudgeRequest): Promise<JudgeVerdict> {
    throw new JudgeError(`no judge is configured here (component "${request.component}")`);
  },
};

/** Score contexts for `n` episodes with no judge. */
export const unjudgedContexts = (n: number): ScoreContext[] =>
  Array.from({ length: n }, () => ({ judge: NO_JUDGE }));
