/**
 * The floor's landing (bench/floor/worker.ts): the platform calls a finished edgeroll group
 * makes, and none of its work. A group row registered when the group starts; at the end, one
 * R2 put of the group's token ids and logprobs, then one D1 batch of its episode and message
 * rows and the group row's update, each table's rows as one JSON parameter, the statement style
 * of src/rollout/landing.ts. The rows go into edgeroll's own D1 schema (the floor's stack
 * applies migrations/ first), with the columns a landed marathon group fills.
 *
 * Locally, D1 and R2 run inside the same workerd process as the Worker, so what they hold while
 * rows land shows in workerd's resident memory; on Cloudflare they are services of their own.
 * Landing the same rows here puts their share in the floor, where the runtime's belongs.
 */

export interface LandingEnv {
  DB: D1Database;
  TOKENS: R2Bucket;
}

/** What the group's Durable Object kept of one episode. */
export interface LandingEpisode {
  idx: number;
  turns: number;
  responseText: string;
  startedAt: number;
  messages: { seq: number; turn: number; sampled: boolean; message: string }[];
}

type Row = Record<string, string | number | null>;

const iso = (ms: number) => new Date(ms).toISOString();

/**
 * `INSERT ... SELECT FROM json_each(?)` with its one parameter: every row as a JSON array of its
 * values, in the order of the first row's keys, which name the columns.
 */
function insertRows(db: D1Database, table: string, rows: readonly Row[], conflict = "") {
  const columns = Object.keys(rows[0] ?? {});
  const sql = `WITH r AS MATERIALIZED (SELECT jsonb(value) AS j FROM json_each(?))
    INSERT INTO "${table}" (${columns.map((c) => `"${c}"`).join(", ")})
    SELECT ${columns.map((_, i) => `j ->> ${i}`).join(", ")} FROM r WHERE true ${conflict}`;
  return db.prepare(sql).bind(`[${rows.map((r) => JSON.stringify(Object.values(r))).join(",")}]`);
}

/** The group's row as edgeroll's registration writes it, status `running`. */
export async function registerGroup(env: LandingEnv, run: string, groupId: string, turns: number) {
  const example = { id: groupId, input: "Go.", metadata: { turns, reply_bytes: 200 } };
  const row: Row = {
    id: groupId,
    run_id: run,
    env: "marathon",
    example_id: groupId,
    example: JSON.stringify(example),
    policy_version: 0,
    group_size: 8,
    status: "running",
    credit_assignment: "per_episode",
    advantage: "mean_std",
    warnings: "[]",
    sampling: JSON.stringify({ temperature: 1, top_p: 1, max_tokens: 16 }),
    max_context_tokens: 4096,
    prompt_text: "Go.",
    request_hash: "0".repeat(64),
    created_at: iso(Date.now()),
  };
  await insertRows(env.DB, "groups", [row]).run();
}

const LAND_GROUP = `UPDATE groups SET status = 'landed', score_mean = 0, score_std = 0,
  episodes_failed = 0, uniform = 1, token_object = ?, token_object_bytes = ?,
  policy_version_min = 0, policy_version_max = 0, finished_at = ? WHERE id = ?`;

/** Lands a finished group: its tokens' object in R2 first, then its rows in one D1 batch. */
export async function landGroup(
  env: LandingEnv,
  run: string,
  groupId: string,
  episodes: readonly LandingEpisode[],
  tokens: Uint8Array,
): Promise<void> {
  const key = `floor/${groupId}`;
  await env.TOKENS.put(key, tokens);
  const now = iso(Date.now());
  const episodeRows = episodes.map(
    (e): Row => ({
      id: `${groupId}-${e.idx}`,
      group_id: groupId,
      idx: e.idx,
      run_id: run,
      env: "marathon",
      example_id: groupId,
      policy_version: 0,
      status: "completed",
      // Not one of edgeroll's end reasons (those live in src/domain/): the floor names its own.
      end_reason: "floor_played",
      score: 0,
      success: 0,
      advantage: 0,
      per_turn_rewards: "[]",
      reward_metadata: "{}",
      turns: e.turns,
      prompt_tokens: 10 * e.turns,
      completion_tokens: 4 * e.turns,
      total_tokens: 14 * e.turns,
      latency_ms: Date.now() - e.startedAt,
      redispatches: 0,
      token_mode: "exact",
      sample_count: 1,
      response_text: e.responseText,
      created_at: iso(e.startedAt),
      finished_at: now,
    }),
  );
  const messageRows = episodes.flatMap((e) =>
    e.messages.map((m): Row => {
      const { role, content } = JSON.parse(m.message) as { role: string; content: string };
      const sampled = <T>(value: T) => (m.sampled ? value : null);
      return {
        episode_id: `${groupId}-${e.idx}`,
        seq: m.seq,
        group_id: groupId,
        turn: m.turn,
        role,
        content,
        sampled: m.sampled ? 1 : 0,
        prompt_tokens: sampled(10),
        completion_tokens: sampled(4),
        finish_reason: sampled("stop"),
        latency_ms: sampled(5),
        attempts: sampled(1),
        model: sampled("sim"),
        logprob_sum: sampled(-1.5),
        new_prompt_tokens: sampled(10),
        prefix_break: sampled(0),
        policy_version: sampled(0),
      };
    }),
  );
  await env.DB.batch([
    insertRows(env.DB, "episodes", episodeRows, "ON CONFLICT DO NOTHING"),
    insertRows(env.DB, "messages", messageRows, "ON CONFLICT DO NOTHING"),
    env.DB.prepare(LAND_GROUP).bind(key, tokens.length, now, groupId),
  ]);
}
