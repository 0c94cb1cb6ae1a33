/**
 * The weight-sync part: how long a sync keeps the hosts waiting before they may load weights, with
 * a plain pause (the generations in flight finish) and with `interrupt` (aborted at once). Groups
 * stream long generations (the simulator's `longTokens` at a set token rate), started one after
 * another as an asynchronous producer keeps them, so at the pause every stage of a generation is in
 * flight: a plain pause waits for the newest, as a real fleet's does whenever its step ends (with G
 * streams of length L kept going, the newest began at most L / G ago). The stall is the time from
 * the pause's request to the first answer with nothing in flight: the pause's own when it says 0,
 * else the first GET /v1/runs/:id that does, as a trainer's `waitIdle` sees it. Hold and interrupt
 * alternate which goes first, each repeat a run of its own, paused at the same stage of its
 * generations. The groups generate from token ids (`generation: "tokens"`), so an interrupted turn
 * keeps what it had received and goes on from it: what was kept (`kept_tokens`), what was dropped
 * (`discarded_tokens`, 0 unless a row could not hold them), and what was lost: per episode, tokens
 * the host had streamed before the pause was requested that edgeroll did not keep (the simulator
 * logs when it wrote each token of a stream whose client closed it). Tokens streamed after the
 * request, before the close reached the host, and not kept are counted apart (`cutOffTokens`): the
 * host's work the cut wasted.
 */
import { withStack } from "../reliability/harness";
import { EdgerollClient } from "../src/client/edgeroll-client";
import { episodeId } from "../src/rollout/group-spec";
import { type Simulator, startSimulator } from "../src/sim/server";
import { alternated, type Repeated, repeated } from "./repeats";
import { BENCH_MAX_INFLIGHT } from "./stack";

export interface SyncPlan {
  groups: number;
  /** Tokens per generation, streamed at `tokensPerS`. */
  tokens: number;
  tokensPerS: number;
  repeats: number;
}

export interface SyncResult {
  /** Pause to nothing in flight, ms, per repeat. */
  holdStallMs: Repeated;
  interruptStallMs: Repeated;
  /** Interrupt's stall over hold's, per repeat (the target is 1 % at most). */
  stallRatio: Repeated;
  /** Tokens the interrupted generations had produced and dropped, per repeat. */
  discardedTokens: Repeated;
  /** Tokens the interrupted generations had received and kept, continued after the resume. */
  keptTokens: Repeated;
  /** Tokens streamed to the aborted requests before the pause's request and not kept. */
  lostTokens: Repeated;
  /** Tokens streamed to the aborted requests after the pause's request and not kept. */
  cutOffTokens: Repeated;
  plan: SyncPlan;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** One sync: the groups streaming, staggered; a pause once all are; the stall until idle. */
async function oneSync(
  client: EdgerollClient,
  sim: Simulator,
  plan: SyncPlan,
  runId: string,
  interrupt: boolean,
): Promise<{ stallMs: number; discarded: number; kept: number; lost: number; cutOff: number }> {
  await client.setPolicy(runId, { version: 0 });
  const before = sim.stats().requests;
  const generationMs = (plan.tokens / plan.tokensPerS) * 1000;
  // Staggered as an asynchronous producer keeps them: a group starts every `spacing` ms, so at
  // the pause the generations are at every stage of their length, the newest just begun.
  const spacing = (0.9 * generationMs) / plan.groups;
  const startedAt = Date.now();
  const ids: string[] = [];
  for (let g = 0; g < plan.groups; g++) {
    await sleep(startedAt + g * spacing - Date.now());
    const { group_id } = await client.startGroup({
      env: "marathon",
      example: { id: `${runId}-${g}`, input: "Go.", metadata: { turns: 1, reply_bytes: 20 } },
      group_size: 1,
      run_id: runId,
      generation: "tokens",
      sampling: { model: "sim", seed: g + 1, max_completion_tokens: plan.tokens },
    });
    ids.push(group_id);
  }
  // The pause comes once the newest is streaming: the oldest still has a tenth of its way left.
  while ((await client.getRun(runId)).in_flight_generations !== plan.groups) {
    if (Date.now() - startedAt > generationMs) throw new Error("the first generation ended first");
    await sleep(20);
  }
  if (sim.stats().requests - before !== plan.groups) throw new Error("a generation was retried");
  const pausedAt = Date.now();
  // A trainer waits only when the answer says something is still in flight.
  const answer = await client.setPolicy(runId, { version: 1, paused: true, interrupt });
  if (answer.in_flight_generations !== 0)
    await client.waitIdle(runId, { intervalMs: 20, timeoutMs: generationMs * 3 });
  const stallMs = Date.now() - pausedAt;
  await client.setPolicy(runId, { version: 1, paused: false });
  const groups = await Promise.all(
    ids.map((id) => client.waitForGroup(id, { timeoutMs: generationMs * 4, intervalMs: 200 })),
  );
  const unfinished = groups.filter((g) => g.status !== "landed").length;
  if (unfinished > 0) throw new Error(`${unfinished} groups of ${runId} did not land`);
  const episodes = await Promise.all(
    groups.map((g) => client.getEpisode(episodeId(g.group_id, 0))),
  );
  const sum = (values: number[]) => values.reduce((a, n) => a + n, 0);
  const discarded = sum(episodes.map((e) => e.discarded_tokens));
  const kept = sum(episodes.map((e) => e.kept_tokens));
  // Each episode's stream the interrupt closed: what it had been sent before the pause's request
  // must all be kept; what came after and was not kept was cut off in transit.
  let lost = 0;
  let cutOff = 0;
  for (const e of episodes) {
    const sentAt = sim.abandonedStreams(e.episode_id).flat();
    const beforePause = sentAt.filter((t) => t < pausedAt).length;
    const keptHere = e.kept_tokens + e.discarded_tokens;
    lost += Math.max(0, beforePause - keptHere);
    cutOff += Math.max(0, sentAt.length - Math.max(keptHere, beforePause));
  }
  return { stallMs, discarded, kept, lost, cutOff };
}

export async function measureSyncStall(
  plan: SyncPlan,
  say: (line: string) => void = () => {},
): Promise<SyncResult> {
  const sim = await startSimulator({
    longTokens: plan.tokens,
    latency: { msPerToken: 1000 / plan.tokensPerS },
  });
  try {
    return await withStack(
      { inferenceUrl: sim.url, vars: { MAX_INFLIGHT_GENERATIONS: String(BENCH_MAX_INFLIGHT) } },
      async (stack) => {
        const client = new EdgerollClient({
          baseUrl: stack.apiUrl,
          token: stack.tokens.admin,
          attempts: 5,
        });
        const hold: number[] = [];
        const cut: number[] = [];
        const discarded: number[] = [];
        const kept: number[] = [];
        const lost: number[] = [];
        const cutOff: number[] = [];
        for (let r = 0; r < plan.repeats; r++) {
          const run = (interrupt: boolean) =>
            oneSync(client, sim, plan, `sync-${r}-${interrupt ? "cut" : "hold"}`, interrupt);
          const { a: held, b: interrupted } = await alternated(
            r,
            () => run(false),
            () => run(true),
          );
          hold.push(held.stallMs);
          cut.push(interrupted.stallMs);
          discarded.push(interrupted.discarded);
          kept.push(interrupted.kept);
          lost.push(interrupted.lost);
          cutOff.push(interrupted.cutOff);
          say(
            `sync, repeat ${r + 1}: stall ${held.stallMs} ms held, ${interrupted.stallMs} ms interrupted (${interrupted.kept} tokens kept, ${interrupted.discarded} discarded, ${interrupted.lost} lost, ${interrupted.cutOff} cut off after the request)`,
          );
        }
        return {
          holdStallMs: repeated(hold),
          interruptStallMs: repeated(cut),
          stallRatio: repeated(cut.map((c, i) => c / (hold[i] ?? Number.NaN))),
          discardedTokens: repeated(discarded),
          keptTokens: repeated(kept),
          lostTokens: repeated(lost),
          cutOffTokens: repeated(cutOff),
          plan,
        };
      },
    );
  } finally {
    await sim.close();
  }
}
