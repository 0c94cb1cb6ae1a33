/**
 * Where a turn happens. One driver per episode walks its state machine — open, then generate /
 * step until the episode ends — persisting each transition before acting on it, so a driver
 * started after a restart picks up exactly where the last one stopped. How a generation is made
 * is generation/'s; this file opens episodes, steps them, and drives.
 */
import { answeredStep, type ChatMessage, errorMessage, responseTextAfter } from "../sdk";
import { generateTurn } from "./generation/generate-turn";
import type { GroupRuntime } from "./group-runtime";
import { episodeId } from "./group-spec";
import { END, failed, TERMINAL_STATES } from "./outcomes";
import { answerOf, callStepWorker } from "./step-call";
import { EpisodeStepSession } from "./step-session";
import { toolSetOf } from "./storage/tools";

/** Opens the episode; returns the opening messages it recorded (none if it ended instead). */
async function open(rt: GroupRuntime, idx: number): Promise<readonly ChatMessage[]> {
  const { env, example, prompt_text: promptText } = rt.spec.request;
  const started = Date.now();
  const answer = await callStepWorker("startEpisode", rt.config.STEP_TIMEOUT_S * 1000, () =>
    rt.environment.open({
      env,
      example,
      promptText,
      episodeId: episodeId(rt.spec.groupId, idx),
    }),
  );
  const envMs = Date.now() - started;
  const tools = answer.kind === "ended" ? null : answer.value.tools;
  const toolSet = tools === null ? null : await toolSetOf(tools);
  await rt.writeTurn();
  // The time is recorded with the answer, in the same write.
  if (answer.kind === "ended") {
    rt.store.finish(idx, answer.end, envMs);
    return [];
  }
  const { messages, maxTurns } = answer.value;
  rt.store.recordOpening(idx, messages, maxTurns, toolSet, envMs);
  return messages;
}

/** Steps the action at the end of the transcript; returns the messages the environment added. */
async function step(
  rt: GroupRuntime,
  idx: number,
  transcript: ChatMessage[],
  session: EpisodeStepSession,
): Promise<readonly ChatMessage[]> {
  const { env, example } = rt.spec.request;
  const timeoutMs = rt.config.STEP_TIMEOUT_S * 1000;
  const started = Date.now();
  const viaSession = await session.step(transcript, timeoutMs);
  const answer =
    viaSession.kind === "retry_alone"
      ? await callStepWorker("stepEpisode", timeoutMs, () =>
          rt.environment.step({
            env,
            example,
            messages: transcript,
            episodeId: episodeId(rt.spec.groupId, idx),
          }),
        )
      : answerOf(
          "stepEpisode",
          viaSession.kind === "timeout" ? viaSession : { kind: "in_time", value: viaSession.call },
        );
  const envMs = Date.now() - started;
  await rt.writeTurn();
  if (answer.kind === "ended") {
    rt.store.finish(idx, answer.end, envMs);
    return [];
  }
  const action = transcript.at(-1) as ChatMessage;
  // Only a native tool-calling episode's host answers with calls; a text one's stays as it is.
  const answered = answeredStep(rt.store.tools.of(idx) !== null, action, answer.value);
  if (!answered.ok) {
    rt.store.finish(idx, failed(END.env_error, `stepEpisode: ${answered.problem}`), envMs);
    return [];
  }
  rt.store.recordStep(idx, answered.step, responseTextAfter(answered.step, action.content), envMs);
  return answered.step.messages;
}

/** Runs one episode from wherever its stored state says it is, until it ends or parks. */
export async function driveEpisode(rt: GroupRuntime, idx: number): Promise<void> {
  const { store, policy } = rt;
  // An episode still opening has no messages yet: its opening and its state are one write.
  const transcript = store.episodes.get(idx).state === "opening" ? [] : store.transcripts.of(idx);
  const { env, example } = rt.spec.request;
  const session = new EpisodeStepSession(rt.environment, {
    env,
    example,
    episodeId: episodeId(rt.spec.groupId, idx),
  });
  try {
    for (;;) {
      const state = store.episodes.get(idx).state;
      if (TERMINAL_STATES.includes(state)) return;
      // Cancelled as stale: it ends here, whatever it was doing, its transcript kept as it is.
      if (policy.stale !== null) {
        store.finish(idx, failed(END.stale_policy, policy.stale));
        return;
      }
      try {
        if (state === "opening") transcript.push(...(await open(rt, idx)));
        else if (state === "stepping")
          transcript.push(...(await step(rt, idx, transcript, session)));
        else {
          // The session the step after this generation will use opens while it generates.
          session.prepare();
          const generated = await generateTurn(rt, idx, transcript);
          if (generated.kind === "parked") return;
          if (generated.kind === "recorded") transcript.push(generated.action);
        }
      } catch (error) {
        // A generation aborted by the cancellation: the next pass ends the episode as stale.
        if (policy.stale !== null) continue;
        // Nothing is dropped silently: an unexpected fault still ends the episode with a reason.
        store.finish(idx, failed(END.internal_error, `${state}: ${errorMessage(error)}`));
      }
    }
  } finally {
    session.close();
    // Ended or parked, it needs no cached token sequence in memory; storage has it.
    store.tokens.forget(idx);
  }
}
