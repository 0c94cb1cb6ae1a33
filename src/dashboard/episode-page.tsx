/** The transcript viewer: an episode turn by turn, with credit and generation stats per turn. */
import type { episodeView } from "../views/episode-view";
import { fmt, Layout, Pill } from "./layout";

type Episode = ReturnType<typeof episodeView>;
type Message = Episode["messages"][number];

const TOOL_CALL = /<tool_call>([\s\S]*?)<\/tool_call>/g;

function kind(m: Message): string {
  if (m.sampled) return "sampled";
  if (m.turn === null) return m.role === "system" ? "system" : "prompt";
  return "env";
}

function TurnCredit(props: { episode: Episode; turn: number }) {
  const { episode, turn } = props;
  const reward = episode.per_turn_rewards?.[turn];
  const advantage = episode.per_turn_advantages?.[turn] ?? episode.advantage;
  return (
    <span class="credit">
      {reward === undefined ? null : (
        <>
          turn reward <b>{fmt(reward)}</b>{" "}
        </>
      )}
      advantage <b>{fmt(advantage)}</b>
    </span>
  );
}

function MessageCard(props: { episode: Episode; message: Message }) {
  const m = props.message;
  // Only the model calls tools; a prompt that shows the format is not a call.
  const calls =
    m.role === "assistant" ? [...m.content.matchAll(TOOL_CALL)].map((c) => c[1] ?? "") : [];
  return (
    <div
      class={`message ${kind(m)}`}
      data-testid="message"
      data-role={m.role}
      data-sampled={String(m.sampled)}
    >
      <div class="meta">
        <span class="role">{m.role}</span>
        {m.turn === null ? (
          <span>opening prompt</span>
        ) : (
          <span>{m.sampled ? `action ${m.turn}` : `reply to action ${m.turn}`}</span>
        )}
        {m.sampled && m.turn !== null ? <TurnCredit episode={props.episode} turn={m.turn} /> : null}
        {m.sampled ? (
          <span>{`${m.completion_tokens ?? "?"} tokens · prompt ${m.prompt_tokens ?? "?"}`}</span>
        ) : null}
        {m.sampled ? (
          <span>{`${m.latency_ms ?? "?"} ms · ${m.attempts ?? 1} attempt${m.attempts === 1 ? "" : "s"}`}</span>
        ) : null}
        {m.sampled && m.finish_reason ? <span>finish {m.finish_reason}</span> : null}
        {m.sampled && m.logprob_sum !== null && m.logprob_sum !== undefined ? (
          <span>{`logprob Σ ${m.logprob_sum.toFixed(2)} · +${m.new_prompt_tokens ?? "?"} prompt tokens`}</span>
        ) : null}
        {m.sampled && m.prefix_break ? (
          <span class="warn" data-testid="prefix-break">
            prefix break: the prompt did not extend the last turn's tokens
          </span>
        ) : null}
        {m.truncated ? <Pill value="truncated" /> : null}
        {m.tool_call_id ? <span>{`answers call ${m.tool_call_id}`}</span> : null}
      </div>
      <pre>{m.content}</pre>
      {calls.map((c) => (
        <div class="tool">
          tool call <pre>{c.trim()}</pre>
        </div>
      ))}
      {(m.tool_calls ?? []).map((c) => {
        // Each native call beside the tool message that answered it (the first after it).
        const after = props.episode.messages.filter((r) => r.seq > m.seq);
        const answer = after.find((r) => r.tool_call_id === c.id);
        return (
          <div class="tool-pair" data-testid="tool-call">
            <div>
              call <code>{c.id}</code> <pre>{`${c.function.name}(${c.function.arguments})`}</pre>
            </div>
            <div>
              result <pre>{answer?.content ?? "(not answered)"}</pre>
            </div>
          </div>
        );
      })}
    </div>
  );
}

/**
 * How the score was made: a rubric's components (each weighted, a metric at weight 0) and every
 * judge call its grading made, beside the score (a failed call says why it gave no grade).
 */
function Grade(props: { episode: Episode }) {
  const { reward_components: components, judgements } = props.episode;
  if (components.length === 0 && judgements.length === 0) return null;
  return (
    <>
      <h2>Grade</h2>
      {components.length > 0 ? (
        <table data-testid="reward-components">
          <tr>
            <th>component</th>
            <th>value</th>
            <th>weight</th>
            <th>weight × value</th>
          </tr>
          {components.map((c) => (
            <tr>
              <td>{c.weight === 0 ? `${c.name} (metric)` : c.name}</td>
              <td>{fmt(c.value)}</td>
              <td>{fmt(c.weight)}</td>
              <td>{fmt(c.weight * c.value)}</td>
            </tr>
          ))}
        </table>
      ) : null}
      {judgements.length > 0 ? (
        <table data-testid="judgements">
          <tr>
            <th>judge call</th>
            <th>model</th>
            <th>attempt</th>
            <th>value</th>
            <th>reason, or what went wrong</th>
            <th>latency</th>
          </tr>
          {judgements.map((j) => (
            <tr>
              <td>{j.component}</td>
              <td>{j.model}</td>
              <td>{j.attempt}</td>
              <td>{fmt(j.value)}</td>
              <td>
                {j.error === null ? (
                  j.reason
                ) : (
                  <span class="warn">{`${j.error}: ${j.response.slice(0, 200)}`}</span>
                )}
              </td>
              <td>{`${j.latency_ms} ms`}</td>
            </tr>
          ))}
        </table>
      ) : null}
    </>
  );
}

export function EpisodePage(props: { episode: Episode }) {
  const e = props.episode;
  return (
    <Layout title={`episode ${e.episode_id}`}>
      <h1>
        Episode {e.episode_id} <Pill value={e.status} />
      </h1>
      <div class="cards">
        <div class="card">
          <b>{fmt(e.score)}</b>
          <span>
            reward{e.success === null ? "" : e.success ? " · success" : " · not a success"}
          </span>
        </div>
        <div class="card">
          <b>{fmt(e.advantage)}</b>
          <span>advantage</span>
        </div>
        <div class="card">
          <b>{e.turns}</b>
          <span>turns · ended {e.end_reason}</span>
        </div>
        <div class="card">
          <b>{e.total_tokens ?? "-"}</b>
          <span>tokens ({e.completion_tokens ?? "?"} generated)</span>
        </div>
        <div class="card">
          <b>{`${(e.latency_ms / 1000).toFixed(1)} s`}</b>
          <span>latency</span>
        </div>
        <div class="card" data-testid="token-mode">
          <b>
            {e.token_mode === "exact"
              ? `${e.sample_count} sample${e.sample_count === 1 ? "" : "s"}`
              : "no tokens"}
          </b>
          <span>{`token mode ${e.token_mode} · ${e.prefix_breaks} prefix break${e.prefix_breaks === 1 ? "" : "s"}`}</span>
        </div>
        <div class="card">
          <b>
            <a href={`/groups/${e.group_id}`}>group</a>
          </b>
          <span>{`${e.env} · ${e.run_id}`}</span>
        </div>
      </div>
      {e.failure_reason ? <p>{`${e.failure_reason}: ${e.failure_detail ?? ""}`}</p> : null}
      <Grade episode={e} />
      <h2>Transcript</h2>
      <div class="transcript" data-testid="transcript">
        {e.messages.map((m) => (
          <MessageCard episode={e} message={m} />
        ))}
      </div>
    </Layout>
  );
}
