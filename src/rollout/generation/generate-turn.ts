/**
 * One generation of an episode's turn, from wherever its stored state says it is: a request
 * lost with an earlier instance is sent again, the context budget checked, the episode admitted
 * (a permit, no pause), its prompt built, the host called under the deadline, and the answer
 * recorded or settled. A first timeout is tried once more here; anything else is the result.
 */
import { generationDeadlineMs } from "../../config";
import { generate } from "../../inference/client";
import type { ChatMessage } from "../../sdk";
import type { GroupRuntime } from "../group-runtime";
import { generationSeed } from "../group-spec";
import { END, failed } from "../outcomes";
import { admit } from "./admission";
import { fitsContext } from "./context-budget";
import { type Attempt, INLINE_BACKOFF_MS, promptIds } from "./prompt-ids";
import { recordAction } from "./record-action";
import { type AttemptResult, CANCELLED, ENDED, type GenerationResult } from "./results";
import { settle } from "./settle";

/**
 * Streamed bodies one group object may hold whole at once, shared among its episodes: a
 * generation whose largest possible body fits its share is read whole (cheaper per turn), a
 * longer one is parsed as it arrives.
 */
const GROUP_WHOLE_STREAM_BYTES = 16 * 2 ** 20;

export async function generateTurn(
  rt: GroupRuntime,
  idx: number,
  transcript: readonly ChatMessage[],
): Promise<GenerationResult> {
  for (;;) {
    if (rt.policy.stale !== null) return CANCELLED;
    const result = await attempt(rt, idx, transcript);
    if (result.kind !== "queued") return result;
  }
}

/** Whatever is pending is sent once, or found lost, or out of budget. */
async function attempt(
  rt: GroupRuntime,
  idx: number,
  transcript: readonly ChatMessage[],
): Promise<AttemptResult> {
  const { store, config, spec } = rt;
  const { request } = spec;
  const pending = store.generations.get(idx);
  if (pending?.state === "sent") {
    // Sent by an earlier instance of this object and lost with it: not a timeout, a re-dispatch.
    if (store.episodes.get(idx).redispatches >= config.MAX_REDISPATCHES) {
      const lost = `generation lost to ${config.MAX_REDISPATCHES + 1} restarts`;
      store.finish(idx, failed(END.redispatch_limit, lost));
      return ENDED;
    }
    store.recordRedispatch(idx);
  } else if (
    pending === null &&
    !rt.generation.tokens.promptsFromIds &&
    !fitsContext(rt, idx, transcript)
  ) {
    store.finish(idx, { state: "truncated", reason: END.context_budget });
    return ENDED;
  }
  const generation = store.generations.get(idx);
  const windowMs = generationDeadlineMs(config, request.max_context_tokens);
  // The deadline clock starts when the request is sent, not while it waits for a permit or for
  // a paused run to resume.
  const admitted = await admit(rt, idx);
  if (admitted.kind === "cancelled") return CANCELLED;
  // A retry stays inside its attempt's deadline window; a fresh attempt opens a new one, and so
  // does a parked retry that then waited out a pause (the pause must not use up its window).
  let sending: Attempt = {
    deadlineAt:
      admitted.kind === "ready" && generation?.deadlineAt
        ? generation.deadlineAt
        : Date.now() + windowMs,
    retriesLeft: Math.max(0, config.INFERENCE_MAX_RETRIES - (generation?.retries ?? 0)),
  };
  store.generations.markSent(idx, sending.deadlineAt);
  let prompt: Int32Array | undefined;
  if (rt.generation.tokens.promptsFromIds) {
    const built = await promptIds(rt, idx, transcript, sending);
    if (built.kind !== "ids") return built;
    ({ ids: prompt, attempt: sending } = built);
  }
  // The version that samples this turn: the run's as the group knows it as the request goes out.
  const turn = store.episodes.get(idx).turns;
  rt.policy.recordSend(idx, turn);
  const outcome = await generate(
    rt.generation.endpoint,
    {
      sampling: request.sampling,
      messages: transcript,
      seed: generationSeed(request.sampling, idx, turn),
      stream: config.INFERENCE_STREAM,
      tokens: rt.generation.tokens.ask(store.tokens.mode(idx)),
      prompt,
      tools: store.tools.of(idx)?.tools,
    },
    {
      deadlineMs: Math.max(0, sending.deadlineAt - Date.now()),
      maxRetries: sending.retriesLeft,
      maxInlineBackoffMs: INLINE_BACKOFF_MS,
      wholeStreamBytes: Math.floor(GROUP_WHOLE_STREAM_BYTES / request.group_size),
      retryWithoutTokens: rt.generation.tokens.retryWithout,
      // A group cancelled as stale aborts its generations in flight (the driver ends them).
      signal: rt.policy.signal,
    },
  );
  await rt.writeTurn();
  if (outcome.kind === "ok") return recordAction(rt, idx, transcript, outcome);
  // Cancelled meanwhile: an action that came back is kept (above); anything else is not parked
  // or failed, the driver ends the episode as stale.
  if (rt.policy.stale !== null) return CANCELLED;
  return settle(rt, idx, outcome, { deadlineAt: sending.deadlineAt, windowMs });
}
