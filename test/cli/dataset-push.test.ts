// `edgeroll dataset push | list` against a stand-in for the Worker that records what it was sent:
// a good file streamed as it is, under its name; a bad file named line by line and never sent.
// The Worker's side of a push, against real R2, is test/worker/datasets.test.ts's.
import { createHash } from "node:crypto";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { createServer, type IncomingHttpHeaders, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, beforeEach, describe, expect, it, vi } from "vitest";
import { datasetList, datasetPush, defaultDatasetName } from "../../src/cli/dataset-commands";
import type { DatasetView } from "../../src/client/edgeroll-client";

interface Received {
  method: string;
  url: string;
  headers: IncomingHttpHeaders;
  body: Buffer;
}

const dir = mkdtempSync(join(tmpdir(), "edgeroll-dataset-push-"));
let server: Server;
let url: string;
let received: Received[] = [];
const stored: DatasetView[] = [];

/** Answers as the Worker would for a sound file: its size, lines and digest. */
function pushedAnswer(name: string, body: Buffer) {
  const view: DatasetView = {
    name,
    bytes: body.byteLength,
    examples: body
      .toString("utf8")
      .split("\n")
      .filter((l) => l.trim() !== "").length,
    sha256: createHash("sha256").update(body).digest("hex"),
    uploaded_at: "2026-11-20T12:00:00.000Z",
  };
  stored.push(view);
  return { ...view, result: "created" };
}

beforeAll(async () => {
  server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on("data", (chunk: Buffer) => chunks.push(chunk));
    request.on("end", () => {
      const body = Buffer.concat(chunks);
      const path = new URL(request.url ?? "/", "http://x").pathname;
      if (path === "/healthz") return response.end("{}");
      received.push({
        method: request.method ?? "",
        url: request.url ?? "",
        headers: request.headers,
        body,
      });
      response.setHeader("content-type", "application/json");
      if (request.method === "GET") return response.end(JSON.stringify({ datasets: stored }));
      response.statusCode = 201;
      response.end(JSON.stringify(pushedAnswer(path.split("/").pop() ?? "", body)));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));
beforeEach(() => {
  received = [];
});

function file(name: string, text: string): string {
  const path = join(dir, name);
  writeFileSync(path, text);
  return path;
}

async function printed(run: () => Promise<void>): Promise<string> {
  const log = vi.spyOn(console, "log").mockImplementation(() => {});
  try {
    await run();
    return log.mock.calls.map((call) => call.join(" ")).join("\n");
  } finally {
    log.mockRestore();
  }
}

describe("edgeroll dataset push", () => {
  it("streams the file as it is, under its own name, and prints what was stored", async () => {
    const text = `${Array.from({ length: 4 }, (_, i) => JSON.stringify({ id: `m-${i}`, input: `${i}+${i}?` })).join("\n")}\n`;
    const path = file("math-train.jsonl", text);
    const out = await printed(() => datasetPush(path, { url, token: "secret-token" }));
    expect(received).toHaveLength(1);
    const [push] = received as [Received];
    expect(push.method).toBe("POST");
    expect(push.url).toBe("/v1/datasets/math-train");
    expect(push.headers["content-type"]).toBe("application/x-ndjson");
    expect(push.headers.authorization).toBe("Bearer secret-token");
    // Streamed as read, with no length declared up front.
    expect(push.headers["transfer-encoding"]).toBe("chunked");
    expect(push.body.equals(readFileSync(path))).toBe(true);
    const sha256 = createHash("sha256").update(text).digest("hex");
    expect(out).toBe(
      [
        'pushed dataset "math-train"',
        "  examples  4",
        `  bytes     ${Buffer.byteLength(text)}`,
        `  sha256    ${sha256}`,
      ].join("\n"),
    );
  });

  it("takes --name and --replace", async () => {
    const path = file("x.jsonl", '{"input": "a"}\n');
    await printed(() => datasetPush(path, { url, token: "t", name: "custom.v2", replace: true }));
    expect(received.map((r) => r.url)).toEqual(["/v1/datasets/custom.v2?replace=true"]);
  });

  it("names the bad lines, as the Worker would, and sends nothing", async () => {
    const path = file(
      "broken.jsonl",
      ['{"input": "1"}', '{"input": "2"}', "{oops", '{"input": "4"}', '{"id": "e"}'].join("\n"),
    );
    const push = datasetPush(path, { url, token: "t" });
    await expect(push).rejects.toThrow(/has 2 bad lines, so nothing was pushed/);
    await expect(push).rejects.toThrow(`${path}:3: not valid JSON`);
    await expect(push).rejects.toThrow(new RegExp(`${path}:5 \\(id "e"\\): input: `));
    expect(received).toEqual([]);
  });

  it("refuses a name the Worker would refuse, and a file of blank lines", async () => {
    await expect(datasetPush(file(".hidden.jsonl", '{"input": "a"}'), { url })).rejects.toThrow(
      /"\.hidden" is not a dataset name: a dataset name is 1 to 128 letters.*; pass --name/,
    );
    await expect(datasetPush(file("blank.jsonl", "\n\n"), { url })).rejects.toThrow(
      /has no examples/,
    );
    expect(received).toEqual([]);
  });

  it("names a dataset after its file", () => {
    expect(defaultDatasetName("datasets/gsm8k.jsonl")).toBe("gsm8k");
    expect(defaultDatasetName("/data/math.v2.ndjson")).toBe("math.v2");
    expect(defaultDatasetName("prompts")).toBe("prompts");
  });
});

describe("edgeroll dataset list", () => {
  it("prints the datasets as a table, or as JSON", async () => {
    const table = await printed(() => datasetList({ url, token: "t" }));
    expect(table).toMatch(/name\s+│\s+bytes\s+│\s+examples\s+│\s+sha256\s+│\s+uploaded_at/);
    expect(table).toContain("math-train");
    const json = await printed(() => datasetList({ url, token: "t", json: true }));
    expect(JSON.parse(json)).toEqual(stored);
  });
});
