/**
 * Numbered schema migrations for a Durable Object's SQLite. Each object records the versions it
 * has applied; opening one brings it to the latest in place, each step in one transaction with
 * its record, so an object written by an older deploy is upgraded rather than misread.
 */

export interface Migration {
  /** 1, 2, 3, ...: applied in order, each once. */
  version: number;
  /** What the step does, for the ledger and for a reader of the list. */
  name: string;
  up: (sql: SqlStorage) => void;
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

/** Applies every migration the object has not; returns the version it is at now. */
export function migrate(
  storage: DurableObjectStorage,
  migrations: readonly Migration[],
  now: number = Date.now(),
): number {
  checkNumbering(migrations);
  let version = appliedVersion(storage.sql);
  for (const migration of migrations.slice(version)) {
    storage.transactionSync(() => {
      storage.sql.exec(LEDGER);
      migration.up(storage.sql);
      storage.sql.exec(
        "INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)",
        migration.version,
        migration.name,
        now,
      );
    });
    version = migration.version;
  }
  return version;
}
