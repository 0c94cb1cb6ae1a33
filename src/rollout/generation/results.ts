/** What became of an episode's generation, as one discriminated result. */
import type { ChatMessage } from "../../sdk";

export type GenerationResult =
  /** The host's action is appended to the transcript: the environment steps it next. */
  | { kind: "recorded"; action: ChatMessage }
  /** The generation waits on a timer (the host's Retry-After); its driver stops until then. */
  | { kind: "parked" }
  /** The episode ended, its status and reason recorded. */
  | { kind: "ended" }
  /** The group was cancelled as stale meanwhile; nothing was recorded. */
  | { kind: "cancelled" };

/** One attempt's result: one of the above, or queued to be sent again (after a first timeout). */
export type AttemptResult = GenerationResult | { kind: "queued" };

export const ENDED: GenerationResult = { kind: "ended" };
export const PARKED: GenerationResult = { kind: "parked" };
export const CANCELLED: GenerationResult = { kind: "cancelled" };
export const QUEUED: AttemptResult = { kind: "queued" };
