/** The fleet scheduler's SQLite schema, as numbered migrations (src/utils/migrations.ts). */
import type { Migration } from "../utils/migrations";

export const FLEET_MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    // `IF NOT EXISTS`: the in-flight limiter of earlier deploys made this table itself.
    name: "permits as leases",
    up: (sql) =>
      sql.exec(`CREATE TABLE IF NOT EXISTS permits (
        ticket TEXT PRIMARY KEY,
        group_id TEXT NOT NULL,
        expires_at INTEGER NOT NULL
      )`),
  },
  {
    version: 2,
    // A permit of the single-host limiter has no host: it is the first configured host's.
    name: "each permit on a host; each host's health, pause, version and capabilities",
    up: (sql) =>
      sql.exec(`ALTER TABLE permits ADD COLUMN host TEXT;
      CREATE TABLE hosts (
        url TEXT PRIMARY KEY,
        state TEXT NOT NULL,
        failures INTEGER NOT NULL,
        last_ok_at INTEGER NOT NULL,
        ejected_at INTEGER,
        last_error TEXT,
        paused INTEGER NOT NULL,
        policy_version INTEGER,
        token_refusals TEXT NOT NULL DEFAULT '[]'
      );
      CREATE TABLE configured_hosts (
        id INTEGER PRIMARY KEY CHECK (id = 1),
        hosts TEXT NOT NULL
      )`),
  },
  {
    version: 3,
    // An evaluation's permits count toward the share each host keeps for evaluations.
    name: "permits of evaluation groups",
    up: (sql) => sql.exec("ALTER TABLE permits ADD COLUMN eval INTEGER NOT NULL DEFAULT 0"),
  },
];
