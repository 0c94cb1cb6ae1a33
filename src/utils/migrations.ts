/**
 * Numbered schema migrations for a Durable Object's SQLite. Each object records the versions it
 * has applied; opening one brings it to the latest in place, each step in one transaction with
 * its record, so an object written by an older deploy is upgraded rather than misread. An object
 * with no tables yet may instead be given the latest schema whole, from a snapshot.
 */

export interface Migration {
  /** 1, 2, 3, ...: applied in order, each once. */
  version: number;
  /** What the step does, for the ledger and for a reader of the list. */
  name: string;
  up: (sql: SqlStorage) => void;
}

/**
 * The latest schema whole, created in one statement by an object that has no tables yet, in
 * place of every step. Why: workerd keeps each distinct statement an object runs prepared for
 * the object's life, so replaying the steps left each of them (multi-statement DDL, each in a
 * transaction of its own) in every object. For a thousand group objects resident at once, that
 * was about 20 MB of workerd's peak more than one snapshot (docs/architecture.md).
 */
export interface SchemaSnapshot {
  /** The last migration's version: a snapshot at any other is refused. */
  version: number;
  /** Every table (and index) at that version. */
  sql: string;
}

/** The ledger of applied versions: the one table every migrated object has. */
const LEDGER = `CREATE TABLE IF NOT EXISTS schema_migrations (
  version INTEGER PRIMARY KEY,
  name TEXT NOT NULL,
  applied_at INTEGER NOT NULL
)`;

/** A list that skips or repeats a number would apply steps out of order on some objects. */
export function checkNumbering(migrations: readonly Migration[]): void {
  migrations.forEach((migration, i) => {
    if (migration.version !== i + 1)
      throw new Error(`migration "${migration.name}" is number ${migration.version}, not ${i + 1}`);
  });
}

/**
 * Whether the object has the table. One statement for any name: workerd keeps each distinct
 * statement an object runs prepared for the object's life.
 */
export function hasTable(sql: SqlStorage, name: string): boolean {
  return (
    sql.exec("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", name).toArray()
      .length > 0
  );
}

/** The highest version an object has applied; 0 for one that never ran a migration. */
export function appliedVersion(sql: SqlStorage): number {
  if (!hasTable(sql, "schema_migrations")) return 0;
  return Number(sql.exec("SELECT COALESCE(MAX(version), 0) AS v FROM schema_migrations").one().v);
}

const RECORD = "INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)";

/**
 * Whether the object has no tables of its own. The runtime's (`_cf_...` deployed,
 * `__miniflare_do_name` locally) and SQLite's do not count; an object of a deploy from before the
 * ledger has tables and no ledger, and is migrated step by step.
 */
function hasNoTables(sql: SqlStorage): boolean {
  return (
    sql
      .exec(
        "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name NOT LIKE '\\_%' ESCAPE '\\' AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\'",
      )
      .toArray().length === 0
  );
}

/**
 * Applies every migration the object has not; returns the version it is at now. `snapshot`: an
 * object with no tables yet creates it instead, in one transaction, and records every version.
 */
export function migrate(
  storage: DurableObjectStorage,
  migrations: readonly Migration[],
  now: number = Date.now(),
  snapshot?: SchemaSnapshot,
): number {
  checkNumbering(migrations);
  if (snapshot !== undefined && snapshot.version !== migrations.length)
    throw new Error(
      `the schema snapshot is at version ${snapshot.version}, the migrations at ${migrations.length}`,
    );
  if (snapshot !== undefined && hasNoTables(storage.sql)) {
    storage.transactionSync(() => {
      storage.sql.exec(LEDGER);
      storage.sql.exec(snapshot.sql);
      for (const migration of migrations)
        storage.sql.exec(RECORD, migration.version, migration.name, now);
    });
    return snapshot.version;
  }
  let version = appliedVersion(storage.sql);
  for (const migration of migrations.slice(version)) {
    storage.transactionSync(() => {
      storage.sql.exec(LEDGER);
      migration.up(storage.sql);
      storage.sql.exec(RECORD, migration.version, migration.name, now);
    });
    version = migration.version;
  }
  return version;
}
