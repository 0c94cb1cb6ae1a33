/**
 * The dashboard's front page: runs, their costs, reward distributions, success rates, policy
 * trend, failures.
 */

import type { HostsView } from "../fleet/hosts-wire";
import { binValues, color, Histogram, LineChart, type Series, ShareBars } from "./charts";
import { CostsPanel } from "./costs-panel";
import { HostsTable } from "./hosts-table";
import { fmt, Layout, Pill } from "./layout";
import type { EvalPoint, HostStatsRow, overview } from "./queries";

type Overview = Awaited<ReturnType<typeof overview>>;

/**
 * Evaluation curves by policy version: pass@1 for each run and environment, and pass@k and
 * maj@k at the largest k (8 for groups of 8) when it is above 1.
 */
function evalSeries(points: readonly EvalPoint[]): Series[] {
  const series = new Map<string, { x: number; y: number }[]>();
  const add = (name: string, x: number, y: number | null) => {
    if (y !== null) series.set(name, [...(series.get(name) ?? []), { x, y }]);
  };
  for (const p of points) {
    const at = `${p.run_id} · ${p.env}`;
    if (p.k === 1) add(`${at} · pass@1`, p.policy_version, p.pass_at_k);
    else {
      add(`${at} · pass@${p.k}`, p.policy_version, p.pass_at_k);
      add(`${at} · maj@${p.k}`, p.policy_version, p.maj_at_k);
    }
  }
  return [...series].map(([name, pts]) => ({ name, points: pts.sort((a, b) => a.x - b.x) }));
}

function byKey<T>(rows: readonly T[], key: (row: T) => string): Map<string, T[]> {
  const map = new Map<string, T[]>();
  for (const row of rows) map.set(key(row), [...(map.get(key(row)) ?? []), row]);
  return map;
}

export function OverviewPage(props: {
  data: Overview;
  hosts: { live: HostsView["hosts"]; stats: HostStatsRow[] };
  run: string | null;
}) {
  const {
    runs,
    scores,
    success,
    byVersion,
    failures,
    groups,
    totals,
    drift,
    distillation,
    policies,
    evals,
    components,
    costs,
  } = props.data;
  const evalCurves = evalSeries(evals);
  const envs = [...byKey(scores, (s) => s.env)];
  const series: Series[] = [...byKey(byVersion, (r) => `${r.run_id} · ${r.env}`)].map(
    ([name, rows]) => ({
      name,
      points: rows
        .map((r) => ({ x: r.policy_version, y: r.mean_reward }))
        .sort((a, b) => a.x - b.x),
    }),
  );
  // Distillation: does the student's reverse KL to its teacher fall as the policy trains?
  const klSeries: Series[] = [
    ...byKey(distillation, (r) => `${r.run_id} · ${r.teacher_model}`),
  ].map(([name, rows]) => ({
    name,
    points: rows.map((r) => ({ x: r.policy_version, y: r.reverse_kl })),
  }));
  const episodes = runs.reduce((n, r) => n + r.episodes, 0);
  const meanReward =
    scores.length > 0 ? scores.reduce((a, s) => a + s.score, 0) / scores.length : null;
  return (
    <Layout title={props.run ? `run ${props.run}` : "overview"}>
      <h1>{props.run ? `Run ${props.run}` : "All runs"}</h1>
      <div class="cards">
        <div class="card">
          <b>{totals.groups}</b>
          <span>groups ({totals.running ?? 0} running)</span>
        </div>
        <div class="card">
          <b>{episodes}</b>
          <span>episodes landed</span>
        </div>
        <div class="card">
          <b>{fmt(meanReward)}</b>
          <span>mean reward</span>
        </div>
        <div class="card">
          <b>{failures.reduce((n, f) => n + f.episodes, 0)}</b>
          <span>failed episodes</span>
        </div>
      </div>

      <h2>Rewards</h2>
      {envs.length === 0 ? (
        <p class="empty">No scored episodes yet. Start a group, or run `npm run demo`.</p>
      ) : (
        <div class="charts">
          {envs.map(([env, rows], i) => (
            <Histogram
              title={`reward distribution · ${env}`}
              bins={binValues(rows.map((r) => r.score))}
              fill={color(i)}
              testId="reward-histogram"
            />
          ))}
          <ShareBars
            title="success rate by environment"
            rows={success.map((s) => ({ label: s.env, value: s.rate }))}
            testId="success-rate-chart"
          />
          {series.length > 0 ? (
            <LineChart
              title="mean reward by policy version"
              series={series}
              xLabel="policy version"
              testId="policy-version-chart"
            />
          ) : null}
          {evalCurves.length > 0 ? (
            <LineChart
              title="evaluations: pass@k and maj@k by policy version (held-out, eval_results)"
              series={evalCurves}
              xLabel="policy version"
              testId="eval-chart"
            />
          ) : null}
          {klSeries.length > 0 ? (
            <LineChart
              title="distillation: reverse KL to the teacher by policy version"
              series={klSeries}
              xLabel="policy version"
              testId="reverse-kl-chart"
            />
          ) : null}
        </div>
      )}

      {policies.length > 0 ? (
        <>
          <h2>Policies</h2>
          <p class="note">
            What each run's trainer set (POST /v1/runs/:id/policy): groups started from now on take
            its version, and a paused run's new generations wait for the weight sync to end.
          </p>
          <table data-testid="policies">
            <thead>
              <tr>
                <th>run</th>
                <th class="num">version</th>
                <th class="num">max lag</th>
                <th>state</th>
                <th class="num">in flight</th>
                <th class="num">unleased</th>
                <th class="num">stale episodes</th>
                <th class="num">stale turns</th>
                <th>updated</th>
              </tr>
            </thead>
            <tbody>
              {policies.map((p) => (
                <tr>
                  <td>{p.run_id}</td>
                  <td class="num">{p.version}</td>
                  <td class="num">{p.max_lag ?? "-"}</td>
                  <td>{p.paused ? "paused" : "generating"}</td>
                  <td class="num">{p.groups_in_flight}</td>
                  <td class="num">{p.groups_unleased}</td>
                  <td class="num">{p.stale_episodes}</td>
                  <td class="num">{p.stale_turns}</td>
                  <td>{p.updated_at}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </>
      ) : null}

      <HostsTable live={props.hosts.live} stats={props.hosts.stats} run={props.run} />

      <h2>Runs</h2>
      <table data-testid="runs">
        <thead>
          <tr>
            <th>run</th>
            <th>env</th>
            <th class="num">groups</th>
            <th class="num">episodes</th>
            <th class="num">mean reward</th>
            <th class="num">success</th>
            <th class="num">turns</th>
            <th class="num">tokens</th>
            <th class="num">failed</th>
            <th>last episode</th>
          </tr>
        </thead>
        <tbody>
          {runs.map((r) => (
            <tr>
              <td>
                <a href={`/?run=${encodeURIComponent(r.run_id)}`}>{r.run_id}</a>
              </td>
              <td>{r.env}</td>
              <td class="num">{r.groups}</td>
              <td class="num">{r.episodes}</td>
              <td class="num">{fmt(r.mean_reward)}</td>
              <td class="num">
                {r.success_rate === null ? "-" : `${Math.round(r.success_rate * 100)}%`}
              </td>
              <td class="num">{fmt(r.mean_turns, 1)}</td>
              <td class="num">{fmt(r.mean_total_tokens, 0)}</td>
              <td class="num">{r.failed}</td>
              <td>{r.last_episode}</td>
            </tr>
          ))}
        </tbody>
      </table>

      <CostsPanel rows={costs} />

      <h2>Reward components</h2>
      {components.length === 0 ? (
        <p class="empty">
          No rubric grades yet: an environment that scores with a Rubric shows its parts here.
        </p>
      ) : (
        <table data-testid="reward-components">
          <thead>
            <tr>
              <th>env</th>
              <th>component</th>
              <th class="num">weight</th>
              <th class="num">episodes</th>
              <th class="num">mean value</th>
            </tr>
          </thead>
          <tbody>
            {components.map((c) => (
              <tr>
                <td>{c.env}</td>
                <td>{c.weight === 0 ? `${c.name} (metric)` : c.name}</td>
                <td class="num">{fmt(c.weight)}</td>
                <td class="num">{c.episodes}</td>
                <td class="num">{fmt(c.mean_value)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}

      <h2>Failures by reason</h2>
      {failures.length === 0 ? (
        <p class="empty">No failed episodes.</p>
      ) : (
        <table data-testid="failures">
          <thead>
            <tr>
              <th>env</th>
              <th>reason</th>
              <th class="num">episodes</th>
              <th>example</th>
            </tr>
          </thead>
          <tbody>
            {failures.map((f) => (
              <tr>
                <td>{f.env}</td>
                <td>{f.reason}</td>
                <td class="num">{f.episodes}</td>
                <td>{(f.example_detail ?? "").slice(0, 120)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}

      <h2>Token drift</h2>
      {drift.length === 0 ? (
        <p class="empty">No token-exact turns yet.</p>
      ) : (
        <table data-testid="prefix-breaks">
          <thead>
            <tr>
              <th>run</th>
              <th>env</th>
              <th>model</th>
              <th class="num">policy</th>
              <th class="num">turns</th>
              <th class="num">prefix breaks</th>
              <th class="num">rate</th>
            </tr>
          </thead>
          <tbody>
            {drift.map((d) => (
              <tr class={d.breaks > 0 ? "warn" : ""}>
                <td>{d.run_id}</td>
                <td>{d.env}</td>
                <td>{d.model ?? "-"}</td>
                <td class="num">v{d.policy_version}</td>
                <td class="num">{d.turns}</td>
                <td class="num">{d.breaks}</td>
                <td class="num">{`${(d.break_rate * 100).toFixed(1)}%`}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      <p class="note">
        A prefix break is a turn whose prompt, as the host tokenized it, did not start with the
        tokens of the turn before: the chat template re-rendered history (dropped reasoning, moved a
        newline). Such an episode becomes several trainer samples; its tokens are never
        re-tokenized.
      </p>

      <h2>Recent groups</h2>
      <table data-testid="groups">
        <thead>
          <tr>
            <th>group</th>
            <th>run</th>
            <th>env</th>
            <th>status</th>
            <th>delivery</th>
            <th class="num">size</th>
            <th class="num">mean reward</th>
            <th class="num">failed</th>
            <th>started</th>
          </tr>
        </thead>
        <tbody>
          {groups.map((g) => (
            <tr>
              <td>
                <a href={`/groups/${g.id}`}>{g.id}</a>
              </td>
              <td>{g.run_id}</td>
              <td>{g.env}</td>
              <td>
                <Pill value={g.status} />
              </td>
              <td>{g.status === "landed" ? <Pill value={g.delivery_state} /> : null}</td>
              <td class="num">{g.group_size}</td>
              <td class="num">{fmt(g.score_mean)}</td>
              <td class="num">{g.episodes_failed ?? "-"}</td>
              <td>{g.created_at}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </Layout>
  );
}
