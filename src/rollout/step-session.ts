/**
 * An episode's steps through one step-worker session instead of one invocation each: a new
 * invocation per turn was the largest single cost of a turn in the group object (BENCHMARKS.md).
 *
 * A session holds no environment state (each step replays the transcript on a fresh instance).
 * Its steps share one invocation's CPU limit, so a session serves at most STEPS_PER_SESSION
 * steps, and a step whose session fails for any reason but the step's own timeout is handed
 * back to run on an invocation of its own, which decides what the failure means. Such a step
 * may run twice; replaying environments are built for that.
 */
import type { EnvCall } from "../env-workers/env-call";
import type { StepSessionApi, StepSessionRequest, StepWorkerApi } from "../env-workers/step-worker";
import { type ChatMessage, type EnvironmentStepResult, errorMessage } from "../sdk";
import { withTimeout } from "./timeout";

/** Steps one session serves before it is replaced by a fresh one. */
export const STEPS_PER_SESSION = 16;
/** A session unused this long is released: a long generation does not keep it open. */
const SESSION_IDLE_MS = 30_000;
/** How long opening a session may take before the step runs on its own invocation instead. */
const OPEN_TIMEOUT_MS = 5_000;
/** Broken sessions in a row after which the episode stops asking for sessions. */
const FAILURES_BEFORE_GIVING_UP = 3;

export class EpisodeStepSession {
  private session: StepSessionApi | null = null;
  private served = 0;
  private failures = 0;
  private idleTimer: ReturnType<typeof setTimeout> | null = null;

  constructor(
    private readonly worker: StepWorkerApi,
    private readonly request: StepSessionRequest,
  ) {}

  /**
   * Steps the action at the end of `messages`. "retry_alone": no session could take the step;
   * the caller runs it on an invocation of its own.
   */
  async step(
    messages: ChatMessage[],
    timeoutMs: number,
  ): Promise<EnvCall<EnvironmentStepResult> | "timeout" | "retry_alone"> {
    if (this.failures >= FAILURES_BEFORE_GIVING_UP) return "retry_alone";
    if (this.idleTimer !== null) clearTimeout(this.idleTimer);
    try {
      const session = await this.open();
      if (session === null) return "retry_alone";
      this.served++;
      const result = await withTimeout(session.step(messages), timeoutMs);
      if (result === "timeout") this.close();
      else this.idleTimer = setTimeout(() => this.close(), SESSION_IDLE_MS);
      this.failures = 0;
      return result;
    } catch (error) {
      this.failures++;
      console.warn(`step session failed, stepping on its own invocation: ${errorMessage(error)}`);
      this.close();
      return "retry_alone";
    }
  }

  /** The current session, a fresh one, or null when none opened in time. */
  private async open(): Promise<StepSessionApi | null> {
    if (this.session !== null && this.served < STEPS_PER_SESSION) return this.session;
    this.close();
    const opening = this.worker.session(this.request);
    const session = await withTimeout(opening, OPEN_TIMEOUT_MS);
    if (session === "timeout") {
      // Released whenever it does arrive; this step goes on without it.
      opening.then(release, () => {});
      this.failures++;
      return null;
    }
    this.session = session;
    return session;
  }

  /** Ends the session's invocation; the next step opens a new one. */
  close(): void {
    if (this.idleTimer !== null) clearTimeout(this.idleTimer);
    this.idleTimer = null;
    if (this.session !== null) release(this.session);
    this.session = null;
    this.served = 0;
  }
}

function release(session: StepSessionApi): void {
  try {
    session[Symbol.dispose]();
  } catch {
    // A stub whose session already broke has nothing left to release.
  }
}
