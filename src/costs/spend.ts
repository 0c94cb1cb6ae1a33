/**
 * What a run has spent: the ledger's counters, the same whether read from landed rows (D1's
 * `run_costs`) or from the groups still in flight (each group object's own transcripts).
 */

export interface Spend {
  /** Groups started (landed or not). */
  groups: number;
  /** Prompt tokens of every generation, cached ones included. */
  promptTokens: number;
  /** Of those, served from the host's prefix cache. */
  cachedTokens: number;
  /** Completion tokens kept in transcripts. */
  sampledTokens: number;
  /** Tokens the teacher of on-policy distillation prefilled. */
  teacherTokens: number;
  /** Prompt and completion tokens of every judge call that reported them. */
  judgeTokens: number;
  /** Time in environment code: step and score calls, remote ones included. */
  envSeconds: number;
  /** Generation calls that answered (one per sampled turn). */
  generations: number;
  /** Generation attempts beyond the first (timeouts and lost calls sent again). */
  retries: number;
  /** Tokens sampled and thrown away when an interrupting pause cut a generation. */
  discardedTokens: number;
  /** Generation, teacher and judge calls priced by their host's price; unpriced calls add 0. */
  usd: number;
  /** Generation and judge calls that could not be priced: no price, or no token counts. */
  unpricedCalls: number;
}

export const NO_SPEND: Spend = {
  groups: 0,
  promptTokens: 0,
  cachedTokens: 0,
  sampledTokens: 0,
  teacherTokens: 0,
  judgeTokens: 0,
  envSeconds: 0,
  generations: 0,
  retries: 0,
  discardedTokens: 0,
  usd: 0,
  unpricedCalls: 0,
};

export function addSpend(a: Spend, b: Spend): Spend {
  const sum = { ...a };
  for (const key of Object.keys(NO_SPEND) as (keyof Spend)[]) sum[key] = a[key] + b[key];
  return sum;
}

/** What a run spent at one read: its landed rows, and its groups in flight so far. */
export interface RunSpend {
  landed: Spend;
  inFlight: Spend;
  total: Spend;
  groupsInFlight: number;
  /**
   * Running groups whose spend is not in `inFlight`: their object did not answer, or they were
   * past the groups one request may ask.
   */
  unanswered: number;
  /** Generations in flight in the run's groups; null unless every one of them answered. */
  generationsInFlight: number | null;
}
