/**
 * Part 3: growth with episode length. Marathon episodes of 50 turns with 2 KB replies, and per
 * turn index, bytes measured where they are kept: the rows the turn adds to the group object's
 * SQLite (read from its file while the group waits in scoring, every turn written), the rows it
 * lands in local D1, and its share of the group's token object in local R2 (its entry in the
 * object's header and its arrays). Row bytes are SQLite's records and index entries
 * (bench/sqlite-bytes.ts, checked against dbstat); the files' pages are given too. Also the bytes
 * moved because of the turn: the step call carries the whole transcript so far (environments
 * rebuild their state by replay), as does the inference request (the prompt).
 */
import type { DatabaseSync } from "node:sqlite";
import type { EpisodePage } from "../src/client/edgeroll-client";
import { d1File, newestGroupObjectFile, r2ObjectBytes } from "./local-state";
import { openReadOnly, pageBytes, payloadBytes, rowBytesBy } from "./sqlite-bytes";
import { type BenchStack, waitForGroups } from "./stack";

export interface GrowthRow {
  turn: number;
  /** The turn's rows in the group object's SQLite (messages, step, tokens, version). */
  objectBytes: number;
  /** The turn's message rows in D1. */
  d1Bytes: number;
  /** The turn's share of the token object in R2: its header entry and its arrays. */
  tokenBytes: number;
  stepCallBytes: number;
  inferenceBytes: number;
}

export interface GrowthResult {
  turns: number;
  replyBytes: number;
  rows: GrowthRow[];
  /** Over the first episode: its turns' rows in the object, and in D1. */
  objectTotal: number;
  d1Total: number;
  /** The object's SQLite file while scoring, and what D1's pages grew by for the group. */
  objectPages: number;
  d1PagesAdded: number;
  /** The object's rows summed one by one, and what dbstat found in the same tables. */
  objectRowCheck: { rows: number; dbstat: number };
  /** The transcript as the wire carries it (role and content), and the step calls' total. */
  transcriptWireBytes: number;
  stepCallTotal: number;
  /** The group's token object (both episodes), the tokens it holds, and its fixed part. */
  tokenObjectBytes: number;
  tokenObjectFixedBytes: number;
  tokensHeld: number;
  /** Token object bytes over the tokens it holds: the target is at most 10. */
  tokenBytesPerToken: number;
}

type Message = NonNullable<EpisodePage["episodes"][number]["messages"]>[number];

/** A message as the wire carries it: role and content, plus its fields. */
const wireBytes = (m: Message) =>
  Buffer.byteLength(JSON.stringify({ role: m.role, content: m.content }));

/** The object's tables with a row per turn (or part of one). */
const OBJECT_TURN_TABLES = [
  "messages",
  "steps",
  "turn_tokens",
  "turn_token_parts",
  "teacher_logprobs",
  "turn_versions",
];

function objectBytesByTurn(db: DatabaseSync, idx: number) {
  const byTurn = new Map<number, number>();
  let rows = 0;
  let dbstat = 0;
  for (const table of OBJECT_TURN_TABLES) {
    for (const [turn, bytes] of rowBytesBy(db, table, "turn", "idx = ?", idx))
      byTurn.set(turn, (byTurn.get(turn) ?? 0) + bytes);
    for (const bytes of rowBytesBy(db, table, "turn").values()) rows += bytes;
    dbstat += payloadBytes(db, table);
  }
  return { byTurn, check: { rows, dbstat }, pages: pageBytes(db) };
}

/**
 * Each turn's share of a token object, by episode and turn: its entry in the JSON header (and
 * the comma before it), and its arrays, 4 bytes a value. What no turn owns is the fixed part.
 */
function tokenBytesByTurn(bytes: Uint8Array) {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const length = view.getUint32(4, true);
  const header = JSON.parse(new TextDecoder().decode(bytes.subarray(8, 8 + length))) as {
    episodes: {
      idx: number;
      turns: { turn: number; tail: number; completion: number; teacher?: boolean }[];
    }[];
  };
  const dataStart = (8 + length + 3) & ~3;
  const byTurn = new Map<string, number>();
  let owned = 0;
  let arrays = 0;
  for (const e of header.episodes)
    for (const [i, t] of e.turns.entries()) {
      const words = t.tail + (t.teacher ? 3 : 2) * t.completion;
      const share = Buffer.byteLength(JSON.stringify(t)) + (i > 0 ? 1 : 0) + 4 * words;
      byTurn.set(`${e.idx}:${t.turn}`, share);
      owned += share;
      arrays += 4 * words;
    }
  if (arrays !== bytes.length - dataStart)
    throw new Error("the token object's arrays are not what its header says");
  return { byTurn, fixed: bytes.length - owned };
}

async function waitForScoring(bench: BenchStack, groupId: string): Promise<void> {
  const deadline = Date.now() + 120_000;
  for (;;) {
    const group = await bench.client.getGroup(groupId);
    if (group.status === "scoring") return;
    if (group.status !== "running") throw new Error(`the growth group was ${group.status} first`);
    if (Date.now() > deadline) throw new Error("the growth group did not reach scoring");
    await new Promise((r) => setTimeout(r, 50));
  }
}

export async function measureGrowth(
  bench: BenchStack,
  turns: number,
  replyBytes = 2048,
): Promise<GrowthResult> {
  const runId = "bench-growth";
  const persistTo = bench.stack.persistTo;
  const d1 = openReadOnly(d1File(persistTo));
  const d1Before = pageBytes(d1);
  // The grading waits 3 s: the object is read then, with every turn written.
  const metadata = { turns, reply_bytes: replyBytes, score_delay_ms: 3000 };
  const started = await bench.client.startGroup({
    env: "marathon",
    example: { id: "growth", input: "Go.", metadata },
    group_size: 2,
    run_id: runId,
    sampling: { model: "sim", seed: 1, max_completion_tokens: 32 },
  });
  await waitForScoring(bench, started.group_id);
  const objectDb = openReadOnly(newestGroupObjectFile(persistTo));
  const object = objectBytesByTurn(objectDb, 0);
  objectDb.close();
  await waitForGroups(bench.client, [started.group_id]);

  const page = await bench.client.listEpisodes({ run_id: runId, include: ["messages"], limit: 2 });
  const first = page.episodes.find((e) => e.index === 0);
  const messages = first?.messages ?? [];
  if (first === undefined || messages.length === 0)
    throw new Error("the growth episode landed no messages");
  const d1ByTurn = rowBytesBy(d1, "messages", "turn", "episode_id = ?", first.episode_id);
  const d1PagesAdded = pageBytes(d1) - d1Before;
  d1.close();
  const tokenObject = r2ObjectBytes(
    persistTo,
    "edgeroll-tokens",
    `groups/${started.group_id}.tokens`,
  );
  const tokens = tokenBytesByTurn(tokenObject);
  const views = await Promise.all(page.episodes.map((e) => bench.client.getEpisode(e.episode_id)));
  const tokensHeld = views
    .flatMap((v) => v.messages.filter((m) => m.sampled))
    .reduce((n, m) => n + (m.new_prompt_tokens ?? 0) + (m.completion_tokens ?? 0), 0);

  const example = { id: "growth", input: "Go.", metadata };
  const exampleBytes = Buffer.byteLength(JSON.stringify({ env: "marathon", example }));
  const sum = (list: Message[]) => list.reduce((n, m) => n + wireBytes(m), 0);
  const turnIds = [
    ...new Set(messages.filter((m) => m.sampled && m.turn !== null).map((m) => m.turn as number)),
  ].sort((a, b) => a - b);
  const rows: GrowthRow[] = turnIds.map((t, k) => {
    const before = messages.filter((m) => m.turn === null || m.turn < t);
    const action = messages.filter((m) => m.turn === t && m.sampled);
    return {
      turn: k + 1,
      objectBytes: object.byTurn.get(t) ?? 0,
      d1Bytes: d1ByTurn.get(t) ?? 0,
      tokenBytes: tokens.byTurn.get(`0:${t}`) ?? 0,
      stepCallBytes: exampleBytes + sum(before) + sum(action),
      inferenceBytes: sum(before),
    };
  });
  return {
    turns,
    replyBytes,
    rows,
    objectTotal: rows.reduce((n, r) => n + r.objectBytes, 0),
    d1Total: rows.reduce((n, r) => n + r.d1Bytes, 0),
    objectPages: object.pages,
    d1PagesAdded,
    objectRowCheck: object.check,
    transcriptWireBytes: sum(messages),
    stepCallTotal: rows.reduce((n, r) => n + r.stepCallBytes, 0),
    tokenObjectBytes: tokenObject.length,
    tokenObjectFixedBytes: tokens.fixed,
    tokensHeld,
    tokenBytesPerToken: tokensHeld > 0 ? tokenObject.length / tokensHeld : Number.NaN,
  };
}
