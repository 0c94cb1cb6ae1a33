/**
 * The inference fleet as the fleet scheduler sees it (`GET /v1/hosts`), and a trainer's rolling
 * weight sync (`POST /v1/hosts`): pause one host, let its generations finish, load the new
 * weights, then record the version it serves and resume it, while the rest keep generating.
 */
import { Hono } from "hono";
import { type HostsView, HostUpdateSchema } from "../fleet/hosts-wire";
import { askEach } from "../policy/fan-out";
import { fleetScheduler, rolloutGroup } from "../rollout/bindings";
import type { AuthVariables } from "./auth";
import { ApiError } from "./errors";
import { validated } from "./validated";

export const hostRoutes = new Hono<{ Bindings: Env; Variables: AuthVariables }>()
  .get("/hosts", async (c) => {
    const view: HostsView = { hosts: await fleetScheduler(c.env).hosts() };
    return c.json(view);
  })
  .post("/hosts", validated("json", HostUpdateSchema), async (c) => {
    const body = c.req.valid("json");
    const fleet = fleetScheduler(c.env);
    const host = await fleet.setHost(body.url, {
      paused: body.paused,
      policyVersion: body.policy_version,
    });
    if (host === null) {
      const known = (await fleet.hosts()).map((h) => h.url).join(", ");
      throw new ApiError(
        404,
        "not_found",
        `url: "${body.url}" is not a host of the fleet (INFERENCE_BASE_URL or INFERENCE_HOSTS): ${known}`,
      );
    }
    if (body.interrupt !== true) return c.json({ host });
    // The groups with episodes on it abort what they have in flight there, before the answer.
    const interrupted = await askEach(await fleet.groupsOn(host.url), (groupId) =>
      rolloutGroup(c.env, groupId).hostInterrupted(host.url),
    );
    return c.json({ host, in_flight_generations: interrupted.inFlight });
  });
