import { listDurableObjectIds, runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { color } from "../../src/dashboard/charts";
import { api, d1, guessExample, itemAt, post, startGroup, TOKENS, waitForGroup } from "./helpers";

const objects = async () => (await listDurableObjectIds(env.ROLLOUT_GROUP)).length;

describe("the dashboard's group page", () => {
  it("answers 404 for an id that cannot be a group, without creating an object", async () => {
    const before = await objects();
    for (const id of ["anything", "g_", "g_../../etc", "%00"]) {
      const page = await api(`/groups/${id}`);
      expect(page.status, id).toBe(404);
      expect(await page.text()).toContain("<h1>Not found</h1>");
    }
    expect(await objects()).toBe(before);
  });

  it("answers 404 for a well-formed id no group has; the object it asks stores nothing", async () => {
    // Only the group's object knows whether it runs (D1 may not have heard of it yet), so a
    // well-formed id is asked; asking writes nothing there.
    const id = `g_${"0".repeat(23)}`;
    const page = await api(`/groups/${id}`);
    expect(page.status).toBe(404);
    const stub = env.ROLLOUT_GROUP.get(env.ROLLOUT_GROUP.idFromName(id));
    const tables = await runInDurableObject(stub, (_instance, state) =>
      state.storage.sql
        .exec(
          "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE '\\_cf\\_%' ESCAPE '\\'",
        )
        .toArray(),
    );
    expect(tables).toEqual([]);
  });

  it("shows a group the API shows, running or landed", async () => {
    const id = await startGroup({
      env: "guess-number",
      example: guessExample("dash-page", 61),
      group_size: 2,
      sampling: { model: "sim", temperature: 0 },
    });
    await waitForGroup(id);
    const page = await api(`/groups/${id}`);
    expect(page.status).toBe(200);
    expect(await page.text()).toContain(id);
  });
});

describe("the overview's Costs panel", () => {
  it("shows a run's landed sampled tokens, as its episodes sum them, and its budget", async () => {
    const run = `dash-costs-${crypto.randomUUID().slice(0, 8)}`;
    const id = await startGroup({
      env: "guess-number",
      example: guessExample(`${run}-guess`, 42),
      group_size: 2,
      run_id: run,
      sampling: { model: "sim", temperature: 0 },
    });
    const budget = await post(
      `/v1/runs/${run}/budget`,
      { max_sampled_tokens: 1_000_000 },
      { authorization: `Bearer ${TOKENS.trainer}` },
    );
    expect(budget.status).toBe(200);
    expect((await waitForGroup(id)).status).toBe("landed");

    const [sum] = await d1<{ sampled: number }>(
      "SELECT SUM(completion_tokens) AS sampled FROM episodes WHERE run_id = ?",
      run,
    );
    const sampled = sum?.sampled ?? 0;
    expect(sampled).toBeGreaterThan(0);
    const tokens = (n: number) => n.toLocaleString("en-US");

    const page = await api(`/?run=${run}`);
    expect(page.status).toBe(200);
    const html = await page.text();
    const table = html.slice(html.indexOf('<table data-testid="costs">'));
    const row = itemAt(
      table
        .slice(0, table.indexOf("</table>"))
        .split("<tr")
        .filter((tr) => tr.includes(`>${run}</a>`)),
    );
    expect(row).toContain(`<td class="num">${tokens(sampled)}</td>`);
    const share = Math.min(99, Math.round((sampled / 1_000_000) * 100));
    expect(row).toContain(`sampled ${tokens(sampled)} / 1,000,000 (${share}%)`);
    expect(row).not.toContain("exhausted");
    expect(html).toContain("Landed groups; GET /v1/runs/:id adds those in flight");
  });
});

describe("the dashboard's series colours", () => {
  it("give forty runs forty colours, not a palette that repeats after eight", () => {
    const colours = Array.from({ length: 40 }, (_, i) => color(i));
    expect(new Set(colours).size).toBe(40);
    expect(colours.slice(0, 8)).toContain("#2563eb");
  });
});
