/**
 * `GET /metrics` as vLLM exposes it (Prometheus text, at the server root, not under /v1), with
 * the series a fleet scheduler reads: KV cache usage as a fraction (`vllm:kv_cache_usage_perc`,
 * 1 is full), requests running and waiting, and the prefix cache's queried and hit tokens
 * (counters, `_total` as prometheus_client names them). Names from vLLM's
 * `vllm/v1/metrics/loggers.py`.
 */
import type { Host } from "./host";

const LABELS = '{engine="0",model_name="sim"}';

function series(name: string, type: "gauge" | "counter", help: string, value: number): string {
  const sample = type === "counter" ? `${name}_total` : name;
  return `# HELP ${name} ${help}\n# TYPE ${name} ${type}\n${sample}${LABELS} ${value}\n`;
}

export function prometheusMetrics(host: Host): string {
  const cache = host.cache;
  return [
    series(
      "vllm:num_requests_running",
      "gauge",
      "Number of requests in model execution batches.",
      host.running,
    ),
    series("vllm:num_requests_waiting", "gauge", "Number of requests waiting to be processed.", 0),
    series(
      "vllm:kv_cache_usage_perc",
      "gauge",
      "KV-cache usage. 1 means 100 percent usage.",
      cache?.usage() ?? 0,
    ),
    series(
      "vllm:prefix_cache_queries",
      "counter",
      "Prefix cache queries, in terms of number of queried tokens.",
      cache?.queries ?? 0,
    ),
    series(
      "vllm:prefix_cache_hits",
      "counter",
      "Prefix cache hits, in terms of number of cached tokens.",
      cache?.hits ?? 0,
    ),
  ].join("");
}
