// One pacing rule (src/policy/pacing.ts): GET /v1/runs/:id leaves a run's unleased groups more
// than max_lag behind out of `pacing.unleased`, and the SQL view that mirrors the rule,
// run_policy_state, counts the same groups as its `groups_unleased`.
import { env } from "cloudflare:workers";
import { drizzle } from "drizzle-orm/d1";
import { beforeAll, describe, expect, it } from "vitest";
import type { RunProgress } from "../../src/client/edgeroll-client";
import { groups } from "../../src/db/schema";
import { d1, getJson, postPolicy } from "./helpers";

const RUN = "pacing-mirror";

/** A landed group waiting for the trainer, sampled at `version`, written straight to D1. */
function landed(n: number, version: number): typeof groups.$inferInsert {
  const now = new Date().toISOString();
  return {
    id: `${RUN}-${n}`,
    runId: RUN,
    env: "guess-number",
    exampleId: `ex-${n}`,
    example: { id: `ex-${n}`, input: "a number" },
    policyVersion: version,
    groupSize: 2,
    status: "landed",
    creditAssignment: "per_episode",
    advantage: "mean",
    warnings: [],
    sampling: { model: "sim" },
    maxContextTokens: 4096,
    promptText: "",
    requestHash: `hash-${n}`,
    createdAt: now,
    finishedAt: now,
  };
}

beforeAll(async () => {
  await drizzle(env.DB)
    .insert(groups)
    .values([landed(1, 1), landed(2, 2), landed(3, 2), landed(4, 4)]);
});

async function unleased(): Promise<{ api: number; sql: number }> {
  const run = await getJson<RunProgress>(`/v1/runs/${RUN}`);
  const [row] = await d1<{ groups_unleased: number }>(
    "SELECT groups_unleased FROM run_policy_state WHERE run_id = ?",
    RUN,
  );
  return { api: run.pacing.unleased, sql: row?.groups_unleased ?? Number.NaN };
}

describe("pacing, in the API and in SQL", () => {
  it("counts the same unleased groups within max_lag as the policy moves", async () => {
    const steps: [object, number][] = [
      [{ version: 4 }, 4], // no limit: every version counts
      [{ version: 4, max_lag: 2 }, 3], // 2 and newer
      [{ version: 5, max_lag: 1 }, 1], // 4 and newer
      [{ version: 6, max_lag: 0 }, 0], // only 6
    ];
    for (const [policy, expected] of steps) {
      expect((await postPolicy(RUN, policy)).status).toBe(200);
      expect(await unleased()).toEqual({ api: expected, sql: expected });
    }
  });

  it("says so in the view's own text, where a SQL user reads it", async () => {
    const [view] = await d1<{ sql: string }>(
      "SELECT sql FROM sqlite_master WHERE name = 'run_policy_state'",
    );
    expect(view?.sql).toContain("Mirrors src/policy/pacing.ts");
  });
});
