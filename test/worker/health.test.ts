import { exports } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { api } from "./helpers";

describe("the Worker", () => {
  it("answers health checks without a token", async () => {
    const response = await exports.default.fetch("http://edgeroll.test/healthz");
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({ ok: true });
  });

  it("lists the registered environments", async () => {
    const response = await api("/v1/environments");
    expect(await response.json()).toEqual({
      environments: expect.arrayContaining([
        "exact-answer",
        "judged-answer",
        "guess-number",
        "tool-agent",
        "tool-agent-native",
      ]),
      // test/setup/remote-env-host.ts configures these (REMOTE_ENVS), in their order
      remote: [
        "guess-number-remote",
        "tool-agent-native-remote",
        "rubric-quiz-remote",
        "remote-down",
      ],
    });
  });
});
