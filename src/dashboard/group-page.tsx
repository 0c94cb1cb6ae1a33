/** One group: its status and its episodes, each linking to the transcript viewer. */
import type { GroupView } from "../views/group-view";
import { fmt, Layout, Pill } from "./layout";

/** What the page shows of the API's group view. */
export type GroupSummary = Pick<
  GroupView,
  | "group_id"
  | "status"
  | "env"
  | "run_id"
  | "example_id"
  | "policy_version"
  | "policy_version_min"
  | "policy_version_max"
  | "paused"
  | "credit_applied"
  | "score_mean"
  | "warnings"
  | "failure_reason"
  | "created_at"
  | "finished_at"
  | "episodes"
>;

/** The versions that sampled the group: one, or a span when the policy moved mid-group. */
function sampledBy(g: GroupSummary): string {
  const { policy_version_min: min, policy_version_max: max } = g;
  if (min === null || max === null) return `policy v${g.policy_version}`;
  return min === max ? `sampled by v${min}` : `sampled by v${min}–v${max}`;
}

export function GroupPage(props: { group: GroupSummary }) {
  const g = props.group;
  const landed = g.status === "landed" || g.status === "failed";
  return (
    <Layout title={`group ${g.group_id}`}>
      <h1>
        Group {g.group_id} <Pill value={g.status} />
      </h1>
      <div class="cards">
        <div class="card">
          <b>{g.env}</b>
          <span>environment · example {g.example_id}</span>
        </div>
        <div class="card">
          <b>
            <a href={`/?run=${encodeURIComponent(g.run_id)}`}>{g.run_id}</a>
          </b>
          <span>
            run · started at v{g.policy_version} · {sampledBy(g)}
            {g.paused ? " · paused for a weight sync" : ""}
          </span>
        </div>
        <div class="card">
          <b>{fmt(g.score_mean)}</b>
          <span>mean reward · {g.credit_applied ?? "credit pending"}</span>
        </div>
      </div>
      {g.failure_reason ? <p>{g.failure_reason}</p> : null}
      {g.warnings.map((w) => (
        <p>warning: {w}</p>
      ))}
      <h2>Episodes</h2>
      <table data-testid="episodes">
        <thead>
          <tr>
            <th>episode</th>
            <th>state</th>
            <th>end</th>
            <th class="num">turns</th>
            <th class="num">reward</th>
            <th class="num">advantage</th>
            <th class="num">re-dispatches</th>
            <th>failure</th>
          </tr>
        </thead>
        <tbody>
          {g.episodes.map((e) => (
            <tr>
              <td>
                {landed ? <a href={`/episodes/${e.episode_id}`}>{e.episode_id}</a> : e.episode_id}
              </td>
              <td>
                <Pill value={e.state} />
              </td>
              <td>{e.end_reason ?? ""}</td>
              <td class="num">{e.turns}</td>
              <td class="num">{fmt(e.score)}</td>
              <td class="num">{fmt(e.advantage)}</td>
              <td class="num">{e.redispatches}</td>
              <td>
                {e.failure_detail
                  ? `${e.failure_reason}: ${e.failure_detail.slice(0, 100)}`
                  : (e.failure_reason ?? "")}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
      <p class="empty">
        Started {g.created_at}
        {g.finished_at ? `, finished ${g.finished_at}` : ", still in flight: reload to follow"}.
      </p>
    </Layout>
  );
}
