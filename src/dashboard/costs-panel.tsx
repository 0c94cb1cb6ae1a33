/**
 * The overview's Costs panel: each recent run's bill from the `run_costs` view (landed groups:
 * tokens by kind, environment time, retries, discarded tokens, USD) and, when the run has a
 * budget, each limit set with the share of it spent.
 */
import type { BudgetLimit } from "../costs/budget";
import type { CostRow } from "./queries";

const whole = new Intl.NumberFormat("en-US", { maximumFractionDigits: 0 });
const tenths = new Intl.NumberFormat("en-US", {
  minimumFractionDigits: 1,
  maximumFractionDigits: 1,
});

/** A count as the panel shows it: 1,234,567. */
const count = (n: number) => whole.format(n);
const dollars = (usd: number) => `$${usd.toFixed(4)}`;

/** Each limit a budget may set: its name here, what it bounds, how its figures read. */
const LIMITS: Record<
  BudgetLimit,
  { label: string; spent: (row: CostRow) => number; format: (n: number) => string }
> = {
  max_sampled_tokens: { label: "sampled", spent: (r) => r.sampled_tokens, format: count },
  max_prompt_tokens: { label: "prompt", spent: (r) => r.prompt_tokens, format: count },
  max_usd: { label: "usd", spent: (r) => r.usd, format: dollars },
  max_groups: { label: "groups", spent: (r) => r.groups, format: count },
};

/** The limits the run's budget sets, each with what was spent against it. */
function limitsOf(row: CostRow) {
  return (Object.keys(LIMITS) as BudgetLimit[]).flatMap((limit) => {
    const max = row[limit];
    if (max === null) return [];
    const { label, spent, format } = LIMITS[limit];
    const used = spent(row);
    const reached = used >= max;
    // A share short of the limit never reads 100%: only a reached limit does.
    const share = max > 0 ? Math.round((used / max) * 100) : null;
    const percent = share === null ? null : `${reached ? share : Math.min(share, 99)}%`;
    const note = [percent, reached ? "exhausted" : null].filter((p) => p !== null).join(", ");
    return [{ limit, reached, text: `${label} ${format(used)} / ${format(max)} (${note})` }];
  });
}

export function CostsPanel(props: { rows: readonly CostRow[] }) {
  return (
    <>
      <h2>Costs</h2>
      {props.rows.length === 0 ? (
        <p class="empty">No groups yet: a run's bill shows here once its first group starts.</p>
      ) : (
        <table data-testid="costs">
          <thead>
            <tr>
              <th>run</th>
              <th class="num">groups</th>
              <th class="num">sampled tokens</th>
              <th class="num">prompt tokens</th>
              <th class="num">judge tokens</th>
              <th class="num">teacher tokens</th>
              <th class="num">env seconds</th>
              <th class="num">retries</th>
              <th class="num">discarded tokens</th>
              <th class="num">usd</th>
              <th>budget</th>
            </tr>
          </thead>
          <tbody>
            {props.rows.map((r) => {
              const limits = limitsOf(r);
              return (
                <tr class={limits.some((l) => l.reached) ? "warn" : ""}>
                  <td>
                    <a href={`/?run=${encodeURIComponent(r.run_id)}`}>{r.run_id}</a>
                  </td>
                  <td class="num">
                    {r.groups_in_flight > 0
                      ? `${count(r.groups)} (${count(r.groups_in_flight)} in flight)`
                      : count(r.groups)}
                  </td>
                  <td class="num">{count(r.sampled_tokens)}</td>
                  <td class="num">
                    {r.prompt_tokens > 0
                      ? `${count(r.prompt_tokens)} (${((r.cached_tokens / r.prompt_tokens) * 100).toFixed(1)}% cached)`
                      : "0"}
                  </td>
                  <td class="num">{count(r.judge_tokens)}</td>
                  <td class="num">{count(r.teacher_tokens)}</td>
                  <td class="num">{tenths.format(r.env_seconds)}</td>
                  <td class="num">{count(r.retries)}</td>
                  <td class="num">{count(r.discarded_tokens)}</td>
                  <td class="num">
                    {dollars(r.usd)}
                    {r.unpriced_calls > 0 ? (
                      <span
                        class="warn"
                        title="calls on a host with no price add $0"
                      >{` (${count(r.unpriced_calls)} calls unpriced)`}</span>
                    ) : null}
                  </td>
                  <td data-testid="budget">
                    {limits.length === 0
                      ? "-"
                      : limits.map((l) => (
                          <div class={l.reached ? "warn" : ""} data-limit={l.limit}>
                            {l.text}
                          </div>
                        ))}
                  </td>
                </tr>
              );
            })}
          </tbody>
        </table>
      )}
      <p class="note">
        Landed groups; GET /v1/runs/:id adds those in flight (groups counts them, their tokens and
        money are not here yet). A budget is checked against both, so a limit can be reached before
        this table shows it; once it is, the run's new groups are refused (429 budget_exhausted).
        USD is each call at its host's price; a call on a host with no price adds $0.
      </p>
    </>
  );
}
