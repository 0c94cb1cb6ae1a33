import { exports } from "cloudflare:workers";
import { describe, expect, it } from "vitest";

describe("the Worker", () => {
  it("answers health checks", async () => {
    const response = await exports.default.fetch("http://edgeroll.test/healthz");
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({ ok: true });
  });

  it("lists the registered environments", async () => {
    const response = await exports.default.fetch("http://edgeroll.test/v1/environments");
    expect(await response.json()).toEqual({
      environments: expect.arrayContaining(["exact-answer", "guess-number", "tool-agent"]),
    });
  });
});
