/**
 * An episode's steps through one step-worker session instead of one invocation each: a new
 * invocation per turn was the largest single cost of a turn in the group object (docs/benchmarks.md).
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
import { type Timed, withTimeout } from "../utils/timeout";

/** Steps one session serves before it is replaced by a fresh one. */
export const STEPS_PER_SESSION = 16;
/** A session unused this long is released: a long generation does not keep it open. */
const SESSION_IDLE_MS = 30_000;
/** How long opening a session may take before the step runs on its own invocation instead. */
const OPEN_TIMEOUT_MS = 5_000;
/** Broken sessions in a row after which the episode stops asking for sessions. */
const FAILURES_BEFORE_GIVING_UP = 3;

/** What became of a step sent through a session. */
export type SessionStep =
  /** The environment answered (which may be its own error). */
  | { kind: "answered"; call: EnvCall<EnvironmentStepResult> }
  /** The step ran past its deadline. */
  | { kind: "timeout" }
  /** No session could take the step: run it on an invocation of its own. */
  | { kind: "retry_alone" };

const RETRY_ALONE: SessionStep = { kind: "retry_alone" };

export class EpisodeStepSession {
  private session: StepSessionApi | null = null;
  private served = 0;
  private failures = 0;
  private lastUsedAt = 0;
  /** The step in flight: when it runs out of time, and how to end its wait. */
  private inFlight: { deadline: number; expire: () => void } | null = null;
  /**
   * One timer serves both the step deadline and the idle release, and is re-armed only when it
   * fires or must fire sooner: a timer set and cleared per step cost more than the step's
   * bookkeeping (docs/benchmarks.md).
   */
  private timer: ReturnType<typeof setTimeout> | null = null;
  private timerAt = Number.POSITIVE_INFINITY;
  /** The opening prepared for the next step, in progress or settled: that step takes it. */
  private opening: Promise<StepSessionApi | null> | null = null;
  /** Times close() ran: an opening that finds it moved on was closed before it arrived. */
  private closes = 0;

  constructor(
    private readonly worker: StepWorkerApi,
    private readonly request: StepSessionRequest,
  ) {}

  /**
   * Steps the action at the end of `messages`. `retry_alone`: no session could take the step;
   * the caller runs it on an invocation of its own.
   */
  async step(messages: ChatMessage[], timeoutMs: number): Promise<SessionStep> {
    if (this.failures >= FAILURES_BEFORE_GIVING_UP) return RETRY_ALONE;
    try {
      const session = await this.open();
      if (session === null) return RETRY_ALONE;
      this.served++;
      const deadline = Date.now() + timeoutMs;
      const expired = new Promise<SessionStep>((resolve) => {
        this.inFlight = { deadline, expire: () => resolve({ kind: "timeout" }) };
      });
      this.wakeBy(deadline);
      const result = await Promise.race([
        session.step(messages).then((call): SessionStep => ({ kind: "answered", call })),
        expired,
      ]);
      if (result.kind === "timeout") this.close();
      this.failures = 0;
      return result;
    } catch (error) {
      this.failed(error);
      this.close();
      return RETRY_ALONE;
    } finally {
      this.inFlight = null;
      this.lastUsedAt = Date.now();
    }
  }

  /** Makes sure the timer fires by `at`. */
  private wakeBy(at: number): void {
    if (this.timer !== null && this.timerAt <= at) return;
    if (this.timer !== null) clearTimeout(this.timer);
    this.timerAt = at;
    this.timer = setTimeout(() => this.onTimer(), Math.max(0, at - Date.now()));
  }

  private onTimer(): void {
    this.timer = null;
    this.timerAt = Number.POSITIVE_INFINITY;
    const now = Date.now();
    if (this.inFlight !== null) {
      if (now >= this.inFlight.deadline) this.inFlight.expire();
      else this.wakeBy(this.inFlight.deadline);
      return;
    }
    if (this.session === null) return;
    const idleUntil = this.lastUsedAt + SESSION_IDLE_MS;
    if (now >= idleUntil) this.close();
    else this.wakeBy(idleUntil);
  }

  /**
   * Starts opening the session now, before the episode's next step needs it: the driver calls
   * this as a generation goes out, so the opening overlaps the generation instead of adding its
   * round trip to the step. When a batch of groups starts together, their first generations end
   * together, and openings left to the first steps queued behind each other in that burst.
   */
  prepare(): void {
    if (this.failures >= FAILURES_BEFORE_GIVING_UP || this.opening !== null) return;
    if (this.session !== null && this.served < STEPS_PER_SESSION) return;
    this.startOpening();
  }

  /**
   * The session for a step: the current one, the one prepared for it (waited for, or its
   * failure taken as this step's), or a fresh one; null when none opened.
   */
  private async open(): Promise<StepSessionApi | null> {
    if (this.session !== null && this.served < STEPS_PER_SESSION) return this.session;
    const opening = this.opening ?? this.startOpening();
    const session = await opening;
    if (this.opening === opening) this.opening = null;
    return session;
  }

  private startOpening(): Promise<StepSessionApi | null> {
    this.close();
    const opening = this.openFresh(this.closes);
    this.opening = opening;
    return opening;
  }

  /** Never rejects: a failure to open is counted and reported here, once, and is a null. */
  private async openFresh(closedAt: number): Promise<StepSessionApi | null> {
    let opening: Promise<StepSessionApi> | null = null;
    let opened: Timed<StepSessionApi>;
    try {
      opening = this.worker.session(this.request);
      opened = await withTimeout(opening, OPEN_TIMEOUT_MS);
    } catch (error) {
      if (this.closes === closedAt) this.failed(error);
      return null;
    }
    if (opened.kind === "timeout") {
      // Released whenever it does arrive; the step goes on without it.
      opening?.then(release, () => {});
      if (this.closes === closedAt) this.failures++;
      return null;
    }
    // Closed while it opened (the episode ended or parked first): nobody will use it.
    if (this.closes !== closedAt) {
      release(opened.value);
      return null;
    }
    this.session = opened.value;
    this.opening = null;
    // Opened ahead of its step, it is released if that step does not come soon.
    this.lastUsedAt = Date.now();
    this.wakeBy(this.lastUsedAt + SESSION_IDLE_MS);
    return opened.value;
  }

  private failed(error: unknown): void {
    this.failures++;
    console.warn(`step session failed, stepping on its own invocation: ${errorMessage(error)}`);
  }

  /** Ends the session's invocation; the next step opens a new one. */
  close(): void {
    this.closes++;
    this.opening = null;
    if (this.timer !== null) clearTimeout(this.timer);
    this.timer = null;
    this.timerAt = Number.POSITIVE_INFINITY;
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
