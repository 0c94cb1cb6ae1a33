/**
 * What rows really take in a SQLite file (the group object's, local D1's), read with
 * node:sqlite: each row's record as SQLite encodes it (a header of serial types, then the values)
 * plus its entries in the table's indexes, and the pages the whole file uses (`dbstat`).
 */
import { DatabaseSync } from "node:sqlite";

type SqlType = "null" | "integer" | "real" | "text" | "blob";

const varintBytes = (n: number) => {
  let bytes = 1;
  for (let v = n; v >= 0x80 && bytes < 9; v /= 0x80) bytes++;
  return bytes;
};

/** A value's serial type and content size in SQLite's record format (file format 4). */
function serial(type: SqlType, value: unknown): [number, number] {
  switch (type) {
    case "null":
      return [0, 0];
    case "real":
      return [7, 8];
    case "integer": {
      const v = BigInt(value as number | bigint);
      if (v === 0n) return [8, 0];
      if (v === 1n) return [9, 0];
      const sizes: [bigint, number, number][] = [
        [0x7fn, 1, 1],
        [0x7fffn, 2, 2],
        [0x7fffffn, 3, 3],
        [0x7fffffffn, 4, 4],
        [0x7fffffffffffn, 5, 6],
      ];
      for (const [max, code, size] of sizes) if (v <= max && v >= -max - 1n) return [code, size];
      return [6, 8];
    }
    case "text":
    case "blob": {
      const n = Number(value);
      return [type === "text" ? 2 * n + 13 : 2 * n + 12, n];
    }
  }
}

/** The size of one record: its header (its own length, then a serial type per value) and body. */
export function recordBytes(values: readonly { type: SqlType; value: unknown }[]): number {
  const serials = values.map((v) => serial(v.type, v.value));
  const types = serials.reduce((n, [code]) => n + varintBytes(code), 0);
  let header = types + 1;
  if (varintBytes(header) > 1) header = types + varintBytes(types + 2);
  return header + serials.reduce((n, [, size]) => n + size, 0);
}

export function openReadOnly(path: string): DatabaseSync {
  return new DatabaseSync(path, { readOnly: true });
}

/** SQLite's affinity rules: REAL when the declared type says REAL, FLOA or DOUB and no INT first. */
function hasRealAffinity(declared: string): boolean {
  const t = declared.toUpperCase();
  if (t.includes("INT") || /CHAR|CLOB|TEXT|BLOB/.test(t) || t === "") return false;
  return /REAL|FLOA|DOUB/.test(t);
}

const quote = (name: string) => `"${name.replaceAll('"', '""')}"`;

/**
 * Bytes of `table`'s rows matching `where`, summed by the value of `by`: each row's record, and
 * its record in every index of the table (partial and expression indexes left out).
 */
export function rowBytesBy(
  db: DatabaseSync,
  table: string,
  by: string,
  where = "1",
  ...params: (string | number)[]
): Map<number, number> {
  const info = db.prepare("SELECT name, type FROM pragma_table_info(?)").all(table) as {
    name: string;
    type: string;
  }[];
  const columns = info.map((c) => c.name);
  const realAffinity = info.map((c) => hasRealAffinity(c.type));
  const indexes = (
    db.prepare("SELECT name, partial FROM pragma_index_list(?)").all(table) as {
      name: string;
      partial: number;
    }[]
  )
    .filter((i) => i.partial === 0)
    .map(
      (i) =>
        db.prepare("SELECT cid, name FROM pragma_index_xinfo(?) ORDER BY seqno").all(i.name) as {
          cid: number;
          name: string | null;
        }[],
    )
    .filter((cols) => cols.every((c) => c.cid !== -2));
  // Text and blob sizes in bytes; an INTEGER PRIMARY KEY is the rowid, stored as NULL.
  const rowidAlias = (
    db
      .prepare("SELECT name FROM pragma_table_info(?) WHERE pk = 1 AND type = 'INTEGER'")
      .all(table) as { name: string }[]
  ).filter(() => {
    const pks = db
      .prepare("SELECT COUNT(*) AS n FROM pragma_table_info(?) WHERE pk > 0")
      .get(table) as { n: number };
    return pks.n === 1;
  })[0]?.name;
  const select = [
    "rowid AS __rowid",
    `${quote(by)} AS __by`,
    ...columns.map(
      (c, i) =>
        `typeof(${quote(c)}) AS t${i}, CASE WHEN typeof(${quote(c)}) IN ('text', 'blob') THEN length(CAST(${quote(c)} AS BLOB)) ELSE ${quote(c)} END AS v${i}`,
    ),
  ].join(", ");
  const out = new Map<number, number>();
  const rows = db
    .prepare(`SELECT ${select} FROM ${quote(table)} WHERE ${where}`)
    .all(...params) as Record<string, unknown>[];
  for (const row of rows) {
    const value = (i: number): { type: SqlType; value: unknown } => {
      if (columns[i] === rowidAlias) return { type: "null", value: null };
      const type = row[`t${i}`] as SqlType;
      const v = row[`v${i}`];
      // SQLite writes a whole REAL of a REAL column as an integer, to save space.
      if (
        type === "real" &&
        realAffinity[i] &&
        Number.isInteger(v) &&
        Math.abs(v as number) < 2 ** 47
      )
        return { type: "integer", value: v };
      return { type, value: v };
    };
    let bytes = recordBytes(columns.map((_, i) => value(i)));
    for (const index of indexes)
      bytes += recordBytes(
        index.map((c) =>
          c.cid === -1
            ? { type: "integer" as const, value: row.__rowid }
            : { type: row[`t${c.cid}`] as SqlType, value: row[`v${c.cid}`] },
        ),
      );
    const key = Number(row.__by);
    out.set(key, (out.get(key) ?? 0) + bytes);
  }
  return out;
}

/** Bytes of every page the file's tables and indexes use (`dbstat`). */
export function pageBytes(db: DatabaseSync): number {
  const row = db.prepare("SELECT COALESCE(SUM(pgsize), 0) AS n FROM dbstat").get() as { n: number };
  return Number(row.n);
}

/**
 * The records `dbstat` finds in `table` and its indexes: what rowBytesBy should sum to over every
 * row. A table B-tree keeps its records on leaf (and overflow) pages; an index's interior pages
 * hold keys too.
 */
export function payloadBytes(db: DatabaseSync, table: string): number {
  const indexes = (
    db.prepare("SELECT name FROM pragma_index_list(?) WHERE partial = 0").all(table) as {
      name: string;
    }[]
  ).map((i) => i.name);
  const sum = (sql: string, name: string) => Number((db.prepare(sql).get(name) as { n: number }).n);
  let bytes = sum(
    "SELECT COALESCE(SUM(payload), 0) AS n FROM dbstat WHERE name = ? AND pagetype IN ('leaf', 'overflow')",
    table,
  );
  for (const index of indexes)
    bytes += sum("SELECT COALESCE(SUM(payload), 0) AS n FROM dbstat WHERE name = ?", index);
  return bytes;
}
