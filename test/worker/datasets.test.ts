// Datasets in R2, through the API against the real DATASETS bucket: a push streams the JSONL file
// in and checks every line as it passes; a refused push leaves nothing in the bucket; the same
// bytes again are a no-op, other bytes under a taken name a 409 unless replaced.
import { env, exports } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import {
  type DatasetList,
  type DatasetView,
  EdgerollClient,
  EdgerollError,
  type PushedDataset,
} from "../../src/client/edgeroll-client";
import { MAX_DATASET_BYTES } from "../../src/datasets/dataset-wire";
import { PART_BYTES } from "../../src/datasets/part-writer";
import { hex } from "../../src/utils/digest";
import { api, BASE, errorOf, TOKENS } from "./helpers";

/** Files of this test run only: the bucket is shared with the other files of this runtime. */
const unique = (name: string) => `${name}-${crypto.randomUUID().slice(0, 8)}`;

const encoder = new TextEncoder();
const jsonl = (rows: readonly unknown[]) => rows.map((row) => JSON.stringify(row)).join("\n");
const rows = (n: number, prefix = "q") =>
  Array.from({ length: n }, (_, i) => ({ id: `${prefix}-${i}`, input: `What is ${i} + ${i}?` }));

/** The body as a stream of small chunks and no declared length, as a client streams a file. */
function streamed(bytes: Uint8Array, chunk = 64 * 1024): ReadableStream<Uint8Array> {
  let at = 0;
  return new ReadableStream({
    pull(controller) {
      if (at >= bytes.byteLength) return controller.close();
      controller.enqueue(bytes.slice(at, at + chunk));
      at += chunk;
    },
  });
}

function push(
  name: string,
  body: string | Uint8Array | ReadableStream<Uint8Array>,
  options: { token?: string; type?: string | null; query?: string } = {},
): Promise<Response> {
  const headers: Record<string, string> = {
    authorization: `Bearer ${options.token ?? TOKENS.trainer}`,
  };
  if (options.type !== null) headers["content-type"] = options.type ?? "application/x-ndjson";
  return api(`/v1/datasets/${name}${options.query ?? ""}`, { method: "POST", headers, body });
}

async function sha256Of(bytes: Uint8Array): Promise<string> {
  return hex(new Uint8Array(await crypto.subtle.digest("SHA-256", bytes)));
}

async function listed(name: string): Promise<DatasetView | undefined> {
  const list = await (await api("/v1/datasets")).json<DatasetList>();
  return list.datasets.find((d) => d.name === name);
}

/** Every key of the bucket that belongs to `name`: its manifest and its files. */
async function keysOf(name: string): Promise<string[]> {
  const [manifests, files] = await Promise.all([
    env.DATASETS.list({ prefix: `datasets/${name}` }),
    env.DATASETS.list({ prefix: `files/${name}/` }),
  ]);
  return [...manifests.objects, ...files.objects]
    .map((o) => o.key)
    .filter((key) => key === `datasets/${name}` || key.startsWith(`files/${name}/`));
}

describe("POST /v1/datasets/:name", () => {
  it("stores the file as sent, and lists it with its digest, examples and size", async () => {
    const name = unique("math");
    const bytes = encoder.encode(`${jsonl(rows(5))}\n\n`);
    const answer = await push(name, bytes);
    expect(answer.status).toBe(201);
    const pushed = await answer.json<PushedDataset>();
    const sha256 = await sha256Of(bytes);
    expect(pushed).toMatchObject({ name, bytes: bytes.byteLength, examples: 5, sha256 });
    expect(pushed.result).toBe("created");
    const { result: _, ...view } = pushed;
    expect(await listed(name)).toEqual(view);

    // Read back byte for byte, blank lines and all.
    const file = await api(`/v1/datasets/${name}`, {
      headers: { authorization: `Bearer ${TOKENS.reader}` },
    });
    expect(file.status).toBe(200);
    expect(file.headers.get("content-type")).toBe("application/x-ndjson");
    expect(file.headers.get("etag")).toBe(`"${sha256}"`);
    expect(file.headers.get("x-dataset-examples")).toBe("5");
    expect(new Uint8Array(await file.arrayBuffer())).toEqual(bytes);
    expect(await keysOf(name)).toHaveLength(2);
  });

  it("refuses a file with bad lines, naming each, and stores nothing", async () => {
    const name = unique("broken");
    const lines = [
      { id: "a", input: "1" },
      { id: "b", input: "2" },
      "{not json",
      { id: "d", input: "4" },
      { id: "e", output: "5" },
      { id: "f", input: "6" },
    ].map((row) => (typeof row === "string" ? row : JSON.stringify(row)));
    const answer = await push(name, streamed(encoder.encode(lines.join("\n")), 16));
    expect(answer.status).toBe(400);
    const error = await errorOf<{ line: number; id?: string; message: string }[]>(answer);
    expect(error.code).toBe("invalid_dataset");
    expect(error.details?.map((d) => d.line)).toEqual([3, 5]);
    expect(error.message).toMatch(/nothing was stored/);
    expect(error.message).toContain(`${name}:3: not valid JSON`);
    expect(error.message).toMatch(new RegExp(`${name}:5 \\(id "e"\\): input: `));
    expect(await listed(name)).toBeUndefined();
    expect(await keysOf(name)).toEqual([]);
    expect((await api(`/v1/datasets/${name}`)).status).toBe(404);
  });

  it("names at most the first ten bad lines, and stops reading there", async () => {
    const name = unique("many-bad");
    const body = Array.from({ length: 30 }, (_, i) => (i % 2 === 0 ? "oops" : '{"input": "x"}'));
    const error = await errorOf<{ line: number }[]>(await push(name, body.join("\n")));
    expect(error.details?.map((d) => d.line)).toEqual([1, 3, 5, 7, 9, 11, 13, 15, 17, 19]);
    expect(error.message).toMatch(/has the first 10 bad lines/);
  });

  it("names duplicate ids, lines that are not UTF-8, and lines too long to be one example", async () => {
    const name = unique("odd");
    const invalid = new Uint8Array([...encoder.encode('{"id": "x", "input": "'), 0xff, 0x22, 0x7d]);
    const long = JSON.stringify({ id: "long", input: "y".repeat(1024 * 1024) });
    const parts = [
      encoder.encode(
        `${jsonl([
          { id: "a", input: "1" },
          { id: "a", input: "2" },
        ])}\n`,
      ),
      invalid,
      encoder.encode(`\n${long}\n{"id": "ok", "input": "3"}\n`),
    ];
    const body = new Uint8Array(await new Blob(parts).arrayBuffer());
    const error = await errorOf<{ line: number; message: string }[]>(
      await push(name, streamed(body, 1000)),
    );
    expect(error.details).toEqual([
      { line: 2, message: 'duplicate id "a"' },
      { line: 3, message: "not valid UTF-8" },
      {
        line: 4,
        message: expect.stringMatching(/^longer than 1048576 bytes, the most one example/),
      },
    ]);
    expect(await keysOf(name)).toEqual([]);
  });

  it("refuses a file with no examples", async () => {
    for (const body of ["", "\n \n\n"]) {
      const answer = await push(unique("blank"), body);
      expect(answer.status).toBe(400);
      expect((await errorOf(answer)).message).toMatch(/has no examples/);
    }
  });

  it("takes the body only as application/x-ndjson, and says how to send it", async () => {
    const name = unique("typed");
    const body = jsonl(rows(2));
    for (const type of [null, "application/json", "text/plain"]) {
      const answer = await push(name, body, { type });
      expect(answer.status).toBe(415);
      expect(await errorOf(answer)).toMatchObject({
        code: "unsupported_media_type",
        message: expect.stringContaining("content-type: application/x-ndjson"),
      });
    }
    const form = await push(name, body, { type: "application/x-www-form-urlencoded" });
    expect((await errorOf(form)).message).toMatch(/curl --data-binary @file\.jsonl/);
    expect((await push(name, body, { type: "application/x-ndjson; charset=utf-8" })).status).toBe(
      201,
    );
  });

  it("refuses a name outside the pattern", async () => {
    for (const name of [".hidden", "a%20b", "x".repeat(129), "-dash"]) {
      const answer = await push(name, jsonl(rows(1)));
      expect(answer.status, name).toBe(400);
      expect(await errorOf(answer)).toMatchObject({
        code: "invalid_request",
        message: expect.stringMatching(/^name: a dataset name is 1 to 128 letters/),
      });
    }
  });

  it("is for trainers; every role lists and reads datasets", async () => {
    const name = unique("roles");
    for (const token of [TOKENS.reader, TOKENS.producer]) {
      const refused = await push(name, jsonl(rows(1)), { token });
      expect(refused.status).toBe(403);
      expect((await errorOf(refused)).message).toMatch(/lacks the trainer role/);
    }
    expect(await keysOf(name)).toEqual([]);
    expect((await push(name, jsonl(rows(1)), { token: TOKENS.all })).status).toBe(201);
    for (const token of [TOKENS.reader, TOKENS.producer, TOKENS.trainer]) {
      const authorization = `Bearer ${token}`;
      expect((await api("/v1/datasets", { headers: { authorization } })).status).toBe(200);
      expect((await api(`/v1/datasets/${name}`, { headers: { authorization } })).status).toBe(200);
    }
  });

  it("streams a file far over the 1 MiB request limit, across several R2 parts", async () => {
    for (const target of [3 * 1024 * 1024, 2 * PART_BYTES + 1234]) {
      const name = unique("large");
      const padding = "x".repeat(200);
      const lines: string[] = [];
      for (let size = 0, i = 0; size < target; i++) {
        const line = JSON.stringify({ id: `big-${i}`, input: `${i} ${padding}` });
        lines.push(line);
        size += line.length + 1;
      }
      const bytes = encoder.encode(`${lines.join("\n")}\n`);
      const answer = await push(name, streamed(bytes));
      expect(answer.status).toBe(201);
      expect(await answer.json<PushedDataset>()).toMatchObject({
        bytes: bytes.byteLength,
        examples: lines.length,
        sha256: await sha256Of(bytes),
      });
      const back = await api(`/v1/datasets/${name}`);
      expect(await sha256Of(new Uint8Array(await back.arrayBuffer()))).toBe(await sha256Of(bytes));
    }
  });
});

describe("pushing to a taken name", () => {
  it("is a no-op with the same bytes, a 409 with others, and replaces them when asked", async () => {
    const name = unique("again");
    const first = encoder.encode(jsonl(rows(3)));
    const created = await (await push(name, first)).json<PushedDataset>();

    const same = await push(name, streamed(first, 7));
    expect(same.status).toBe(200);
    expect(await same.json<PushedDataset>()).toEqual({ ...created, result: "unchanged" });

    const other = encoder.encode(jsonl(rows(4)));
    const refused = await push(name, other);
    expect(refused.status).toBe(409);
    const error = await errorOf<{ existing: DatasetView; sha256: string }>(refused);
    expect(error.code).toBe("dataset_conflict");
    expect(error.message).toContain(`sha256 ${created.sha256}, 3 examples`);
    expect(error.message).toMatch(/push again with \?replace=true/);
    expect(error.details?.sha256).toBe(await sha256Of(other));
    expect((await listed(name))?.sha256).toBe(created.sha256);

    const replaced = await push(name, other, { query: "?replace=true" });
    expect(replaced.status).toBe(201);
    expect(await replaced.json<PushedDataset>()).toMatchObject({ examples: 4, result: "replaced" });
    expect((await listed(name))?.sha256).toBe(await sha256Of(other));
    const back = await api(`/v1/datasets/${name}`);
    expect(new Uint8Array(await back.arrayBuffer())).toEqual(other);
    // The replaced file is gone: the manifest and one file.
    expect(await keysOf(name)).toHaveLength(2);

    // Replacing with the same bytes stores nothing new.
    const again = await push(name, other, { query: "?replace=true" });
    expect((await again.json<PushedDataset>()).result).toBe("unchanged");
    expect(await keysOf(name)).toHaveLength(2);
  });

  it("a bad file under a taken name is refused for its lines, and the dataset stays", async () => {
    const name = unique("kept");
    const good = await (await push(name, jsonl(rows(2)))).json<PushedDataset>();
    const bad = await push(name, "{oops", { query: "?replace=true" });
    expect((await errorOf(bad)).code).toBe("invalid_dataset");
    expect(await listed(name)).toMatchObject({ sha256: good.sha256, examples: 2 });
    expect(await keysOf(name)).toHaveLength(2);
  });

  it("two pushes racing to a new name: the first to finish takes it, the other stores nothing", async () => {
    const name = unique("race");
    let slow!: ReadableStreamDefaultController<Uint8Array>;
    const held = push(
      name,
      new ReadableStream({
        start: (controller) => {
          slow = controller;
        },
      }),
    );
    slow.enqueue(encoder.encode(`${jsonl(rows(2, "slow"))}\n`));
    const fast = await push(name, jsonl(rows(3, "fast")));
    expect(fast.status).toBe(201);
    slow.close();
    const lost = await held;
    expect(lost.status).toBe(409);
    expect((await errorOf(lost)).message).toMatch(
      /another push to .* landed while this one streamed/,
    );
    expect((await listed(name))?.examples).toBe(3);
    expect(await keysOf(name)).toHaveLength(2);
  });

  it("a bad line deep in a large file aborts the parts already sent", async () => {
    const name = unique("late-bad");
    const line = JSON.stringify({ input: "z".repeat(1000) });
    const count = Math.ceil((PART_BYTES * 1.5) / line.length);
    const body = encoder.encode(`${Array(count).fill(line).join("\n")}\n{"input": 7}\n`);
    const error = await errorOf<{ line: number }[]>(await push(name, streamed(body)));
    expect(error.details?.map((d) => d.line)).toEqual([count + 1]);
    expect(await keysOf(name)).toEqual([]);
  });

  it("refuses a body over 100 MB, counted as it streams, and stores nothing", async () => {
    const name = unique("huge");
    const chunk = new Uint8Array(1024 * 1024).fill(0x78);
    let sent = 0;
    const body = new ReadableStream<Uint8Array>({
      pull(controller) {
        if (sent > MAX_DATASET_BYTES) return controller.close();
        controller.enqueue(chunk.slice());
        sent += chunk.byteLength;
      },
    });
    const answer = await push(name, body);
    expect(answer.status).toBe(413);
    expect(await errorOf(answer)).toMatchObject({
      code: "payload_too_large",
      message: expect.stringMatching(/over 100000000 bytes, the most one push may carry; split it/),
    });
    expect(await keysOf(name)).toEqual([]);
  });
});

describe("the TypeScript client", () => {
  const client = new EdgerollClient({
    baseUrl: BASE,
    token: TOKENS.trainer,
    fetch: (input, init) => exports.default.fetch(input, init),
  });

  it("pushes a stream and lists it; a refusal is an EdgerollError with the API's code", async () => {
    const name = unique("client");
    const bytes = encoder.encode(jsonl(rows(6)));
    const pushed = await client.pushDataset(name, streamed(bytes, 10));
    expect(pushed).toMatchObject({ name, examples: 6, sha256: await sha256Of(bytes) });
    expect((await client.listDatasets()).find((d) => d.name === name)?.bytes).toBe(
      bytes.byteLength,
    );
    expect((await client.pushDataset(name, bytes)).result).toBe("unchanged");
    const refused = await client.pushDataset(name, "{oops").catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(EdgerollError);
    expect(refused).toMatchObject({ status: 400, code: "invalid_dataset" });
  });
});
