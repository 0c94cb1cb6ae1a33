/**
 * What a group still in flight has spent so far, read from its object's own storage: the run's
 * budget and `GET /v1/runs/:run_id` add it to the landed rows. Derived from the transcripts on
 * every ask, never a counter, so a restart can neither lose nor double it. Counts what the
 * landing will (episode-costs.ts): the teacher's prefills are known only at landing.
 */
import type { PriceBook } from "../config";
import { usdOf } from "../costs/price";
import { NO_SPEND, type Spend } from "../costs/spend";
import { episodeCosts } from "./episode-costs";
import type { GroupStorage } from "./storage/group-storage";

export function inFlightSpend(store: GroupStorage, prices: PriceBook): Spend {
  const spend: Spend = { ...NO_SPEND };
  for (const host of store.transcripts.usageByHost()) {
    spend.generations += host.generations;
    spend.promptTokens += host.promptTokens;
    spend.cachedTokens += host.cachedTokens;
    spend.sampledTokens += host.completionTokens;
    spend.retries += host.retries;
    const price = prices.host(host.host);
    if (price === null) spend.unpricedCalls += host.generations;
    else {
      spend.usd += usdOf(host, price) ?? 0;
      spend.unpricedCalls += host.unmetered;
    }
  }
  let envMs = store.group.get().scoreMs;
  for (const e of store.episodes.all()) {
    spend.discardedTokens += e.discardedTokens;
    envMs += e.envMs;
    // Judge calls of a grading not landed yet: priced as the landing prices them.
    const judged = episodeCosts([], e.judgements, { envMs: 0, teacherTokens: 0 }, prices);
    spend.judgeTokens += judged.judgeTokens;
    spend.usd += judged.usd;
    spend.unpricedCalls += judged.unpricedCalls;
  }
  spend.envSeconds = envMs / 1000;
  return spend;
}
