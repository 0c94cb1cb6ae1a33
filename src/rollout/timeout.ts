/** Races a call against a timer; the caller decides what a timeout means. */
export async function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T | "timeout"> {
  let timer: ReturnType<typeof setTimeout> | null = null;
  const expired = new Promise<"timeout">((resolve) => {
    timer = setTimeout(() => resolve("timeout"), ms);
  });
  try {
    return await Promise.race([promise, expired]);
  } finally {
    if (timer !== null) clearTimeout(timer);
  }
}
