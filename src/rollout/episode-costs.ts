/**
 * What one episode cost, as it lands (the run's bill, `run_costs`): its generations from its
 * transcript, each priced by the host that answered; its judge calls at the judge's price; the
 * teacher's prefills at the teacher's; and its time in environment code. The group object's
 * in-flight count (in-flight-spend.ts) reads the same transcript the same way. A call with no
 * price, or no token counts (a judge call that timed out), adds $0 and counts as unpriced.
 */
import type { PriceBook } from "../config";
import { type Price, usdOf } from "../costs/price";
import type { JudgementRecord } from "../judges/host-judge";
import type { MessageRow } from "./storage/transcripts";

/** A judge call's tokens and cost; `usd` null when the judge has no price. */
export function judgementCost(
  j: JudgementRecord,
  price: Price | null,
): {
  promptTokens: number | null;
  cachedTokens: number | null;
  completionTokens: number | null;
  usd: number | null;
} {
  const usage = j.usage ?? { promptTokens: null, cachedTokens: null, completionTokens: null };
  return { ...usage, usd: usdOf(usage, price) };
}

/** An episode's ledger columns (D1 `episodes`). */
export interface EpisodeCosts {
  cachedTokens: number;
  generations: number;
  retries: number;
  envMs: number;
  teacherTokens: number;
  judgeTokens: number;
  usd: number;
  unpricedCalls: number;
}

/** The cost of one sampled message at its host's price; null when unpriced (or not sampled). */
export function messageUsd(m: MessageRow, prices: PriceBook): number | null {
  return m.sampled ? usdOf(m, prices.host(m.host)) : null;
}

export function episodeCosts(
  messages: readonly MessageRow[],
  judgements: readonly JudgementRecord[],
  measured: { envMs: number; teacherTokens: number },
  prices: PriceBook,
): EpisodeCosts {
  const costs: EpisodeCosts = {
    cachedTokens: 0,
    generations: 0,
    retries: 0,
    envMs: measured.envMs,
    teacherTokens: measured.teacherTokens,
    judgeTokens: 0,
    usd: 0,
    unpricedCalls: 0,
  };
  for (const m of messages) {
    if (!m.sampled) continue;
    costs.generations++;
    costs.cachedTokens += m.cachedTokens ?? 0;
    costs.retries += Math.max(0, (m.attempts ?? 1) - 1);
    const usd = messageUsd(m, prices);
    if (usd === null) costs.unpricedCalls++;
    else costs.usd += usd;
  }
  for (const j of judgements) {
    const cost = judgementCost(j, prices.judge);
    costs.judgeTokens += (cost.promptTokens ?? 0) + (cost.completionTokens ?? 0);
    if (cost.usd === null) costs.unpricedCalls++;
    else costs.usd += cost.usd;
  }
  // The teacher's prefills are prompt tokens to it.
  if (measured.teacherTokens > 0)
    costs.usd +=
      usdOf({ promptTokens: measured.teacherTokens, completionTokens: 0 }, prices.teacher) ?? 0;
  return costs;
}
