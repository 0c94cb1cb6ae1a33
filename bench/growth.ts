/**
 * Part 3: growth with episode length. Marathon episodes of 50 turns with 2 KB replies; from
 * the landed transcripts, per turn index: the bytes that turn adds to storage (its action and
 * the environment's reply, written once to the group object and once to D1), and the bytes
 * moved because of it — the step call carries the whole transcript so far (environments
 * rebuild their state by replay), as does the inference request (the prompt).
 */
import type { EpisodePage } from "../src/client/edgeroll-client";
import { type BenchStack, waitForRun } from "./stack";

export interface GrowthRow {
  turn: number;
  storedBytes: number;
  /** Token bytes this turn adds to the group's token object: its new prompt ids, its completion. */
  tokenBytes: number;
  stepCallBytes: number;
  inferenceBytes: number;
}

export interface GrowthResult {
  turns: number;
  replyBytes: number;
  rows: GrowthRow[];
  /** Totals over one episode. */
  storedTotal: number;
  stepCallTotal: number;
  landedToD1Total: number;
  /** The group's token object (both episodes), and the tokens it holds. */
  tokenObjectBytes: number;
  tokensHeld: number;
  /** Token object bytes over the tokens it holds: the target is at most 10. */
  tokenBytesPerToken: number;
}

type Message = NonNullable<EpisodePage["episodes"][number]["messages"]>[number];

/** A message as the wire carries it: role and content, plus its fields. */
const wireBytes = (m: Message) =>
  Buffer.byteLength(JSON.stringify({ role: m.role, content: m.content }));

export async function measureGrowth(
  bench: BenchStack,
  turns: number,
  replyBytes = 2048,
): Promise<GrowthResult> {
  const runId = "bench-growth";
  await bench.client.startGroup({
    env: "marathon",
    example: { id: "growth", input: "Go.", metadata: { turns, reply_bytes: replyBytes } },
    group_size: 2,
    run_id: runId,
    sampling: { model: "sim", seed: 1, max_completion_tokens: 32 },
  });
  await waitForRun(bench.client, runId, 1);
  const page = await bench.client.listEpisodes({ run_id: runId, include: ["messages"], limit: 2 });
  const messages = page.episodes[0]?.messages ?? [];
  // Each turn's token share, from the episode view (new prompt tokens, completion tokens).
  const views = await Promise.all(page.episodes.map((e) => bench.client.getEpisode(e.episode_id)));
  const turnTokens = (m: (typeof views)[number]["messages"][number]) =>
    (m.new_prompt_tokens ?? 0) + (m.completion_tokens ?? 0);
  const group = await bench.client.getGroup(page.episodes[0]?.group_id ?? "");
  const tokenObjectBytes = ("token_object_bytes" in group ? group.token_object_bytes : null) ?? 0;
  const tokensHeld = views
    .flatMap((v) => v.messages.filter((m) => m.sampled))
    .reduce((n, m) => n + turnTokens(m), 0);
  const first = views[0]?.messages.filter((m) => m.sampled) ?? [];
  if (messages.length === 0) throw new Error("the growth episode landed no messages");

  const example = { id: "growth", input: "Go.", metadata: { turns, reply_bytes: replyBytes } };
  const exampleBytes = Buffer.byteLength(JSON.stringify({ env: "marathon", example }));
  const rows: GrowthRow[] = [];
  const turnIds = [
    ...new Set(messages.filter((m) => m.sampled && m.turn !== null).map((m) => m.turn as number)),
  ].sort((a, b) => a - b);
  for (const [k, t] of turnIds.entries()) {
    const before = messages.filter((m) => m.turn === null || m.turn < t);
    const own = messages.filter((m) => m.turn === t);
    const action = own.filter((m) => m.sampled);
    const sum = (list: Message[]) => list.reduce((n, m) => n + wireBytes(m), 0);
    const tokens = first[k];
    rows.push({
      turn: k + 1,
      storedBytes: sum(own),
      // 4 bytes per id (prompt tail and completion), 4 per completion logprob.
      tokenBytes: tokens ? 4 * turnTokens(tokens) + 4 * (tokens.completion_tokens ?? 0) : 0,
      stepCallBytes: exampleBytes + sum(before) + sum(action),
      inferenceBytes: sum(before),
    });
  }
  const storedTotal = messages.reduce((n, m) => n + wireBytes(m), 0);
  return {
    turns,
    replyBytes,
    rows,
    storedTotal,
    stepCallTotal: rows.reduce((n, r) => n + r.stepCallBytes, 0),
    landedToD1Total: storedTotal,
    tokenObjectBytes,
    tokensHeld,
    tokenBytesPerToken: tokensHeld > 0 ? tokenObjectBytes / tokensHeld : Number.NaN,
  };
}
