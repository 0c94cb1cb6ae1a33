/**
 * The group object's SQLite, owned by one class: its schema (numbered migrations), its
 * transactions, and the reset once the group has landed. The tables (one module each, beside
 * this one) read and write through it. A write made inside `transaction` commits with the
 * others or not at all; what a table does once its write is durable, such as moving its cache
 * on, waits for the commit (`afterCommit`), so a refused write leaves every cache as it was.
 */
import { hasTable, migrate } from "../../utils/migrations";
import { GROUP_MIGRATIONS, GROUP_SCHEMA } from "./migrations";

export class GroupDatabase {
  private readonly sql: SqlStorage;
  /** Callbacks of the transaction under way; null outside one. */
  private committed: (() => void)[] | null = null;
  private readonly resets: (() => void)[] = [];
  private readonly creations: (() => void)[] = [];
  private migrated = false;

  constructor(
    private readonly storage: DurableObjectStorage,
    readonly now: () => number = Date.now,
  ) {
    this.sql = storage.sql;
  }

  /**
   * Whether the object holds a group's tables. Asking writes nothing: a lookup of an id no group
   * has must leave its object empty.
   */
  hasGroup(): boolean {
    if (!hasTable(this.sql, "group_state")) return false;
    this.upgrade();
    return this.sql.exec("SELECT 1 FROM group_state").toArray().length > 0;
  }

  /**
   * Brings the schema to the latest version: a fresh object's from the snapshot in one statement,
   * an older deploy's step by step, in place.
   */
  upgrade(): void {
    if (this.migrated) return;
    migrate(this.storage, GROUP_MIGRATIONS, this.now(), GROUP_SCHEMA);
    this.migrated = true;
  }

  /** One statement; `bindings` are numbers, strings, nulls, or bytes (typed arrays). */
  exec(query: string, ...bindings: unknown[]): SqlStorageCursor<Record<string, SqlStorageValue>> {
    return this.sql.exec(query, ...bindings);
  }

  /**
   * Runs `write` as one transaction, then every callback its writes registered. A transaction
   * begun inside another joins it: the writes of a turn commit together, whichever tables made
   * them.
   */
  transaction<T>(write: () => T): T {
    if (this.committed !== null) return write();
    const committed: (() => void)[] = [];
    this.committed = committed;
    let result: T;
    try {
      result = this.storage.transactionSync(write);
    } finally {
      this.committed = null;
    }
    for (const callback of committed) callback();
    return result;
  }

  /**
   * Runs `callback` once the current transaction has committed; at once outside a transaction,
   * where each statement commits on its own.
   */
  afterCommit(callback: () => void): void {
    if (this.committed === null) callback();
    else this.committed.push(callback);
  }

  /**
   * What a table knows of a group just created: its tables are empty (or hold only what the
   * creating transaction wrote, which that table's write put in memory itself), so its mirror
   * starts without a read. Each read skipped is a statement the object never prepares.
   */
  onCreate(start: () => void): void {
    this.creations.push(start);
  }

  /** The creating transaction has committed: every table starts from what it knows. */
  created(): void {
    for (const start of this.creations) start();
  }

  /** A table's in-memory state to drop when the object's storage is deleted. */
  onReset(forget: () => void): void {
    this.resets.push(forget);
  }

  /**
   * After landing: the group's data lives in D1 now; nothing stays here, in storage or memory.
   * One call deletes the alarm too (compatibility date 2026-02-24 and later).
   */
  async deleteAll(): Promise<void> {
    for (const forget of this.resets) forget();
    this.migrated = false;
    await this.storage.deleteAll();
  }
}
