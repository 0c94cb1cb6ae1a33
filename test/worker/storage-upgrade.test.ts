// A group object written by an earlier deploy is upgraded in place when it wakes: its schema
// migrated, its spec read with today's defaults, its timers understood, and the group carried
// on to landing as if nothing had changed.
import { runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { newGroupId } from "../../src/rollout/group-ids";
import { GroupStorage } from "../../src/rollout/storage/group-storage";
import { GROUP_MIGRATIONS, GROUP_SCHEMA } from "../../src/rollout/storage/migrations";
import { appliedVersion, type Migration, migrate } from "../../src/utils/migrations";
import { groupStub, guessExample, waitForGroup } from "./helpers";

/**
 * What the deploy before numbered migrations created when a group started (its GroupStore's
 * schema, verbatim). The token, tool and policy tables were made lazily, only once used: an
 * object of that time may not have them.
 */
const EARLIER_SCHEMA = `
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
);`;

const OPENING = { role: "user", content: "I'm thinking of a number between 1 and 100. Guess." };

/**
 * A group of two as that deploy left it mid-flight: its spec from before token-in, distillation
 * and async RL (no `generation`, `tokens`, `algorithm` or `policy_version`); episode 0 waiting
 * for its first generation, episode 1's parked behind a retry timer; registration still due.
 */
function writeEarlierGroup(storage: DurableObjectStorage, groupId: string, now: number): void {
  const sql = storage.sql;
  sql.exec(EARLIER_SCHEMA);
  const request = {
    env: "guess-number",
    example: guessExample("upgraded", 42),
    group_size: 2,
    prompt_text: "",
    run_id: "storage-upgrade",
    credit_assignment: "per_episode",
    advantage: "mean",
    sampling: { model: "sim", temperature: 1, top_p: 1, max_completion_tokens: 64 },
    max_context_tokens: 32_768,
  };
  const spec = {
    groupId,
    request,
    requestHash: "earlier-deploy",
    idempotencyKey: null,
    createdAt: new Date(now).toISOString(),
  };
  sql.exec(
    "INSERT INTO group_state (id, spec, phase) VALUES (1, ?, 'running')",
    JSON.stringify(spec),
  );
  for (const idx of [0, 1]) {
    sql.exec(
      "INSERT INTO episodes (idx, state, max_turns, opening_count, started_at) VALUES (?, 'generating', 8, 1, ?)",
      idx,
      now,
    );
    sql.exec(
      "INSERT INTO messages (idx, seq, turn, sampled, message) VALUES (?, 0, NULL, 0, ?)",
      idx,
      JSON.stringify(OPENING),
    );
  }
  sql.exec(
    "INSERT INTO generations (idx, state, attempts, retries, retry_at) VALUES (1, 'waiting', 1, 1, ?)",
    now - 1,
  );
  sql.exec("INSERT INTO timers (name, due_at) VALUES ('retry:1', ?)", now - 1);
  sql.exec("INSERT INTO timers (name, due_at) VALUES ('register', ?)", now);
}

describe("a group object written by an earlier deploy", () => {
  it("is migrated in place: its spec takes today's defaults, its timers keep their meaning", async () => {
    const groupId = await newGroupId(null);
    const stub = groupStub(groupId);
    const now = Date.now();
    await runInDurableObject(stub, (_instance, state) =>
      writeEarlierGroup(state.storage, groupId, now),
    );
    const read = await runInDurableObject(stub, (_instance, state) => {
      const storage = new GroupStorage(state.storage);
      const exists = storage.exists();
      const { request } = storage.group.get().spec;
      return {
        exists,
        version: appliedVersion(state.storage.sql),
        request: {
          generation: request.generation,
          tokens: request.tokens,
          algorithm: request.algorithm,
          policy_version: request.policy_version,
        },
        due: storage.timers.due(now),
        parked: storage.generations.get(1),
        // Tables an earlier object never made exist now, empty.
        tokenMode: storage.tokens.mode(0),
        tools: storage.tools.of(0),
      };
    });
    expect(read.exists).toBe(true);
    expect(read.version).toBe(GROUP_MIGRATIONS.length);
    expect(read.request).toEqual({
      generation: "chat",
      tokens: "auto",
      algorithm: "grpo",
      policy_version: 0,
    });
    expect(read.due).toEqual([{ kind: "retry", episode: 1 }, { kind: "register" }]);
    expect(read.parked).toMatchObject({ state: "waiting", attempts: 1, retryAt: now - 1 });
    expect(read.tokenMode).toBe("exact");
    expect(read.tools).toBeNull();
  });

  it("carries its group on from where it stopped, to landing", async () => {
    const groupId = await newGroupId(null);
    const stub = groupStub(groupId);
    await runInDurableObject(stub, (_instance, state) =>
      writeEarlierGroup(state.storage, groupId, Date.now()),
    );
    // The alarm the earlier deploy armed: it registers the group and resumes both episodes.
    await runDurableObjectAlarm(stub);
    const group = await waitForGroup(groupId);
    expect(group.status).toBe("landed");
    expect(group.episodes.map((e: { state: string }) => e.state)).toEqual([
      "completed",
      "completed",
    ]);
  });
});

/**
 * Every table of the object's own, as SQLite describes it: each column (name, type, NOT NULL,
 * default, key), each index's columns, origin and uniqueness, and each CHECK.
 */
function describeSchema(sql: SqlStorage) {
  const tables = sql
    .exec(
      "SELECT name, sql FROM sqlite_master WHERE type = 'table' AND name NOT LIKE '\\_%' ESCAPE '\\' ORDER BY name",
    )
    .toArray();
  return tables.map(({ name, sql: text }) => ({
    name,
    columns: sql
      .exec('SELECT cid, name, type, "notnull", dflt_value, pk FROM pragma_table_info(?)', name)
      .toArray(),
    indexed: sql
      .exec(
        'SELECT l."unique", l.origin, i.seqno, i.name FROM pragma_index_list(?1) AS l, pragma_index_info(l.name) AS i ORDER BY l.origin, l."unique", i.seqno',
        name,
      )
      .toArray(),
    checks: String(text).match(/CHECK \([^)]*\)/g) ?? [],
  }));
}

describe("a new group object", () => {
  it("gets from the snapshot, in one step, the schema the migrations build step by step", async () => {
    const stepped = await runInDurableObject(
      groupStub(`steps-${crypto.randomUUID()}`),
      (_instance, state) => {
        const version = migrate(state.storage, GROUP_MIGRATIONS);
        return { version, schema: describeSchema(state.storage.sql) };
      },
    );
    const fresh = await runInDurableObject(
      groupStub(`fresh-${crypto.randomUUID()}`),
      (_instance, state) => {
        const version = migrate(state.storage, GROUP_MIGRATIONS, Date.now(), GROUP_SCHEMA);
        const ledger = state.storage.sql
          .exec("SELECT version, name FROM schema_migrations ORDER BY version")
          .toArray();
        return { version, schema: describeSchema(state.storage.sql), ledger };
      },
    );
    expect(stepped.schema.map((t) => t.name)).toContain("interrupted_turns");
    const last = GROUP_MIGRATIONS.length;
    expect([stepped.version, fresh.version]).toEqual([last, last]);
    expect(fresh.schema).toEqual(stepped.schema);
    expect(fresh.ledger).toEqual(
      GROUP_MIGRATIONS.map((m) => ({ version: m.version, name: m.name })),
    );
  });
});

describe("numbered migrations", () => {
  const object = () => groupStub(`migrations-${crypto.randomUUID()}`);

  it("refuse a snapshot at another version than the last step's", async () => {
    await runInDurableObject(object(), (_instance, state) => {
      const steps: Migration[] = [
        { version: 1, name: "a", up: (sql) => sql.exec("CREATE TABLE a (x INTEGER)") },
      ];
      expect(() =>
        migrate(state.storage, steps, Date.now(), {
          version: 2,
          sql: "CREATE TABLE a (x INTEGER)",
        }),
      ).toThrow(/snapshot is at version 2, the migrations at 1/);
    });
  });

  it("give an object with tables but no ledger (a deploy before it) the steps, not the snapshot", async () => {
    const after = await runInDurableObject(object(), (_instance, state) => {
      state.storage.sql.exec("CREATE TABLE a (x INTEGER)");
      const steps: Migration[] = [
        {
          version: 1,
          name: "a",
          up: (sql) => sql.exec("CREATE TABLE IF NOT EXISTS a (x INTEGER)"),
        },
        { version: 2, name: "y", up: (sql) => sql.exec("ALTER TABLE a ADD COLUMN y TEXT") },
      ];
      const version = migrate(state.storage, steps, Date.now(), {
        version: 2,
        sql: "CREATE TABLE a (x INTEGER, y TEXT, z TEXT)",
      });
      const columns = state.storage.sql
        .exec("SELECT name FROM pragma_table_info('a')")
        .toArray()
        .map((r) => r.name);
      return { version, columns };
    });
    expect(after).toEqual({ version: 2, columns: ["x", "y"] });
  });

  it("apply each step once, in order, and a failed step leaves no trace", async () => {
    const steps: Migration[] = [
      { version: 1, name: "a", up: (sql) => sql.exec("CREATE TABLE a (x INTEGER)") },
      {
        version: 2,
        name: "b",
        up: (sql) => {
          sql.exec("CREATE TABLE b (x INTEGER)");
          throw new Error("step 2 is broken");
        },
      },
    ];
    const after = await runInDurableObject(object(), (_instance, state) => {
      expect(() => migrate(state.storage, steps)).toThrow(/step 2 is broken/);
      const afterFailure = appliedVersion(state.storage.sql);
      const tables = state.storage.sql
        .exec("SELECT name FROM sqlite_master WHERE type = 'table' AND name IN ('a', 'b')")
        .toArray()
        .map((r) => r.name);
      // Run again with step 2 mended: only it runs.
      const mended = migrate(state.storage, [
        steps[0] as Migration,
        { version: 2, name: "b", up: (sql) => sql.exec("CREATE TABLE b (x INTEGER)") },
      ]);
      return { afterFailure, tables, mended };
    });
    expect(after).toEqual({ afterFailure: 1, tables: ["a"], mended: 2 });
  });

  it("refuse a list whose numbers skip or repeat", async () => {
    await runInDurableObject(object(), (_instance, state) => {
      const skipping: Migration[] = [{ version: 2, name: "two", up: () => {} }];
      expect(() => migrate(state.storage, skipping)).toThrow(/number 2, not 1/);
    });
  });
});
