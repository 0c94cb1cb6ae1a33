/**
 * The clock the Worker and its Durable Objects read, moved by the test instead of waited for.
 * They run in the test's isolate, so vitest's fake Date is theirs too: a lease's expiry, a
 * deadline or a retry time computed from Date.now() sees the jump. Only Date is faked: timers
 * still fire in real time, and between jumps the fake clock runs on with the real one.
 */
import { afterEach, beforeEach, vi } from "vitest";

const fakeDate = () => vi.useFakeTimers({ toFake: ["Date"], shouldAdvanceTime: true });

/** Fakes Date for each test of the enclosing describe block (or file); real again after each. */
export function useFakeClock(): void {
  beforeEach(() => {
    fakeDate();
  });
  afterEach(() => {
    vi.useRealTimers();
  });
}

/** Runs `story` (a shared setup, say) with Date faked; real again after it. */
export async function withFakeClock<T>(story: () => Promise<T>): Promise<T> {
  fakeDate();
  try {
    return await story();
  } finally {
    vi.useRealTimers();
  }
}

/** `ms` pass at once, for everything that reads the clock. */
export function passTime(ms: number): void {
  vi.setSystemTime(Date.now() + ms);
}
