/** The simulator as each of its routes sees it: how it is configured, and what it remembers. */
import type { TemplateKind } from "./chat-template";
import { type Directives, parseModel } from "./directives";
import type { FaultRates } from "./faults";
import type { HostLedger } from "./host-ledger";
import type { PrefixCache } from "./prefix-cache";

export interface LatencyModel {
  /** Time to first token, plus a share proportional to the prompt. */
  ttftMs: number;
  msPerPromptToken: number;
  msPerToken: number;
}

export interface Host {
  latency: LatencyModel;
  faults: FaultRates;
  /** The chat template when no directive picks one. */
  template: TemplateKind;
  /** Answers `return_token_ids`; false plays a host older than vLLM 0.10.2. */
  tokenIds: boolean;
  ledger: HostLedger;
  /** Its prefix cache (prefix-cache.ts); null: nothing is cached, as before it was modelled. */
  cache: PrefixCache | null;
  /** Generations it is answering now (vLLM's `num_requests_running`). */
  running: number;
  /** Every wait of the latency model times this: 10 plays a host ten times slower. */
  slowFactor: number;
  /**
   * Every completion this many tokens long (the action, then filler) unless its model names a
   * `pad:N` of its own; null: as long as the action. With `msPerToken`, a long generation
   * streaming for seconds, as a reasoning model's does.
   */
  longTokens: number | null;
  /**
   * With a shared prefill (SimulatorOptions.sharedPrefill), when its prefill is next free (ms
   * since the epoch); null when each request's prefill is its own.
   */
  prefillFreeAt: number | null;
}

/**
 * How long a request waits for its prefill of `ms`. A GPU prefills at one rate whatever it
 * batches, so with a shared prefill the requests' prefills follow one another (the host is a
 * queue of prefill work, and tokens it must compute again delay everyone behind them); without,
 * each request's prefill is its own, as if the host had room for all of them at once.
 */
export function prefillWait(host: Host, ms: number, now = Date.now()): number {
  if (host.prefillFreeAt === null) return ms;
  const start = Math.max(now, host.prefillFreeAt);
  host.prefillFreeAt = start + ms;
  return host.prefillFreeAt - now;
}

/** The template a request is rendered with: `think` (dropping reasoning) picks Qwen3's. */
export function templateFor(host: Host, directives: Directives): TemplateKind {
  return directives.think === "drop" ? "drop-reasoning" : host.template;
}

/** vLLM's `max_model_len`: the `context:T` directive's T, else a 128k-token model's. */
export function maxModelLen(directives: Directives): number {
  return directives.contextLimit ?? 131_072;
}

/** A request's model name and directives, with what the host does by default filled in. */
export function modelOf(host: Host, model: string) {
  const parsed = parseModel(model);
  if (parsed.directives.padTokens === undefined && host.longTokens !== null)
    parsed.directives.padTokens = host.longTokens;
  return parsed;
}
