/**
 * One generation of an episode's turn, from wherever its stored state says it is: a request
 * lost with an earlier instance is sent again, the context budget checked, the episode admitted
 * (a permit, no pause), its prompt built, the host called under the deadline, and the answer
 * recorded or settled. A first timeout is tried once more here; anything else is the result.
 */
import { generationDeadlineMs } from "../../config";
import type { Grant } from "../../fleet/fleet-api";
import { generate, type InferenceEndpoint } from "../../inference/client";
import type { InferenceError } from "../../inference/failures";
import type { StreamProgress } from "../../inference/stream";
import type { ChatMessage } from "../../sdk";
import type { GroupRuntime } from "../group-runtime";
import { episodeId, generationSeed } from "../group-spec";
import { END, failed } from "../outcomes";
import type { KeptTurn } from "../storage/interrupted-turns";
import { admit, permitLeaseMs } from "./admission";
import { fitsContext } from "./context-budget";
import { continuationRequest, keptWhole, recordInterrupted, withKept } from "./continuation";
import { type Attempt, INLINE_BACKOFF_MS, promptIds } from "./prompt-ids";
import { recordAction } from "./record-action";
import { type AttemptResult, CANCELLED, ENDED, type GenerationResult, QUEUED } from "./results";
import { settle } from "./settle";

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

/**
 * Streamed bodies one group object may hold whole at once, shared among its episodes: a
 * generation whose largest possible body fits its share is read whole (cheaper per turn), a
 * longer one is parsed as it arrives.
 */
const GROUP_WHOLE_STREAM_BYTES = 16 * 2 ** 20;

/** What an interrupting pause leaves of a generation in flight. */
const INTERRUPTED: unique symbol = Symbol("interrupted");

/** The host refused the token fields before: it is not asked again, and this says why. */
const KNOWN_REFUSAL = "the host does not send token fields (it refused them before)";

/**
 * A failed call to the episode's host, before the retry's backoff: counted against the host
 * (the fleet ejects one that keeps failing) and, when the fleet moves the episode, the endpoint
 * to retry on at once. A 429 is a busy host, not a broken one: retried there after the backoff.
 */
function failover(rt: GroupRuntime, idx: number, onMove: (grant: Grant) => void) {
  return async (
    failure: InferenceError,
    endpoint: InferenceEndpoint,
    signal: AbortSignal,
  ): Promise<InferenceEndpoint | null> => {
    if (failure.status === 429) return null;
    const host = endpoint.baseUrl;
    rt.store.group.countHostFailure(host);
    const next = await rt.generation.permits.failed(
      idx,
      { host, at: Date.now(), error: failure.message, unreachable: failure.unanswered },
      permitLeaseMs(rt),
      signal,
    );
    if (next === null || next.host === host) return null;
    onMove(next);
    return { baseUrl: next.host, apiKey: rt.generation.apiKey };
  };
}

/** The answer of a kept turn whose kept tokens used its whole budget: no call to make. */
const keptOutcome = (kept: KeptTurn, host: string) => ({
  kind: "ok" as const,
  completion: keptWhole(kept),
  attempts: 0,
  latencyMs: 0,
  host,
  refusedTokenFields: false,
});

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
  let { grant } = admitted;
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
  const turn = store.episodes.get(idx).turns;
  let prompt: Int32Array | undefined;
  let maxTokens = request.sampling.max_completion_tokens;
  // A token-in turn an interrupt cut goes on from the tokens it kept (continuation.ts).
  const kept = rt.generation.tokens.promptsFromIds ? store.interrupted.kept(idx, turn) : null;
  if (kept !== null) {
    ({ prompt, maxTokens } = continuationRequest(kept, maxTokens));
    if (maxTokens <= 0) {
      await rt.writeTurn();
      return recordAction(rt, idx, transcript, keptOutcome(kept, grant.host));
    }
  } else if (rt.generation.tokens.promptsFromIds) {
    const built = await promptIds(rt, idx, transcript, sending, grant);
    if (built.kind !== "ids") return built;
    ({ ids: prompt, attempt: sending, grant } = built);
  }
  // The version that samples this turn: the host's when its trainer declared one, else the
  // run's as the group knows it as the request goes out.
  rt.policy.recordSend(idx, turn, grant.policyVersion);
  const wantsTokens = rt.generation.tokens.ask(store.tokens.mode(idx));
  const sentTo = grant.host;
  const inProgress: StreamProgress = { stream: null };
  const flight = rt.policy.flights.takeOff(idx, grant.host, rt.policy.signal, inProgress);
  const outcome = await generate(
    { baseUrl: grant.host, apiKey: rt.generation.apiKey },
    {
      sampling:
        maxTokens === request.sampling.max_completion_tokens
          ? request.sampling
          : { ...request.sampling, max_completion_tokens: maxTokens },
      messages: transcript,
      seed: generationSeed(request.sampling, idx, turn),
      stream: config.INFERENCE_STREAM,
      tokens: wantsTokens && grant.tokenFields !== false,
      prompt,
      tools: store.tools.of(idx)?.tools,
    },
    {
      deadlineMs: Math.max(0, sending.deadlineAt - Date.now()),
      maxRetries: sending.retriesLeft,
      maxInlineBackoffMs: INLINE_BACKOFF_MS,
      // A run whose trainer sets its policy may interrupt a generation to sync weights: read as
      // it arrives, so an abort knows what it cut (reading whole saves about 0.8 ms of CPU a
      // turn, measured; docs/async-rl.md).
      wholeStreamBytes:
        rt.policy.known() === null ? Math.floor(GROUP_WHOLE_STREAM_BYTES / request.group_size) : 0,
      inProgress,
      retryWithoutTokens: rt.generation.tokens.retryWithout,
      // A group cancelled as stale aborts its generations in flight (the driver ends them),
      // and so does a pause with `interrupt` (the turn goes out again after the resume).
      signal: flight.signal,
      sessionId: episodeId(spec.groupId, idx),
      elsewhere: failover(rt, idx, (next) => {
        grant = next;
        flight.movedTo(next.host);
      }),
    },
  )
    .catch((error: unknown): typeof INTERRUPTED => {
      if (!flight.interrupted() || rt.policy.stale !== null) throw error;
      return INTERRUPTED;
    })
    .finally(() => rt.policy.flights.landed(idx));
  // Whatever came back once an interrupting pause aborted the call, short of an answer, is the
  // interrupt's doing (a host failure being reported when it came): not a timeout or a failure.
  if (
    outcome === INTERRUPTED ||
    (outcome.kind !== "ok" && flight.interrupted() && rt.policy.stale === null)
  ) {
    // Aborted by an interrupting pause: what it had produced is kept (a token-in turn, which
    // goes on from it) or counted and dropped; it is sent again, under the version the run
    // resumes at, once admitted after the resume.
    // Recorded in the group's write turn, with the other episodes the interrupt cut: one commit.
    await rt.writeTurn();
    recordInterrupted(rt, idx, { prompt, kept }, inProgress.stream?.sofar());
    rt.policy.flights.recorded(idx);
    return QUEUED;
  }
  // Answered, failed or cancelled as the interrupt came: nothing of it waits to be kept.
  rt.policy.flights.recorded(idx);
  await rt.writeTurn();
  if (outcome.kind === "ok" && kept !== null)
    outcome.completion = withKept(kept, outcome.completion);
  if (outcome.kind === "ok") {
    const { permits } = rt.generation;
    permits.answered(outcome.host, Date.now());
    if (outcome.refusedTokenFields) permits.learnTokenFieldsRefused(outcome.host);
    // Moved to another host mid-call: a re-sent turn records the version that sampled it.
    if (outcome.host !== sentTo) rt.policy.recordSend(idx, turn, grant.policyVersion);
    if (wantsTokens && grant.tokenFields === false && outcome.completion.tokens === null)
      outcome.completion.tokens = { kind: "missing", problem: KNOWN_REFUSAL };
    return recordAction(rt, idx, transcript, outcome);
  }
  // Cancelled meanwhile: an action that came back is kept (above); anything else is not parked
  // or failed, the driver ends the episode as stale.
  if (rt.policy.stale !== null) return CANCELLED;
  if (outcome.kind === "timeout") {
    // No answer in the window: the host counts it, and the retry goes elsewhere if it can.
    store.group.countHostFailure(grant.host);
    await rt.generation.permits.failed(
      idx,
      {
        host: grant.host,
        at: Date.now(),
        error: "no answer within the deadline",
        unreachable: true,
      },
      permitLeaseMs(rt),
      rt.policy.interruption,
    );
  }
  return settle(rt, idx, outcome, { deadlineAt: sending.deadlineAt, windowMs });
}
