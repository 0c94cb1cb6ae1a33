// The growth table's byte counts: a row's record and index entries, computed from its values,
// add up to what SQLite's own dbstat finds on the pages.
import { DatabaseSync } from "node:sqlite";
import { describe, expect, it } from "vitest";
import { payloadBytes, recordBytes, rowBytesBy } from "../../bench/sqlite-bytes";

describe("rowBytesBy", () => {
  it("sums to dbstat's payload, for a composite key with an index, nulls, reals and overflow", () => {
    const db = new DatabaseSync(":memory:");
    db.exec(`CREATE TABLE m (idx INTEGER NOT NULL, seq INTEGER NOT NULL, turn INTEGER, t TEXT,
      b BLOB, r REAL, PRIMARY KEY (idx, seq));
      CREATE INDEX m_turn ON m (turn);`);
    const insert = db.prepare("INSERT INTO m VALUES (?, ?, ?, ?, ?, ?)");
    for (let i = 0; i < 1500; i++)
      insert.run(
        i % 3,
        i,
        i % 7 === 0 ? null : i * 1000003,
        "héllo".repeat(i % 50),
        new Uint8Array(i % 300 === 0 ? 9000 : i % 40),
        i / 3,
      );
    const byTurn = rowBytesBy(db, "m", "turn");
    const total = [...byTurn.values()].reduce((a, b) => a + b, 0);
    expect(total).toBe(payloadBytes(db, "m"));
  });

  it("counts an INTEGER PRIMARY KEY as the rowid, not in the record", () => {
    const db = new DatabaseSync(":memory:");
    db.exec("CREATE TABLE e (idx INTEGER PRIMARY KEY, s TEXT)");
    for (let i = 0; i < 200; i++)
      db.prepare("INSERT INTO e VALUES (?, ?)").run(i * 7, "x".repeat(i));
    const total = [...rowBytesBy(db, "e", "idx").values()].reduce((a, b) => a + b, 0);
    expect(total).toBe(payloadBytes(db, "e"));
  });

  it("encodes a record as SQLite does", () => {
    // Header: its length, then 0 (NULL), 9 (the integer 1), 13 + 2·3 (3 bytes of text).
    expect(
      recordBytes([
        { type: "null", value: null },
        { type: "integer", value: 1 },
        { type: "text", value: 3 },
      ]),
    ).toBe(4 + 3);
  });
});
