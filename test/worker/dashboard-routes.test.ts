import { listDurableObjectIds, runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { color } from "../../src/dashboard/charts";
import { api, guessExample, startGroup, waitForGroup } from "./helpers";

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

describe("the dashboard's series colours", () => {
  it("give forty runs forty colours, not a palette that repeats after eight", () => {
    const colours = Array.from({ length: 40 }, (_, i) => color(i));
    expect(new Set(colours).size).toBe(40);
    expect(colours.slice(0, 8)).toContain("#2563eb");
  });
});
