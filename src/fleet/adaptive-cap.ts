/**
 * A host's in-flight cap, adapted to its KV cache as prime-rl's orchestrator adapts its own
 * (`src/prime_rl/orchestrator/concurrency.py`): grown by a quarter while the cache is under 60 %
 * used and the cap binds (episodes wait, and the host holds at least 90 % of its cap), cut to what
 * would fill the cache to 70 % once it is over 80 %. The usage is read from the host's Prometheus
 * `/metrics` at its root: vLLM's `vllm:kv_cache_usage_perc`, SGLang's `sglang:token_usage` (both
 * a fraction, 1 is full; SGLang serves them with `--enable-metrics`).
 */

export const KV_GROW_BELOW = 0.6;
export const KV_TRIM_ABOVE = 0.8;
export const KV_TARGET = 0.7;
const GROWTH = 1.25;
const BINDING = 0.9;

/** The KV cache usage a host reports, the highest over its engines; null if it reports none. */
export function kvUsage(metrics: string): number | null {
  let usage: number | null = null;
  for (const line of metrics.split("\n")) {
    const m =
      /^(vllm:kv_cache_usage_perc|vllm:gpu_cache_usage_perc|sglang:token_usage)(?:\{[^}]*\})?\s+(\S+)/.exec(
        line,
      );
    const value = Number(m?.[2]);
    if (m && Number.isFinite(value)) usage = Math.max(usage ?? 0, value);
  }
  return usage;
}

export interface CapState {
  cap: number;
  /** Episodes holding a permit on the host now. */
  load: number;
  /** Episodes waiting for a permit anywhere in the fleet. */
  waiting: number;
}

/** The next cap, within [1, ceiling]. */
export function nextCap(state: CapState, usage: number, ceiling: number): number {
  const { cap, load, waiting } = state;
  if (usage > KV_TRIM_ABOVE)
    return Math.max(1, Math.min(cap, Math.floor((load * KV_TARGET) / usage)));
  if (usage < KV_GROW_BELOW && waiting > 0 && load >= BINDING * cap)
    return Math.min(ceiling, Math.max(cap + 1, Math.floor(cap * GROWTH)));
  return cap;
}
