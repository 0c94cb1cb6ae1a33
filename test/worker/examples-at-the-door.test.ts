// Every registered environment (the built-ins, the test fixtures, and the remote ones these
// tests configure in REMOTE_ENVS) refuses an example it cannot play with a 422 that names the
// fields, before anything is stored: no D1 row, no group object, no token object.
import "../../fixtures/register";
import { listDurableObjectIds } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { environmentsOf } from "../../src/env-workers/environments";
import { environmentNames, loadEnvironment } from "../../src/environments/registry";
import { exampleProblems, type TaskExample } from "../../src/sdk";
import { errorOf, type FieldProblems, postGroup } from "./helpers";
import { isTestEnvironment } from "./test-environments";

const remote = environmentsOf(env);

/** As a new user would try it: the tool-agent request with nothing the environment reads. */
const bare = (name: string): TaskExample => ({
  id: `door-${name}`,
  input: "Please refund my last order.",
  metadata: {},
});

/** The fields each refusal must name, where the environment is known here. */
const FIELDS: Record<string, string[]> = {
  "exact-answer": ["example.output"],
  "guess-number": ["example.metadata.secret"],
  "guess-number-remote": ["example.metadata.secret"],
  "mental-math": ["example.metadata.questions"],
  chaos: ["example.metadata.secret", "example.metadata.chaos"],
  ...Object.fromEntries(
    ["tool-agent", "tool-agent-native", "tool-agent-native-remote", "silent-tools"].map((name) => [
      name,
      ["example.metadata.customer", "example.metadata.orders", "example.metadata.goal"],
    ]),
  ),
};

/** Plays an example without metadata by design: every field has a default (a 50-turn run). */
const PLAYABLE_WITHOUT_METADATA = new Set(["marathon"]);
/** Configured where nothing listens: it cannot be asked, so the API says try again (503). */
const UNREACHABLE = new Set(["remote-down"]);

async function stored() {
  const row = await env.DB.prepare("SELECT COUNT(*) AS n FROM groups").first<{ n: number }>();
  return {
    groupRows: row?.n ?? 0,
    groupObjects: (await listDurableObjectIds(env.ROLLOUT_GROUP)).length,
    tokenObjects: (await env.TOKENS.list()).objects.length,
  };
}

describe("an example an environment cannot play is refused at the door", () => {
  const names = environmentNames(remote).filter((name) => !isTestEnvironment(name));

  it("walks the built-ins, the fixtures and the configured remote environments", () => {
    expect(names).toEqual(expect.arrayContaining([...Object.keys(FIELDS), "marathon"]));
    expect(names).toEqual(expect.arrayContaining([...UNREACHABLE]));
  });

  for (const name of names) {
    if (PLAYABLE_WITHOUT_METADATA.has(name)) {
      it(`${name} plays an example with no metadata (its schema's defaults)`, () => {
        const env = loadEnvironment(name, remote);
        expect(env.exampleSchema).toBeDefined();
        expect(exampleProblems(env, bare(name))).toEqual([]);
      });
      continue;
    }
    it(`${name}: ${UNREACHABLE.has(name) ? "503, nothing asked" : "422 naming the fields"}, nothing stored`, async () => {
      const before = await stored();
      const response = await postGroup({
        env: name,
        example: bare(name),
        group_size: 2,
        sampling: { model: "sim", temperature: 0 },
      });
      const error = await errorOf<FieldProblems>(response);
      const details = error.details ?? [];
      expect(await stored()).toEqual(before);
      if (UNREACHABLE.has(name)) {
        expect({ status: response.status, code: error.code }).toEqual({
          status: 503,
          code: "environment_unavailable",
        });
        return;
      }
      expect({ status: response.status, code: error.code }).toEqual({
        status: 422,
        code: "example_rejected",
      });
      expect(error.message).toMatch(new RegExp(`^environment "${name}" rejected the example: `));
      expect(details.length).toBeGreaterThan(0);
      for (const detail of details) {
        expect(detail).toEqual({
          path: expect.stringMatching(/^example\./),
          message: expect.any(String),
        });
        expect(error.message).toContain(`${detail.path}: ${detail.message}`);
      }
      const expected = FIELDS[name];
      if (expected !== undefined)
        expect(details.map((d) => d.path).sort()).toEqual([...expected].sort());
    });
  }

  it("names a field that is there but wrong: a goal order the customer does not have", async () => {
    const wrong = await postGroup({
      env: "tool-agent",
      example: {
        id: "door-wrong-order",
        input: "Refund order B, please.",
        metadata: {
          customer: { name: "Ana", email: "ana@example.com", zip: "94107" },
          orders: [{ id: "A", item: "lamp", status: "delivered", total: 10 }],
          goal: { tool: "refund_order", order_id: "B" },
        },
      },
      group_size: 2,
      sampling: { model: "sim" },
    });
    expect(wrong.status).toBe(422);
    expect((await errorOf(wrong)).details).toEqual([
      {
        path: "example.metadata.goal.order_id",
        message: "must be the id of one of metadata.orders",
      },
    ]);
  });
});
