/** A run producer's SQLite schema, as numbered migrations (src/utils/migrations.ts). */
import type { Migration } from "../utils/migrations";

export const PRODUCER_MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    name: "the producer, its dataset and its starts",
    up: (sql) =>
      sql.exec(`CREATE TABLE producer (
        id INTEGER PRIMARY KEY CHECK (id = 1),
        run_id TEXT NOT NULL,
        request TEXT NOT NULL,
        env_version TEXT NOT NULL,
        dataset_sha256 TEXT NOT NULL,
        plan_digest TEXT NOT NULL,
        state TEXT NOT NULL,
        reason TEXT,
        last_error TEXT,
        epoch INTEGER NOT NULL,
        slot INTEGER NOT NULL,
        created_at TEXT NOT NULL,
        finished_at TEXT
      );
      CREATE TABLE examples (pos INTEGER PRIMARY KEY, id TEXT NOT NULL, example TEXT NOT NULL);
      CREATE TABLE starts (
        key TEXT PRIMARY KEY,
        epoch INTEGER NOT NULL,
        pos INTEGER NOT NULL,
        attempt INTEGER NOT NULL,
        status TEXT NOT NULL,
        group_id TEXT,
        uniform INTEGER,
        detail TEXT
      );
      CREATE INDEX starts_status ON starts (status);
      CREATE INDEX starts_example ON starts (epoch, pos, attempt)`),
  },
  {
    version: 2,
    name: "who started it (its token's quota), and the limit it waits on",
    up: (sql) =>
      sql.exec(`ALTER TABLE producer ADD COLUMN started_by TEXT;
        ALTER TABLE producer ADD COLUMN waiting TEXT`),
  },
];
