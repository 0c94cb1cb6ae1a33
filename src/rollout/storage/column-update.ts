/**
 * One UPDATE statement per table, for every write that changes some of a row's columns.
 *
 * Why: workerd keeps every distinct statement an object runs prepared, per object, for the
 * object's life (a cache of up to 1 MB of SQL text, `api/sql.c++`), and a group object is
 * resident beside a thousand others. A table with an UPDATE per transition paid for each; this
 * one statement names every column, and a bit mask in its first binding says which of them this
 * write sets (`IIF(?1 & bit, value, column)`), so SQLite still changes only those: two writes
 * to one row in a transaction compose as two narrow UPDATEs would.
 */
import type { GroupDatabase } from "./database";

/** A column's new value, as SQLite binds it. */
export type ColumnValue = number | string | null | Uint8Array;

/** A row field's column: `maxTurns` is stored as `max_turns`. */
const columnOf = (field: string) => field.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);

export class ColumnUpdate<Field extends string> {
  private readonly query: string;
  private readonly bits: ReadonlyMap<Field, number>;

  /**
   * `fields` are the row's, as its TypeScript type names them (each column is its snake_case);
   * `where` names the row, its `?` placeholders bound after every column's value.
   */
  constructor(
    private readonly db: GroupDatabase,
    table: string,
    fields: readonly Field[],
    where: string,
  ) {
    if (fields.length > 30) throw new Error(`${table}: at most 30 columns fit one mask`);
    this.bits = new Map(fields.map((field, i) => [field, 1 << i]));
    const columns = fields.map(columnOf);
    const sets = columns.map(
      (column, i) => `${column} = IIF(?1 & ${1 << i}, ?${i + 2}, ${column})`,
    );
    const whereAt = fields.length + 2;
    let next = whereAt;
    const numberedWhere = where.replace(/\?/g, () => `?${next++}`);
    this.query = `UPDATE ${table} SET ${sets.join(", ")} WHERE ${numberedWhere}`;
  }

  /** Sets the columns `values` names, and only those, in the row `key` binds into `where`. */
  run(values: Partial<Record<Field, ColumnValue>>, ...key: ColumnValue[]): void {
    let mask = 0;
    const bindings: ColumnValue[] = [];
    for (const [field, bit] of this.bits) {
      const value = values[field];
      if (value === undefined) bindings.push(null);
      else {
        mask |= bit;
        bindings.push(value);
      }
    }
    this.db.exec(this.query, mask, ...bindings, ...key);
  }
}
