/** The in-flight limiter's SQLite schema, as numbered migrations (src/utils/migrations.ts). */
import type { Migration } from "../../utils/migrations";

export const LIMITER_MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    // `IF NOT EXISTS`: the limiter of earlier deploys made this table itself.
    name: "permits as leases",
    up: (sql) =>
      sql.exec(`CREATE TABLE IF NOT EXISTS permits (
        ticket TEXT PRIMARY KEY,
        group_id TEXT NOT NULL,
        expires_at INTEGER NOT NULL
      )`),
  },
];
