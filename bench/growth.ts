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
  const page = await bench.client.listEpisodes({ run_id: runId, include: ["messages"], limit: 1 });
  const messages = page.episodes[0]?.messages ?? [];
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
    rows.push({
      turn: k + 1,
      storedBytes: sum(own),
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
  };
}
