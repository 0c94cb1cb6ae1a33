/**
 * Exponential backoff, the one formula every retry here uses: `baseMs × 2^(attempt − 1)`,
 * capped at `maxMs`. With `jitter`, a random half of it ("equal jitter"), so callers that
 * failed together do not retry together.
 */
export interface Backoff {
  baseMs: number;
  maxMs: number;
  jitter?: boolean;
}

export function backoffDelayMs(
  attempt: number,
  { baseMs, maxMs, jitter = false }: Backoff,
): number {
  const delay = Math.min(baseMs * 2 ** Math.max(0, attempt - 1), maxMs);
  return jitter ? delay * (0.5 + Math.random() / 2) : delay;
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
