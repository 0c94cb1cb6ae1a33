/** Races a call against a timer; the caller decides what a timeout means. */
export type Timed<T> = { kind: "in_time"; value: T } | { kind: "timeout" };

export async function withTimeout<T>(promise: Promise<T>, ms: number): Promise<Timed<T>> {
  let timer: ReturnType<typeof setTimeout> | null = null;
  const expired = new Promise<Timed<T>>((resolve) => {
    timer = setTimeout(() => resolve({ kind: "timeout" }), ms);
  });
  try {
    return await Promise.race([
      promise.then((value) => ({ kind: "in_time", value }) as const),
      expired,
    ]);
  } finally {
    if (timer !== null) clearTimeout(timer);
  }
}
