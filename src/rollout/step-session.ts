/**
 * An episode's steps through one step-worker session instead of one invocation each: a new
 * invocation per turn was about a third of a turn's CPU in the group object (BENCHMARKS.md).
 *
 * The semantics stay those of one invocation per step. A session holds no environment state
 * (each step replays the transcript on a fresh instance). Its steps share one invocation's CPU
 * limit, so a session serves at most STEPS_PER_SESSION steps, and a step whose session call
 * fails for any reason but its timeout is handed back to be retried on an invocation of its
 * own: a step that fits its own invocation's limits runs, exactly as before.
 */
import type { EnvCall } from "../env-workers/env-call";
import type { StepSessionApi, StepWorkerApi } from "../env-workers/step-worker";
import type { ChatMessage, EnvironmentStepResult, TaskExample } from "../sdk";
import { withTimeout } from "./timeout";

/** Steps one session serves before it is replaced by a fresh one. */
export const STEPS_PER_SESSION = 16;

export class EpisodeStepSession {
  private session: StepSessionApi | null = null;
  private served = 0;
  /** Bumped by close(): a session that arrives after it was given up on is released at once. */
  private epoch = 0;

  constructor(
    private readonly worker: StepWorkerApi,
    private readonly request: { env: string; example: TaskExample },
  ) {}

  /**
   * Steps the action at the end of `messages`. "retry_alone": the session failed; the caller
   * runs the step on an invocation of its own, which decides what the failure means.
   */
  async step(
    messages: ChatMessage[],
    timeoutMs: number,
  ): Promise<EnvCall<EnvironmentStepResult> | "timeout" | "retry_alone"> {
    try {
      // Opening the session counts against the step's timeout too: no call here can hang.
      const result = await withTimeout(this.call(messages), timeoutMs);
      if (result === "timeout") this.close();
      return result;
    } catch {
      this.close();
      return "retry_alone";
    }
  }

  private async call(messages: ChatMessage[]): Promise<EnvCall<EnvironmentStepResult>> {
    if (this.session === null || this.served >= STEPS_PER_SESSION) {
      this.close();
      const epoch = this.epoch;
      const session = await this.worker.session(this.request);
      if (epoch !== this.epoch) {
        release(session);
        throw new Error("the step session was given up on while it opened");
      }
      this.session = session;
    }
    this.served++;
    return this.session.step(messages);
  }

  /** Ends the session's invocation; the next step opens a new one. */
  close(): void {
    if (this.session !== null) release(this.session);
    this.session = null;
    this.served = 0;
    this.epoch++;
  }
}

function release(session: StepSessionApi): void {
  try {
    session[Symbol.dispose]();
  } catch {
    // A stub whose session already broke has nothing left to release.
  }
}
