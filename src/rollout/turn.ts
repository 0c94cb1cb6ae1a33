/**
 * Where a turn happens. One driver per episode walks its state machine — open, then generate /
 * step until the episode ends — persisting each transition before acting on it, so a driver
 * started after a restart picks up exactly where the last one stopped.
 */
import { type Config, generationDeadlineMs } from "../config";
import type { StepWorkerApi } from "../env-workers/step-worker";
import {
  type GenerationFailure,
  type GenerationOutcome,
  generate,
  type InferenceEndpoint,
  refusesTokenFields,
} from "../inference/client";
import {
  answeredStep,
  type ChatMessage,
  errorMessage,
  isSampledAction,
  responseTextAfter,
  sampledMessage,
  withCallIds,
} from "../sdk";
import type { TokenStore } from "../tokens/token-store";
import { EpisodeToolStore } from "./episode-tools";
import { episodeId, type GroupSpec, generationSeed } from "./group-spec";
import type { GroupStore } from "./group-store";
import { END, type FailureReason, failed, TERMINAL_STATES } from "./outcomes";
import type { Permits } from "./permits";
import type { PolicyWatch } from "./policy-watch";
import { answerOf, callStepWorker } from "./step-call";
import { EpisodeStepSession } from "./step-session";
import { type SeamsCache, tokenInPrompt } from "./token-prompt";

/** The inference client's failures, as the episode's end reasons. */
const INFERENCE_FAILURE: Record<GenerationFailure, FailureReason> = {
  rejected: END.inference_rejected,
  unavailable: END.inference_unavailable,
  malformed: END.inference_malformed,
};

export interface GroupRuntime {
  spec: GroupSpec;
  store: GroupStore;
  /** Each sampled turn's tokens, beside the transcripts. */
  tokens: TokenStore;
  config: Config;
  stepWorker: StepWorkerApi;
  permits: Permits;
  /** Resolves in the group's next write turn, shared by its episodes (write-turn.ts). */
  writeTurn: () => Promise<void>;
  /** Token-in generation: the host template's seams, measured once for the group. */
  seams: SeamsCache;
  /** Native tool calling: each episode's tool definitions. */
  tools: EpisodeToolStore;
  /** Asynchronous RL: the run's policy as the group knows it, and each turn's version. */
  policy: PolicyWatch;
}

/**
 * How long an episode's permit is leased for: its generation's deadline window and a minute
 * more. Renewed while it runs; the lease only matters when a holder disappears.
 */
export function permitLeaseMs(rt: GroupRuntime): number {
  return generationDeadlineMs(rt.config, rt.spec.request.max_context_tokens) + 60_000;
}

/** A rough token count for text the host has not counted yet; the host's own answer decides. */
function estimateTokens(messages: readonly ChatMessage[]): number {
  return messages.reduce(
    (sum, m) =>
      sum + Math.ceil((m.content.length + JSON.stringify(m.tool_calls ?? "").length) / 4) + 4,
    0,
  );
}

/** Whether the next generation still fits `max_context_tokens` with its completion budget. */
function fitsContext(rt: GroupRuntime, idx: number, transcript: readonly ChatMessage[]): boolean {
  const { request } = rt.spec;
  const counted = rt.store.episode(idx).totalTokens;
  const lastAction = transcript.findLastIndex(isSampledAction);
  // Before the host has counted anything, the tools it renders into the prompt count too.
  const tools = rt.tools.of(idx)?.tools;
  const used =
    counted !== null && lastAction !== -1
      ? counted + estimateTokens(transcript.slice(lastAction + 1))
      : estimateTokens(transcript) + (tools ? Math.ceil(JSON.stringify(tools).length / 4) : 0);
  return used + request.sampling.max_completion_tokens <= request.max_context_tokens;
}

/** Opens the episode; returns the opening messages it recorded (none if it ended instead). */
async function open(rt: GroupRuntime, idx: number): Promise<readonly ChatMessage[]> {
  const { env, example, prompt_text: promptText } = rt.spec.request;
  const answer = await callStepWorker("startEpisode", rt.config.STEP_TIMEOUT_S * 1000, () =>
    rt.stepWorker.open({ env, example, promptText, episodeId: episodeId(rt.spec.groupId, idx) }),
  );
  const tools = answer.kind === "ended" ? null : answer.value.tools;
  const toolSet = tools === null ? null : { tools, hash: await EpisodeToolStore.hashOf(tools) };
  await rt.writeTurn();
  if (answer.kind === "ended") {
    rt.store.finish(idx, answer.end);
    return [];
  }
  const { messages, maxTurns } = answer.value;
  rt.store.recordOpening(idx, messages, maxTurns, () =>
    toolSet === null ? undefined : rt.tools.record(idx, toolSet),
  );
  return messages;
}

/**
 * Waits until the episode may send a generation: it holds a permit and its run is not paused.
 * A paused run's episodes give their permits back while they wait (and a pause gives up the
 * place in line of one still queued), so a weight sync in one run never holds up another's
 * generations, and no deadline runs meanwhile. `after_pause` if it waited for a resume,
 * `cancelled` if the group was cancelled as stale instead.
 */
async function admit(
  rt: GroupRuntime,
  idx: number,
): Promise<"ready" | "after_pause" | "cancelled"> {
  let paused = false;
  for (;;) {
    if (rt.policy.paused) {
      paused = true;
      rt.permits.drop(idx);
      await rt.policy.untilRunnable();
    }
    if (rt.policy.stale !== null) return "cancelled";
    // Interrupted by a pause or the cancellation while queued: go round again.
    if (!(await rt.permits.hold(idx, permitLeaseMs(rt), rt.policy.interruption))) continue;
    if (rt.policy.stale !== null) return "cancelled";
    // Paused just as the permit came: it waits again, the permit given back.
    if (!rt.policy.paused) return paused ? "after_pause" : "ready";
  }
}

/**
 * Backoffs up to this long are slept in memory; longer ones (a host's Retry-After) are parked in
 * storage behind a timer, so the object can sleep, or be evicted, while it waits.
 */
const INLINE_BACKOFF_MS = 1000;

/**
 * Streamed bodies one group object may hold whole at once, shared among its episodes: a
 * generation whose largest possible body fits its share is read whole (cheaper per turn), a
 * longer one is parsed as it arrives.
 */
const GROUP_WHOLE_STREAM_BYTES = 16 * 2 ** 20;

/**
 * Token-in generation: the prompt as ids, built by the host's tokenizer as part of the attempt
 * (under its deadline, out of its retries). The generation is marked sent already, so an
 * eviction while tokenizing counts as a re-dispatch, as one while generating does. `stop` when
 * this pass goes no further (the episode ended, or its generation is queued again), `parked`
 * when it waits on a timer.
 */
async function tokenPrompt(
  rt: GroupRuntime,
  idx: number,
  transcript: readonly ChatMessage[],
  attempt: { endpoint: InferenceEndpoint; deadlineAt: number; retriesLeft: number },
): Promise<
  | { kind: "ok"; ids: Int32Array; deadlineAt: number; retriesLeft: number }
  | { kind: "stop" | "parked" }
> {
  const { store, spec } = rt;
  const { request } = spec;
  const windowMs = generationDeadlineMs(rt.config, request.max_context_tokens);
  const built = await tokenInPrompt(
    {
      endpoint: attempt.endpoint,
      model: request.sampling.model,
      tokens: rt.tokens,
      seams: rt.seams,
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
    return { kind: "stop" };
  }
  if (built.kind !== "ok") {
    const settled = settle(rt, idx, built, attempt.deadlineAt, windowMs);
    return { kind: settled === "parked" ? "parked" : "stop" };
  }
  // The exact count, known before sending: the host is never asked for what cannot fit.
  const needed = built.ids.length + request.sampling.max_completion_tokens;
  if (needed > request.max_context_tokens) {
    const detail = `${built.ids.length} prompt tokens + max_completion_tokens ${request.sampling.max_completion_tokens} > max_context_tokens ${request.max_context_tokens}`;
    store.finish(idx, { state: "truncated", reason: END.context_budget, detail });
    return { kind: "stop" };
  }
  let { deadlineAt } = attempt;
  // Paused or cancelled while the prompt was built: nothing goes out until the run resumes.
  if (rt.policy.paused || rt.policy.stale !== null) {
    store.unsendGeneration(idx);
    if ((await admit(rt, idx)) === "cancelled") return { kind: "stop" };
    deadlineAt = Date.now() + windowMs;
    store.markSent(idx, deadlineAt);
  }
  return {
    kind: "ok",
    ids: built.ids,
    deadlineAt,
    retriesLeft: Math.max(0, attempt.retriesLeft - built.retries),
  };
}

/** Samples the next action. Returns "parked" when the generation now waits on a timer. */
async function sample(
  rt: GroupRuntime,
  idx: number,
  transcript: ChatMessage[],
): Promise<"parked" | undefined> {
  const { store, config, spec } = rt;
  const { request } = spec;
  const pending = store.generation(idx);
  if (pending?.state === "sent") {
    // Sent by an earlier instance of this object and lost with it: not a timeout, a re-dispatch.
    if (store.episode(idx).redispatches >= config.MAX_REDISPATCHES) {
      const lost = `generation lost to ${config.MAX_REDISPATCHES + 1} restarts`;
      store.finish(idx, failed(END.redispatch_limit, lost));
      return;
    }
    store.recordRedispatch(idx);
  } else if (
    pending === null &&
    // A group started before token-in existed has no `generation` in its stored spec: chat.
    request.generation !== "tokens" &&
    !fitsContext(rt, idx, transcript)
  ) {
    store.finish(idx, { state: "truncated", reason: END.context_budget });
    return;
  }
  const generation = store.generation(idx);
  const windowMs = generationDeadlineMs(config, request.max_context_tokens);
  // The deadline clock starts when the request is sent, not while it waits for a permit or for
  // a paused run to resume.
  const admitted = await admit(rt, idx);
  if (admitted === "cancelled") return;
  // A retry stays inside its attempt's deadline window; a fresh attempt opens a new one, and so
  // does a parked retry that then waited out a pause (the pause must not use up its window).
  let deadlineAt =
    admitted === "ready" && generation?.deadlineAt ? generation.deadlineAt : Date.now() + windowMs;
  store.markSent(idx, deadlineAt);
  const endpoint = { baseUrl: config.INFERENCE_BASE_URL, apiKey: config.INFERENCE_API_KEY };
  let retriesLeft = Math.max(0, config.INFERENCE_MAX_RETRIES - (generation?.retries ?? 0));
  let prompt: Int32Array | undefined;
  if (request.generation === "tokens") {
    const built = await tokenPrompt(rt, idx, transcript, { endpoint, deadlineAt, retriesLeft });
    if (built.kind !== "ok") return built.kind === "parked" ? "parked" : undefined;
    ({ ids: prompt, deadlineAt, retriesLeft } = built);
  }
  // The version that samples this turn: the run's as the group knows it as the request goes out.
  rt.policy.recordSend(idx, store.episode(idx).turns);
  const outcome = await generate(
    endpoint,
    {
      sampling: request.sampling,
      messages: transcript,
      seed: generationSeed(request.sampling, idx, store.episode(idx).turns),
      stream: config.INFERENCE_STREAM,
      // Asked for until the host shows it will not send them; token-in cannot go without.
      tokens: prompt !== undefined || (request.tokens !== "off" && rt.tokens.mode(idx) === "exact"),
      prompt,
      tools: rt.tools.of(idx)?.tools,
    },
    {
      deadlineMs: Math.max(0, deadlineAt - Date.now()),
      maxRetries: retriesLeft,
      maxInlineBackoffMs: INLINE_BACKOFF_MS,
      wholeStreamBytes: Math.floor(GROUP_WHOLE_STREAM_BYTES / request.group_size),
      retryWithoutTokens: request.tokens === "auto",
      // A group cancelled as stale aborts its generations in flight (the driver ends them).
      signal: rt.policy.signal,
    },
  );
  await rt.writeTurn();
  // Cancelled meanwhile: what came back is kept if it is an action; otherwise the driver ends
  // the episode as stale rather than park or fail it.
  if (outcome.kind !== "ok")
    return rt.policy.stale === null ? settle(rt, idx, outcome, deadlineAt, windowMs) : undefined;
  recordAction(rt, idx, transcript, outcome);
}

/** A call to the host that did not produce an action: wait, retry, or end the episode. */
function settle(
  rt: GroupRuntime,
  idx: number,
  outcome: Exclude<GenerationOutcome, { kind: "ok" }>,
  deadlineAt: number,
  windowMs: number,
): "parked" | undefined {
  const { store, spec } = rt;
  switch (outcome.kind) {
    case "retry_later": {
      const retryAt = Date.now() + outcome.delayMs;
      if (retryAt < deadlineAt) {
        store.parkGeneration(idx, retryAt, outcome.attempts);
        return "parked";
      }
      // Waiting would outlast the deadline: that is a timeout, handled as one.
      return recordTimeout(rt, idx, outcome.attempts, windowMs);
    }
    case "timeout":
      // The output of a timed-out attempt is dropped: it never reaches the environment.
      return recordTimeout(rt, idx, outcome.attempts, windowMs);
    case "context_exceeded":
      store.finish(idx, {
        state: "truncated",
        reason: END.context_length,
        detail: outcome.message,
      });
      return;
    case "failed":
      if (spec.request.tokens === "required" && refusesTokenFields(outcome.message)) {
        const detail = `the host refused the token fields: ${outcome.message}; this group asks for tokens: "required"`;
        store.finish(idx, failed(END.tokens_unavailable, detail));
      } else store.finish(idx, failed(INFERENCE_FAILURE[outcome.failure], outcome.message));
      return;
  }
}

/**
 * Appends the sampled action, with its tokens in the same write. A group that requires tokens
 * ends the episode instead when the host sent none, naming what was missing and the fix.
 */
function recordAction(
  rt: GroupRuntime,
  idx: number,
  transcript: ChatMessage[],
  outcome: Extract<GenerationOutcome, { kind: "ok" }>,
): void {
  const { store, spec } = rt;
  const { completion } = outcome;
  const fields = completion.tokens;
  const exact = fields?.kind === "exact" ? fields.tokens : null;
  // Token-in generation (which implies "required") builds the next prompt from these ids.
  if (spec.request.tokens === "required" && exact === null) {
    const why = fields?.kind === "missing" ? fields.problem : "the host was not asked for tokens";
    const detail =
      spec.request.generation === "tokens"
        ? `${why}; generation "tokens" builds each prompt from them`
        : `${why}; this group asks for tokens: "required" (use "auto" to go on without them)`;
    store.finish(idx, failed(END.tokens_unavailable, detail));
    return;
  }
  const toolCalls = withCallIds(completion.toolCalls, store.episode(idx).turns, transcript);
  const message = sampledMessage({ content: completion.content, toolCalls });
  const turn = store.episode(idx).turns;
  const { temperature, top_p: topP } = spec.request.sampling;
  store.recordAction(
    idx,
    message,
    {
      // The host's own count; its token ids are the exact one where usage is missing.
      promptTokens: completion.usage?.promptTokens ?? exact?.promptIds.length ?? null,
      completionTokens: completion.usage?.completionTokens ?? exact?.completionIds.length ?? null,
      finishReason: completion.finishReason,
      latencyMs: outcome.latencyMs,
      attempts: outcome.attempts,
    },
    () => {
      if (spec.request.tokens === "off") return undefined;
      if (exact !== null) return rt.tokens.record(idx, turn, exact, { temperature, topP });
      const why = fields?.kind === "missing" ? fields.problem : "the host sent no token fields";
      return rt.tokens.markInexact(idx, why);
    },
  );
  transcript.push(message);
}

/** One retry after a first timeout; a second one fails the episode. */
function recordTimeout(
  rt: GroupRuntime,
  idx: number,
  attempts: number,
  windowMs: number,
): undefined {
  if (rt.store.recordTimeout(idx, attempts) >= 2) {
    const late = `two attempts ran past the ${windowMs / 1000} s deadline`;
    rt.store.finish(idx, failed(END.generation_timeout, late));
  }
  return undefined;
}

async function step(
  rt: GroupRuntime,
  idx: number,
  transcript: ChatMessage[],
  session: EpisodeStepSession,
): Promise<void> {
  const { env, example } = rt.spec.request;
  const timeoutMs = rt.config.STEP_TIMEOUT_S * 1000;
  const viaSession = await session.step(transcript, timeoutMs);
  const answer =
    viaSession.kind === "retry_alone"
      ? await callStepWorker("stepEpisode", timeoutMs, () =>
          rt.stepWorker.step({
            env,
            example,
            messages: transcript,
            episodeId: episodeId(rt.spec.groupId, idx),
          }),
        )
      : answerOf("stepEpisode", viaSession.kind === "timeout" ? "timeout" : viaSession.call);
  await rt.writeTurn();
  if (answer.kind === "ended") return rt.store.finish(idx, answer.end);
  const action = transcript.at(-1) as ChatMessage;
  // Only a native tool-calling episode's host answers with calls; a text one's stays as it is.
  const answered = answeredStep(rt.tools.of(idx) !== null, action, answer.value);
  if (!answered.ok)
    return rt.store.finish(idx, failed(END.env_error, `stepEpisode: ${answered.problem}`));
  rt.store.recordStep(idx, answered.step, responseTextAfter(answered.step, action.content));
  transcript.push(...answered.step.messages);
}

/** Runs one episode from wherever its stored state says it is until it ends. */
export async function driveEpisode(rt: GroupRuntime, idx: number): Promise<void> {
  // An episode still opening has no messages yet: its opening and its state are one write.
  const transcript = rt.store.episode(idx).state === "opening" ? [] : rt.store.transcript(idx);
  const { env, example } = rt.spec.request;
  const session = new EpisodeStepSession(rt.stepWorker, {
    env,
    example,
    episodeId: episodeId(rt.spec.groupId, idx),
  });
  try {
    for (;;) {
      const state = rt.store.episode(idx).state;
      // Cancelled as stale: it ends here, whatever it was doing, its transcript kept as it is.
      if (!TERMINAL_STATES.includes(state) && rt.policy.stale !== null) {
        rt.store.finish(idx, failed(END.stale_policy, rt.policy.stale));
        return;
      }
      try {
        if (state === "opening") transcript.push(...(await open(rt, idx)));
        else if (state === "generating") {
          if ((await sample(rt, idx, transcript)) === "parked") return;
        } else if (state === "stepping") await step(rt, idx, transcript, session);
        else return;
      } catch (error) {
        // A generation aborted by the cancellation: the next pass ends the episode as stale.
        if (rt.policy.stale !== null) continue;
        // Nothing is dropped silently: an unexpected fault still ends the episode with a reason.
        rt.store.finish(idx, failed(END.internal_error, `${state}: ${errorMessage(error)}`));
      }
    }
  } finally {
    session.close();
    // Ended or parked, it needs no cached token sequence in memory; storage has it.
    rt.tokens.forget(idx);
  }
}
