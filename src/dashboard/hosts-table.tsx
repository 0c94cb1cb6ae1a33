/**
 * The overview's Hosts table: each inference host as the fleet scheduler sees it now (state,
 * episodes in flight, cap, declared version, last error) beside what it did, from `host_stats`
 * (requests, failures, prefix cache hits, latency). A host that served the run but is no longer
 * configured still shows its figures.
 */
import type { HostsView } from "../fleet/hosts-wire";
import { fmt } from "./layout";
import type { HostStatsRow } from "./queries";

type Live = HostsView["hosts"][number];

const percent = (rate: number | null) => (rate === null ? "-" : `${(rate * 100).toFixed(1)}%`);

export function HostsTable(props: {
  live: readonly Live[];
  stats: readonly HostStatsRow[];
  run: string | null;
}) {
  const byUrl = new Map(props.stats.map((s) => [s.host, s]));
  const gone = props.stats.filter((s) => !props.live.some((h) => h.url === s.host));
  const rows = [
    ...props.live.map((h) => ({ url: h.url, live: h as Live | null, stats: byUrl.get(h.url) })),
    ...gone.map((s) => ({ url: s.host, live: null, stats: s as HostStatsRow | undefined })),
  ];
  return (
    <>
      <h2>Hosts</h2>
      <table data-testid="hosts">
        <thead>
          <tr>
            <th>host</th>
            <th>state</th>
            <th class="num">in flight</th>
            <th class="num">cap</th>
            <th class="num">version</th>
            <th class="num">requests</th>
            <th class="num">failures</th>
            <th class="num">cache hits</th>
            <th class="num">latency p50 / p99 (ms)</th>
            <th>last error</th>
          </tr>
        </thead>
        <tbody>
          {rows.map(({ url, live, stats }) => (
            <tr class={live !== null && live.state !== "healthy" ? "warn" : ""}>
              <td title={url}>{live?.name ?? url}</td>
              <td>{live?.state ?? "not configured"}</td>
              <td class="num">{live?.in_flight ?? "-"}</td>
              <td class="num">{live?.cap ?? "-"}</td>
              <td class="num">{live?.policy_version ?? "-"}</td>
              <td class="num">{stats?.requests ?? 0}</td>
              <td class="num">{stats?.failures ?? 0}</td>
              <td class="num">{percent(stats?.cache_hit_rate ?? null)}</td>
              <td class="num">
                {stats?.latency_ms_p50 == null
                  ? "-"
                  : `${fmt(stats.latency_ms_p50, 0)} / ${fmt(stats.latency_ms_p99, 0)}`}
              </td>
              <td title={live?.last_error ?? ""}>{(live?.last_error ?? "").slice(0, 60)}</td>
            </tr>
          ))}
        </tbody>
      </table>
      <p class="note">
        State, in flight, cap and version are the fleet's now (GET /v1/hosts); requests, failures,
        cache hits and latency are from the <code>host_stats</code> view
        {props.run === null
          ? ", over all runs (choose a run for its latency)"
          : `, run ${props.run}`}
        .
      </p>
    </>
  );
}
