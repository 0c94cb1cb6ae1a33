// An episode's steps go through one step-worker session (an RpcTarget in the real StepWorker,
// reached through the real service binding) instead of one invocation each. What must hold: the
// same results as one invocation per step, no environment state kept between steps, sessions
// replaced after STEPS_PER_SESSION steps, a session opened ahead of its step used by it (or
// released when the step never comes), and a broken session never failing a step.
import { env } from "cloudflare:workers";
import { afterEach, describe, expect, it, vi } from "vitest";
import type { StepSessionApi, StepWorkerApi } from "../../src/env-workers/step-worker";
import { GuessNumber } from "../../src/environments/guess-number";
import { stepWorker } from "../../src/rollout/bindings";
import { EpisodeStepSession, STEPS_PER_SESSION } from "../../src/rollout/step-session";
import {
  type ChatMessage,
  type EnvironmentStepResult,
  sampledMessage,
  type TaskExample,
} from "../../src/sdk";
import { guessExample } from "./helpers";
import { registerTestEnvironment } from "./test-environments";

/** Counts the steps each environment instance has served: 1 every time if none is reused. */
class CountsItsSteps extends GuessNumber {
  private served = 0;
  override stepEpisode(example: TaskExample, messages: readonly ChatMessage[], response: string) {
    const result = super.stepEpisode(example, messages, response);
    return { ...result, metadata: { ...result.metadata, served: ++this.served } };
  }
}
registerTestEnvironment("counts-its-steps", () => new CountsItsSteps());

/**
 * Guess-number whose steps wait, past any timeout in these tests, until the test lets them go
 * (polling a flag: a promise resolved from the test's request would cross requests).
 */
const slowSteps = { letGo: false };
class StepsSlowly extends GuessNumber {
  override stepEpisode(example: TaskExample, messages: readonly ChatMessage[], response: string) {
    const late = async () => {
      while (!slowSteps.letGo) await new Promise((resolve) => setTimeout(resolve, 50));
      return super.stepEpisode(example, messages, response);
    };
    // Environments may step asynchronously; the base class happens not to.
    return late() as never;
  }
}
registerTestEnvironment("steps-slowly", () => new StepsSlowly());

const worker = stepWorker(env);
const example = guessExample("session", 100);
const request = { env: "counts-its-steps", example };

/**
 * The real step worker, counting the sessions it is asked to open. `broken`: each session's
 * invocation is gone before it is used, as after a CPU limit or a lost connection. `stuck`:
 * opening a session never answers. `refused`: opening one fails.
 */
function countingWorker(fault: "broken" | "stuck" | "refused" | null = null) {
  const counts = { sessions: 0, opened: 0, released: 0 };
  const wrapped: StepWorkerApi = {
    open: (r) => worker.open(r),
    step: (r) => worker.step(r),
    async session(r): Promise<StepSessionApi> {
      counts.sessions++;
      if (fault === "stuck") return new Promise<never>(() => {});
      if (fault === "refused") throw new Error("no session for you");
      const session = await worker.session(r);
      counts.opened++;
      if (fault === "broken") session[Symbol.dispose]();
      return {
        step: (messages) => session.step(messages),
        [Symbol.dispose]: () => {
          counts.released++;
          session[Symbol.dispose]();
        },
      };
    },
  };
  return { wrapped, counts };
}

/** A transcript of `turn` wrong guesses (1, 2, …) and their replies, then the guess to step. */
function transcriptAt(turn: number): ChatMessage[] {
  const messages: ChatMessage[] = [{ role: "user", content: "Guess a number." }];
  for (let t = 0; t < turn; t++) {
    messages.push(sampledMessage({ content: `<guess>${t + 1}</guess>` }));
    messages.push({ role: "user", content: `${t + 1} is too low.` });
  }
  messages.push(sampledMessage({ content: `<guess>${turn + 1}</guess>` }));
  return messages;
}

describe("an episode's step session", () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it("gives the results of one invocation per step, from a fresh environment each step", async () => {
    const { wrapped } = countingWorker();
    const session = new EpisodeStepSession(wrapped, request);
    try {
      for (let turn = 0; turn < 5; turn++) {
        const viaSession = await session.step(transcriptAt(turn), 5000);
        const alone = await worker.step({ ...request, messages: transcriptAt(turn) });
        expect(viaSession).toEqual({ kind: "answered", call: alone });
        const value = (alone as { value: EnvironmentStepResult }).value;
        expect(value.metadata).toEqual({ guess: turn + 1, served: 1 });
      }
    } finally {
      session.close();
    }
  });

  it(`serves ${STEPS_PER_SESSION} steps per session, then opens a fresh one`, async () => {
    const { wrapped, counts } = countingWorker();
    const session = new EpisodeStepSession(wrapped, request);
    try {
      for (let turn = 0; turn < STEPS_PER_SESSION + 2; turn++) {
        const result = await session.step(transcriptAt(turn), 5000);
        expect(result).toMatchObject({ kind: "answered", call: { ok: true } });
      }
      expect(counts.sessions).toBe(2);
    } finally {
      session.close();
    }
  });

  it("opens the next step's session ahead of it, and the step uses that one", async () => {
    const { wrapped, counts } = countingWorker();
    const session = new EpisodeStepSession(wrapped, request);
    try {
      // The driver prepares as a generation goes out; the step comes once it has answered.
      session.prepare();
      expect(counts.sessions).toBe(1);
      session.prepare();
      expect(await session.step(transcriptAt(0), 5000)).toMatchObject({
        kind: "answered",
        call: { ok: true },
      });
      session.prepare();
      expect(await session.step(transcriptAt(1), 5000)).toMatchObject({ kind: "answered" });
      expect(counts.sessions).toBe(1);
    } finally {
      session.close();
    }
    expect(counts.released).toBe(1);
  });

  it("releases a session prepared for a step that never came", async () => {
    const { wrapped, counts } = countingWorker();
    // The episode ended (or parked) before its step: its driver closes the session at once.
    const ended = new EpisodeStepSession(wrapped, request);
    ended.prepare();
    ended.close();
    await vi.waitFor(() => expect(counts.released).toBe(1));
    // A long generation: a session opened ahead of it is released once idle for 30 s, and the
    // step after it opens a fresh one.
    vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout", "Date"] });
    const waiting = new EpisodeStepSession(wrapped, request);
    try {
      waiting.prepare();
      // Opened for real before the clock moves: its 5 s to open are the test's clock too.
      await vi.waitFor(() => expect(counts.opened).toBe(2));
      await vi.advanceTimersByTimeAsync(29_000);
      expect(counts.released).toBe(1);
      await vi.advanceTimersByTimeAsync(1_000);
      expect(counts.released).toBe(2);
      vi.useRealTimers();
      expect(await waiting.step(transcriptAt(0), 5000)).toMatchObject({ kind: "answered" });
      expect(counts.sessions).toBe(3);
    } finally {
      waiting.close();
    }
  });

  it("takes a prepared opening's failure as its step's: counted and reported once, not retried", async () => {
    const warn = vi.spyOn(console, "warn").mockImplementation(() => {});
    const { wrapped, counts } = countingWorker("refused");
    const session = new EpisodeStepSession(wrapped, request);
    for (let turn = 0; turn < 3; turn++) {
      session.prepare();
      // The generation takes a while: the opening has failed before the step comes.
      await vi.waitFor(() => expect(warn).toHaveBeenCalledTimes(turn + 1));
      expect(await session.step(transcriptAt(turn), 5000)).toEqual({ kind: "retry_alone" });
      expect(counts.sessions).toBe(turn + 1);
    }
    // Three failures in a row, one per step: the episode stops asking.
    session.prepare();
    expect(await session.step(transcriptAt(3), 5000)).toEqual({ kind: "retry_alone" });
    expect(counts.sessions).toBe(3);
    expect(warn).toHaveBeenCalledTimes(3);
    session.close();
    warn.mockRestore();
  });

  it("does not wait again for a session that a prepared opening already gave up on", async () => {
    vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout", "Date"] });
    const { wrapped, counts } = countingWorker("stuck");
    const session = new EpisodeStepSession(wrapped, request);
    session.prepare();
    // A generation longer than the 5 s an opening may take.
    await vi.advanceTimersByTimeAsync(8_000);
    let answered = false;
    const stepping = session.step(transcriptAt(0), 20_000).finally(() => {
      answered = true;
    });
    await vi.advanceTimersByTimeAsync(0);
    expect(answered).toBe(true);
    expect(await stepping).toEqual({ kind: "retry_alone" });
    expect(counts.sessions).toBe(1);
    session.close();
  });

  it("hands a step back to run on its own invocation when the session breaks, and says so", async () => {
    // The warning is what an operator sees in the Worker's logs; here it is asserted, not printed.
    const warn = vi.spyOn(console, "warn").mockImplementation(() => {});
    const { wrapped, counts } = countingWorker("broken");
    const session = new EpisodeStepSession(wrapped, request);
    expect(await session.step(transcriptAt(0), 5000)).toEqual({ kind: "retry_alone" });
    // The broken session is dropped: the next step asks for a new one.
    expect(await session.step(transcriptAt(1), 5000)).toEqual({ kind: "retry_alone" });
    expect(counts.sessions).toBe(2);
    // After three broken sessions in a row the episode stops asking for more.
    expect(await session.step(transcriptAt(2), 5000)).toEqual({ kind: "retry_alone" });
    expect(await session.step(transcriptAt(3), 5000)).toEqual({ kind: "retry_alone" });
    expect(counts.sessions).toBe(3);
    session.close();
    expect(warn).toHaveBeenCalledTimes(3);
    expect(warn).toHaveBeenCalledWith(
      expect.stringMatching(/^step session failed, stepping on its own invocation: /),
    );
    warn.mockRestore();
  });

  it("hands a step back, not a step timeout, when a session does not open in time", async () => {
    // The session's clock and timers are the test's: the 5 s it may take to open are not waited.
    vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout", "Date"] });
    const { wrapped, counts } = countingWorker("stuck");
    const session = new EpisodeStepSession(wrapped, request);
    let answered = false;
    // The step's own timeout is longer than the 5 s a session may take to open.
    const stepping = session.step(transcriptAt(0), 20_000).finally(() => {
      answered = true;
    });
    await vi.advanceTimersByTimeAsync(4_999);
    expect(answered).toBe(false);
    await vi.advanceTimersByTimeAsync(1);
    expect(await stepping).toEqual({ kind: "retry_alone" });
    expect(counts.sessions).toBe(1);
    session.close();
  });

  it("times a step out at its deadline and gives the next step a fresh session", async () => {
    const { wrapped, counts } = countingWorker();
    const session = new EpisodeStepSession(wrapped, { env: "steps-slowly", example });
    slowSteps.letGo = false;
    try {
      expect(await session.step(transcriptAt(0), 300)).toEqual({ kind: "timeout" });
      expect(await session.step(transcriptAt(1), 300)).toEqual({ kind: "timeout" });
      // The invocation may still be running the stuck step: the next one does not go there.
      expect(counts.sessions).toBe(2);
    } finally {
      slowSteps.letGo = true;
      session.close();
    }
  });

  it("reports an environment error as a result, not as a broken session", async () => {
    const session = new EpisodeStepSession(worker, { env: "no-such-env", example });
    try {
      const result = await session.step(transcriptAt(0), 5000);
      expect(result).toMatchObject({
        kind: "answered",
        call: { ok: false, error: expect.stringMatching(/no-such-env/) },
      });
    } finally {
      session.close();
    }
  });
});
