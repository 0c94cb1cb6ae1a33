// Property-based tests against the Worker: no request body crashes it (no 5xx), and a refused
// request stores nothing.
import { listDurableObjectIds } from "cloudflare:test";
import { env } from "cloudflare:workers";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { api } from "./helpers";

const valid = {
  env: "exact-answer",
  example: { id: "fuzz", input: "What is 1 + 1?", output: "2" },
  group_size: 2,
  sampling: { model: "sim", temperature: 0 },
};

async function stored(): Promise<number> {
  const row = await env.DB.prepare("SELECT COUNT(*) AS n FROM groups").first<{ n: number }>();
  return (row?.n ?? 0) + (await listDurableObjectIds(env.ROLLOUT_GROUP)).length;
}

async function post(path: string, body: string) {
  return api(path, { method: "POST", headers: { "content-type": "application/json" }, body });
}

/** A valid request with one field replaced by anything, or dropped, or one field added. */
const mutated = fc.oneof(
  fc
    .record({
      key: fc.constantFrom(...Object.keys(valid), "sampling.model", "example.id", "example.input"),
      value: fc.jsonValue(),
    })
    .map(({ key, value }) => {
      const body: Record<string, unknown> = structuredClone(valid);
      const [outer, inner] = key.split(".") as [string, string | undefined];
      if (inner === undefined) body[outer] = value;
      else (body[outer] as Record<string, unknown>)[inner] = value;
      return JSON.stringify(body);
    }),
  fc.constantFrom(...Object.keys(valid)).map((key) => {
    const body: Record<string, unknown> = structuredClone(valid);
    delete body[key];
    return JSON.stringify(body);
  }),
  fc
    .tuple(fc.string({ minLength: 1, maxLength: 12 }), fc.jsonValue())
    .map(([key, value]) => JSON.stringify({ ...valid, [`x_${key}`]: value })),
);

describe("fuzzing the request schemas", () => {
  it("POST /v1/groups: any JSON or text is answered without a 5xx, and a refusal stores nothing", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.oneof(
          mutated,
          fc.jsonValue().map((v) => JSON.stringify(v)),
          fc.string(),
        ),
        async (body) => {
          const before = await stored();
          const response = await post("/v1/groups", body);
          expect(response.status).toBeLessThan(500);
          const json = (await response.json()) as { error?: { code: string; message: string } };
          if (response.status >= 400) {
            expect(json.error?.message.length).toBeGreaterThan(0);
            expect(await stored()).toBe(before);
          }
        },
      ),
      { numRuns: 150 },
    );
  });

  it("POST /v1/batches/lease: any JSON is answered without a 5xx", async () => {
    const field = fc.constantFrom(
      "max_groups",
      "max_episodes",
      "run_id",
      "lease_seconds",
      "include",
      "max_policy_lag",
      "current_policy_version",
      "skip_uniform_groups",
    );
    await fc.assert(
      fc.asyncProperty(
        fc.oneof(fc.dictionary(field, fc.jsonValue()), fc.jsonValue()),
        async (value) => {
          const response = await post("/v1/batches/lease", JSON.stringify(value));
          expect(response.status).toBeLessThan(500);
        },
      ),
      { numRuns: 150 },
    );
  });
});
