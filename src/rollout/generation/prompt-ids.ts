/**
 * Token-in generation's prompt for one attempt: built with the host's tokenizer as part of the
 * attempt (under its deadline, out of its retries), and checked against the context budget
 * exactly before anything is sent.
 */
import { generationDeadlineMs } from "../../config";
import type { Grant } from "../../fleet/fleet-api";
import type { ChatMessage } from "../../sdk";
import type { GroupRuntime } from "../group-runtime";
import { END, failed } from "../outcomes";
import { admit } from "./admission";
import { type AttemptResult, CANCELLED, ENDED, QUEUED } from "./results";
import { settle } from "./settle";
import { tokenInPrompt } from "./token-prompt";

/** Backoffs up to this long are slept in memory; longer ones are parked behind a timer. */
export const INLINE_BACKOFF_MS = 1000;

/** An attempt under way: when it runs out of time, and the transport retries it has left. */
export interface Attempt {
  deadlineAt: number;
  retriesLeft: number;
}

export type PromptIds =
  /** `grant`: where it goes now (another host if the run paused meanwhile and it moved). */
  { kind: "ids"; ids: Int32Array; attempt: Attempt; grant: Grant } | AttemptResult;

/**
 * The generation is marked sent already, so an eviction while tokenizing counts as a
 * re-dispatch, as one while generating does.
 */
export async function promptIds(
  rt: GroupRuntime,
  idx: number,
  transcript: readonly ChatMessage[],
  attempt: Attempt,
  grant: Grant,
): Promise<PromptIds> {
  const { store, spec } = rt;
  const { request } = spec;
  const windowMs = generationDeadlineMs(rt.config, request.max_context_tokens);
  const built = await tokenInPrompt(
    {
      endpoint: { baseUrl: grant.host, apiKey: rt.generation.apiKey },
      model: request.sampling.model,
      tokens: store.tokens,
      seams: rt.generation.seams,
    },
    idx,
    transcript,
    {
      deadlineAt: attempt.deadlineAt,
      maxRetries: attempt.retriesLeft,
      maxInlineBackoffMs: INLINE_BACKOFF_MS,
    },
  );
  await rt.writeTurn();
  if (built.kind === "unusable") {
    store.finish(idx, failed(END.tokens_unavailable, built.detail));
    return ENDED;
  }
  if (built.kind !== "ok") {
    // Failed after its run paused: the hosts may be loading weights. It waits for the resume,
    // as if the pause had come first, instead of counting against the host or the deadline.
    if (rt.policy.paused && rt.policy.stale === null) {
      store.generations.unsend(idx);
      return QUEUED;
    }
    return settle(rt, idx, built, { deadlineAt: attempt.deadlineAt, windowMs });
  }
  // The exact count, known before sending: the host is never asked for what cannot fit.
  const needed = built.ids.length + request.sampling.max_completion_tokens;
  if (needed > request.max_context_tokens) {
    const detail = `${built.ids.length} prompt tokens + max_completion_tokens ${request.sampling.max_completion_tokens} > max_context_tokens ${request.max_context_tokens}`;
    store.finish(idx, { state: "truncated", reason: END.context_budget, detail });
    return ENDED;
  }
  let { deadlineAt } = attempt;
  let sendTo = grant;
  // Paused or cancelled while the prompt was built: nothing goes out until the run resumes.
  if (rt.policy.paused || rt.policy.stale !== null) {
    store.generations.unsend(idx);
    const admitted = await admit(rt, idx);
    if (admitted.kind === "cancelled") return CANCELLED;
    sendTo = admitted.grant;
    deadlineAt = Date.now() + windowMs;
    store.generations.markSent(idx, deadlineAt);
  }
  return {
    kind: "ids",
    ids: built.ids,
    attempt: { deadlineAt, retriesLeft: Math.max(0, attempt.retriesLeft - built.retries) },
    grant: sendTo,
  };
}
