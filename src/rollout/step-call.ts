/**
 * A call to environment code on an invocation of its own: bounded by STEP_TIMEOUT_S, retried
 * when the step worker itself could not be reached, and answered with the environment's value
 * or the end of the episode, named once here.
 */
import type { EnvCall } from "../env-workers/env-call";
import type { RemoteFault } from "../environments/remote/client";
import { errorMessage } from "../sdk";
import { backoffDelayMs, sleep } from "../utils/backoff";
import { type Timed, withTimeout } from "../utils/timeout";
import { END, type EpisodeEnd, type FailureReason, failed } from "./outcomes";

/** The environment's value, or why the episode ends here. */
export type StepAnswer<T> = { kind: "ok"; value: T } | { kind: "ended"; end: EpisodeEnd };

/** Attempts at reaching the step worker itself (not environment errors) before giving up. */
const STEP_CALL_ATTEMPTS = 3;

/** The hook an answer came from, for the reasons it gives. */
export type EnvHook = "startEpisode" | "stepEpisode";
const CALL_NAME: Record<EnvHook, string> = { startEpisode: "open", stepEpisode: "step" };

/**
 * The runtime cancels an environment whose code hangs or exhausts its limits; that is the
 * environment's fault, so it ends the episode at once instead of being retried like a lost call.
 */
function environmentFault(message: string): { reason: FailureReason; detail: string } | null {
  if (/code had hung|never generate a response/i.test(message)) {
    return { reason: END.step_timeout, detail: `the environment hung: ${message}` };
  }
  if (/exceeded (its )?(CPU|memory)|CPU time limit|memory limit/i.test(message))
    return { reason: END.env_error, detail: message };
  return null;
}

/** A remote environment's faults as end reasons; code that threw is the environment's error. */
const REMOTE_FAULT_END: Record<RemoteFault, FailureReason> = {
  unavailable: END.env_unavailable,
  timed_out: END.step_timeout,
  failed: END.env_error,
};

/** What the environment's own answer, or its running out of time, means for the episode. */
export function answerOf<T>(hook: EnvHook, answer: Timed<EnvCall<T>>): StepAnswer<T> {
  if (answer.kind === "timeout")
    return { kind: "ended", end: failed(END.step_timeout, `${hook} ran past STEP_TIMEOUT_S`) };
  const call = answer.value;
  if (!call.ok)
    return { kind: "ended", end: failed(REMOTE_FAULT_END[call.fault ?? "failed"], call.error) };
  return { kind: "ok", value: call.value };
}

export async function callStepWorker<T>(
  hook: EnvHook,
  timeoutMs: number,
  call: () => Promise<EnvCall<T>>,
): Promise<StepAnswer<T>> {
  const what = CALL_NAME[hook];
  for (let attempt = 1; ; attempt++) {
    try {
      return answerOf(hook, await withTimeout(call(), timeoutMs));
    } catch (error) {
      const fault = environmentFault(errorMessage(error));
      if (fault !== null)
        return { kind: "ended", end: failed(fault.reason, `${what}: ${fault.detail}`) };
      if (attempt >= STEP_CALL_ATTEMPTS) {
        return {
          kind: "ended",
          end: failed(END.step_unavailable, `${what}: ${errorMessage(error)}`),
        };
      }
      await sleep(backoffDelayMs(attempt, { baseMs: 200, maxMs: 2000 }));
    }
  }
}
