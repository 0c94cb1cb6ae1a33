/** Reading SQLite values back into the types their tables declare. */

export type Value = SqlStorageValue | undefined;
export type Row = Record<string, SqlStorageValue>;

export const numOrNull = (value: Value): number | null =>
  value === null || value === undefined ? null : Number(value);

export const textOrNull = (value: Value): string | null =>
  value === null || value === undefined ? null : String(value);

export const boolOrNull = (value: Value): boolean | null =>
  value === null || value === undefined ? null : value === 1;

/** A JSON column this object wrote itself. */
export const jsonOf = (value: Value): unknown => JSON.parse(String(value));

/** Rows of several episodes (ordered within each), grouped by their `idx`. */
export function byEpisode<T>(rows: Iterable<Row>, read: (row: Row) => T): Map<number, T[]> {
  const grouped = new Map<number, T[]>();
  for (const row of rows) {
    const idx = Number(row.idx);
    const list = grouped.get(idx);
    if (list) list.push(read(row));
    else grouped.set(idx, [read(row)]);
  }
  return grouped;
}
