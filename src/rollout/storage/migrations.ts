/**
 * The group object's SQLite schema, as numbered migrations: the only place its tables are
 * created or changed. A new step is appended, never edited once deployed: objects in flight
 * were written by the steps before it and are upgraded in place when they next wake.
 */
import type { Migration, SchemaSnapshot } from "../../utils/migrations";

/**
 * Version 1: the tables as the four stores of earlier deploys created them, each lazily
 * (`IF NOT EXISTS`, since an object of that time holds only the ones it needed).
 */
const STORES_OF_EARLIER_DEPLOYS = `
CREATE TABLE IF NOT EXISTS group_state (
  id INTEGER PRIMARY KEY CHECK (id = 1),
  spec TEXT NOT NULL,
  phase TEXT NOT NULL,
  registered INTEGER NOT NULL DEFAULT 0,
  score_attempts INTEGER NOT NULL DEFAULT 0,
  land_attempts INTEGER NOT NULL DEFAULT 0,
  credit_applied TEXT,
  warnings TEXT NOT NULL DEFAULT '[]',
  last_error TEXT
);
CREATE TABLE IF NOT EXISTS episodes (
  idx INTEGER PRIMARY KEY,
  state TEXT NOT NULL,
  max_turns INTEGER,
  opening_count INTEGER,
  turns INTEGER NOT NULL DEFAULT 0,
  response_text TEXT NOT NULL DEFAULT '',
  end_reason TEXT,
  failure_reason TEXT,
  failure_detail TEXT,
  redispatches INTEGER NOT NULL DEFAULT 0,
  prompt_tokens INTEGER,
  completion_tokens INTEGER,
  total_tokens INTEGER,
  started_at INTEGER NOT NULL,
  finished_at INTEGER,
  reward TEXT,
  advantage REAL,
  per_turn_rewards TEXT,
  per_turn_advantages TEXT
);
CREATE TABLE IF NOT EXISTS messages (
  idx INTEGER NOT NULL,
  seq INTEGER NOT NULL,
  turn INTEGER,
  sampled INTEGER NOT NULL,
  message TEXT NOT NULL,
  prompt_tokens INTEGER,
  completion_tokens INTEGER,
  finish_reason TEXT,
  latency_ms INTEGER,
  attempts INTEGER,
  truncated INTEGER,
  PRIMARY KEY (idx, seq)
);
CREATE TABLE IF NOT EXISTS steps (
  idx INTEGER NOT NULL,
  turn INTEGER NOT NULL,
  metadata TEXT NOT NULL,
  PRIMARY KEY (idx, turn)
);
CREATE TABLE IF NOT EXISTS generations (
  idx INTEGER PRIMARY KEY,
  state TEXT NOT NULL,
  timeouts INTEGER NOT NULL DEFAULT 0,
  attempts INTEGER NOT NULL DEFAULT 0,
  retries INTEGER NOT NULL DEFAULT 0,
  sent_at INTEGER,
  deadline_at INTEGER,
  retry_at INTEGER
);
CREATE TABLE IF NOT EXISTS timers (
  name TEXT PRIMARY KEY,
  due_at INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS turn_tokens (
  idx INTEGER NOT NULL,
  turn INTEGER NOT NULL,
  prompt_length INTEGER NOT NULL,
  prefix_length INTEGER NOT NULL,
  completion_length INTEGER NOT NULL,
  prompt_tail BLOB NOT NULL,
  completion BLOB NOT NULL,
  logprobs BLOB NOT NULL,
  spilled INTEGER NOT NULL DEFAULT 0,
  consistent INTEGER NOT NULL,
  model TEXT,
  temperature REAL NOT NULL,
  top_p REAL NOT NULL,
  PRIMARY KEY (idx, turn)
);
CREATE TABLE IF NOT EXISTS turn_token_parts (
  idx INTEGER NOT NULL,
  turn INTEGER NOT NULL,
  part INTEGER NOT NULL,
  data BLOB NOT NULL,
  PRIMARY KEY (idx, turn, part)
);
CREATE TABLE IF NOT EXISTS teacher_logprobs (
  idx INTEGER NOT NULL,
  turn INTEGER NOT NULL,
  logprobs BLOB NOT NULL,
  PRIMARY KEY (idx, turn)
);
CREATE TABLE IF NOT EXISTS token_modes (
  idx INTEGER PRIMARY KEY,
  mode TEXT NOT NULL,
  reason TEXT
);
CREATE TABLE IF NOT EXISTS episode_tools (
  idx INTEGER PRIMARY KEY,
  tools TEXT NOT NULL,
  hash TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS run_policy (
  id INTEGER PRIMARY KEY CHECK (id = 1),
  version INTEGER NOT NULL,
  max_lag INTEGER,
  paused INTEGER NOT NULL,
  revision INTEGER NOT NULL,
  stale TEXT
);
CREATE TABLE IF NOT EXISTS turn_versions (
  idx INTEGER NOT NULL,
  turn INTEGER NOT NULL,
  version INTEGER NOT NULL,
  PRIMARY KEY (idx, turn)
);`;

/**
 * Version 2: timers keyed by what they are (`kind`, and the episode for a retry), not by a name
 * built from both. The group's own timers (register, score, land) have no episode: -1.
 */
const TYPED_TIMERS = `
CREATE TABLE timers_by_kind (
  kind TEXT NOT NULL,
  episode INTEGER NOT NULL,
  due_at INTEGER NOT NULL,
  PRIMARY KEY (kind, episode)
);
INSERT INTO timers_by_kind (kind, episode, due_at)
  SELECT
    CASE WHEN name LIKE 'retry:%' THEN 'retry' ELSE name END,
    CASE WHEN name LIKE 'retry:%' THEN CAST(substr(name, 7) AS INTEGER) ELSE -1 END,
    due_at
  FROM timers;
DROP TABLE timers;
ALTER TABLE timers_by_kind RENAME TO timers;`;

/**
 * Version 3: the fleet. Each episode keeps the host its generations go to and the group its home
 * host (a restarted object routes the same way); each sampled message records the host that
 * answered and the prompt tokens it had cached; the group counts its failures by host.
 */
const FLEET = `
ALTER TABLE episodes ADD COLUMN host TEXT;
ALTER TABLE group_state ADD COLUMN home_host TEXT;
ALTER TABLE group_state ADD COLUMN host_failures TEXT NOT NULL DEFAULT '{}';
ALTER TABLE messages ADD COLUMN host TEXT;
ALTER TABLE messages ADD COLUMN cached_tokens INTEGER;`;

/**
 * Version 4: interrupted weight syncs. Each episode counts the tokens its generations had
 * produced when a pause with `interrupt` aborted them and were not kept.
 */
const INTERRUPTS = `
ALTER TABLE episodes ADD COLUMN discarded_tokens INTEGER NOT NULL DEFAULT 0;`;

/**
 * Version 5: token-exact continuation. What interrupting pauses kept of a token-in turn: its
 * prompt and the completion tokens received, open until the continued turn is recorded (then
 * only how many were kept and which versions sampled them stay, for the landing).
 */
const KEPT_TOKENS = `
CREATE TABLE interrupted_turns (
  idx INTEGER NOT NULL,
  turn INTEGER NOT NULL,
  open INTEGER NOT NULL,
  prompt BLOB NOT NULL,
  completion BLOB NOT NULL,
  logprobs BLOB NOT NULL,
  content TEXT NOT NULL,
  versions TEXT NOT NULL,
  kept INTEGER NOT NULL,
  PRIMARY KEY (idx, turn)
);`;

/**
 * Version 6: judged rewards. Each episode keeps the judge calls its grading made, and the end it
 * played to when a failed grading (`judge_error`, `score_error`) ended it failed.
 */
const JUDGED = `
ALTER TABLE episodes ADD COLUMN judgements TEXT NOT NULL DEFAULT '[]';
ALTER TABLE episodes ADD COLUMN played_end_reason TEXT;`;

/**
 * Version 7: a run's bill. Each episode's time in environment code (its opening and steps), and
 * the group's in its score calls.
 */
const ENV_TIME = `
ALTER TABLE episodes ADD COLUMN env_ms INTEGER NOT NULL DEFAULT 0;
ALTER TABLE group_state ADD COLUMN score_ms INTEGER NOT NULL DEFAULT 0;`;

const sql = (text: string) => (db: SqlStorage) => {
  db.exec(text);
};

export const GROUP_MIGRATIONS: readonly Migration[] = [
  { version: 1, name: "the stores' tables of earlier deploys", up: sql(STORES_OF_EARLIER_DEPLOYS) },
  { version: 2, name: "timers keyed by kind and episode", up: sql(TYPED_TIMERS) },
  { version: 3, name: "hosts of a fleet: routing, answers, failures", up: sql(FLEET) },
  { version: 4, name: "tokens discarded by interrupted generations", up: sql(INTERRUPTS) },
  { version: 5, name: "tokens kept of interrupted token-in turns", up: sql(KEPT_TOKENS) },
  { version: 6, name: "judge calls, and the end a failed grading replaced", up: sql(JUDGED) },
  { version: 7, name: "time in environment code, for the run's bill", up: sql(ENV_TIME) },
];

/**
 * The schema at the latest step, whole: what a new object creates in one statement instead of
 * replaying every step (utils/migrations.ts says why). Each table as the steps leave it, columns
 * in the same order. A step appended above is written here too: a snapshot at another version
 * is refused, and test/worker/storage-upgrade.test.ts compares the two column by column.
 */
export const GROUP_SCHEMA: SchemaSnapshot = {
  version: 7,
  sql: `
CREATE TABLE group_state (
  id INTEGER PRIMARY KEY CHECK (id = 1),
  spec TEXT NOT NULL,
  phase TEXT NOT NULL,
  registered INTEGER NOT NULL DEFAULT 0,
  score_attempts INTEGER NOT NULL DEFAULT 0,
  land_attempts INTEGER NOT NULL DEFAULT 0,
  credit_applied TEXT,
  warnings TEXT NOT NULL DEFAULT '[]',
  last_error TEXT,
  home_host TEXT,
  host_failures TEXT NOT NULL DEFAULT '{}',
  score_ms INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE episodes (
  idx INTEGER PRIMARY KEY,
  state TEXT NOT NULL,
  max_turns INTEGER,
  opening_count INTEGER,
  turns INTEGER NOT NULL DEFAULT 0,
  response_text TEXT NOT NULL DEFAULT '',
  end_reason TEXT,
  failure_reason TEXT,
  failure_detail TEXT,
  redispatches INTEGER NOT NULL DEFAULT 0,
  prompt_tokens INTEGER,
  completion_tokens INTEGER,
  total_tokens INTEGER,
  started_at INTEGER NOT NULL,
  finished_at INTEGER,
  reward TEXT,
  advantage REAL,
  per_turn_rewards TEXT,
  per_turn_advantages TEXT,
  host TEXT,
  discarded_tokens INTEGER NOT NULL DEFAULT 0,
  judgements TEXT NOT NULL DEFAULT '[]',
  played_end_reason TEXT,
  env_ms INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE messages (
  idx INTEGER NOT NULL,
  seq INTEGER NOT NULL,
  turn INTEGER,
  sampled INTEGER NOT NULL,
  message TEXT NOT NULL,
  prompt_tokens INTEGER,
  completion_tokens INTEGER,
  finish_reason TEXT,
  latency_ms INTEGER,
  attempts INTEGER,
  truncated INTEGER,
  host TEXT,
  cached_tokens INTEGER,
  PRIMARY KEY (idx, seq)
);
CREATE TABLE steps (
  idx INTEGER NOT NULL,
  turn INTEGER NOT NULL,
  metadata TEXT NOT NULL,
  PRIMARY KEY (idx, turn)
);
CREATE TABLE generations (
  idx INTEGER PRIMARY KEY,
  state TEXT NOT NULL,
  timeouts INTEGER NOT NULL DEFAULT 0,
  attempts INTEGER NOT NULL DEFAULT 0,
  retries INTEGER NOT NULL DEFAULT 0,
  sent_at INTEGER,
  deadline_at INTEGER,
  retry_at INTEGER
);
CREATE TABLE turn_tokens (
  idx INTEGER NOT NULL,
  turn INTEGER NOT NULL,
  prompt_length INTEGER NOT NULL,
  prefix_length INTEGER NOT NULL,
  completion_length INTEGER NOT NULL,
  prompt_tail BLOB NOT NULL,
  completion BLOB NOT NULL,
  logprobs BLOB NOT NULL,
  spilled INTEGER NOT NULL DEFAULT 0,
  consistent INTEGER NOT NULL,
  model TEXT,
  temperature REAL NOT NULL,
  top_p REAL NOT NULL,
  PRIMARY KEY (idx, turn)
);
CREATE TABLE turn_token_parts (
  idx INTEGER NOT NULL,
  turn INTEGER NOT NULL,
  part INTEGER NOT NULL,
  data BLOB NOT NULL,
  PRIMARY KEY (idx, turn, part)
);
CREATE TABLE teacher_logprobs (
  idx INTEGER NOT NULL,
  turn INTEGER NOT NULL,
  logprobs BLOB NOT NULL,
  PRIMARY KEY (idx, turn)
);
CREATE TABLE token_modes (
  idx INTEGER PRIMARY KEY,
  mode TEXT NOT NULL,
  reason TEXT
);
CREATE TABLE episode_tools (
  idx INTEGER PRIMARY KEY,
  tools TEXT NOT NULL,
  hash TEXT NOT NULL
);
CREATE TABLE run_policy (
  id INTEGER PRIMARY KEY CHECK (id = 1),
  version INTEGER NOT NULL,
  max_lag INTEGER,
  paused INTEGER NOT NULL,
  revision INTEGER NOT NULL,
  stale TEXT
);
CREATE TABLE turn_versions (
  idx INTEGER NOT NULL,
  turn INTEGER NOT NULL,
  version INTEGER NOT NULL,
  PRIMARY KEY (idx, turn)
);
CREATE TABLE timers (
  kind TEXT NOT NULL,
  episode INTEGER NOT NULL,
  due_at INTEGER NOT NULL,
  PRIMARY KEY (kind, episode)
);
CREATE TABLE interrupted_turns (
  idx INTEGER NOT NULL,
  turn INTEGER NOT NULL,
  open INTEGER NOT NULL,
  prompt BLOB NOT NULL,
  completion BLOB NOT NULL,
  logprobs BLOB NOT NULL,
  content TEXT NOT NULL,
  versions TEXT NOT NULL,
  kept INTEGER NOT NULL,
  PRIMARY KEY (idx, turn)
);`,
};
