/** Routes for rollout groups and their episodes. */
import { Hono } from "hono";
import { configFrom } from "../config";
import { readRunPolicy } from "../db/run-policies";
import { checkSharedTokenizer, type TokenizerProblem } from "../distill/tokenizer-check";
import { environmentsOf } from "../env-workers/environments";
import type { RemoteEnvironments } from "../environments/registry";
import { RemoteEnvError } from "../environments/remote/client";
import { environmentVersion } from "../environments/versions";
import { type KnownPolicy, knownPolicy } from "../policy/known-policy";
import { beyondMaxLag } from "../policy/lag";
import { rolloutGroup } from "../rollout/bindings";
import { newGroupSpec } from "../rollout/group-ids";
import {
  type AskedGroupRequest,
  type StartGroupRequest,
  StartGroupRequestSchema,
  withPolicyVersion,
} from "../rollout/group-spec";
import type { ToolDefinition } from "../sdk";
import { findGroupView } from "../views/group-view";
import { startedGroupView } from "../views/responses";
import type { AuthVariables } from "./auth";
import { ApiError } from "./errors";
import { acceptExample, checkEnvironmentName } from "./example-check";
import { admitStart, capRefusal } from "./start-limits";
import { validated } from "./validated";

const IDEMPOTENCY_KEY = /^[\x21-\x7e]{1,255}$/;

/**
 * The seed's rules for native tool-calling environments: GRPO-only, without per-turn credit,
 * and on the chat endpoint, the only one where the host parses tool calls.
 */
function checkNativeTools(request: StartGroupRequest, tools: readonly ToolDefinition[] | null) {
  if (tools === null) return;
  const refuse = (path: string, message: string) => {
    throw new ApiError(400, "invalid_request", `${path}: ${message}`, [{ path, message }]);
  };
  const env = `environment "${request.env}" calls tools natively`;
  if (request.credit_assignment === "per_turn")
    refuse(
      "credit_assignment",
      `per_turn credit is rejected for native tool-calling environments (${env})`,
    );
  if (request.algorithm === "opd")
    refuse(
      "algorithm",
      `native tool-calling environments are GRPO-only: "opd" is refused (${env})`,
    );
  if (request.generation === "tokens")
    refuse(
      "generation",
      `the host parses tool calls only on the chat endpoint: "tokens" is refused for native tool-calling environments (${env})`,
    );
}

/**
 * The request with the run's policy: a group that names no `policy_version` takes the run's
 * current one; a training group that names a version more than the run's `max_lag` behind is
 * refused, as its episodes would be stale before they start (an evaluation may name any).
 */
async function withRunPolicy(
  db: D1Database,
  asked: AskedGroupRequest,
): Promise<{ request: StartGroupRequest; policy: KnownPolicy | null }> {
  const policy = await readRunPolicy(db, asked.run_id);
  const request = withPolicyVersion(asked, policy?.version ?? null);
  if (request.kind === "train" && policy !== null && beyondMaxLag(policy, request.policy_version))
    throw new ApiError(
      409,
      "policy_too_stale",
      `policy_version: ${request.policy_version} is ${policy.version - request.policy_version} versions behind run "${asked.run_id}"'s ${policy.version}, more than its max_lag of ${policy.maxLag}`,
    );
  return { request, policy: policy === null ? null : knownPolicy(policy) };
}

/** A request whose `env_version` is the environment's declared one. */
type VersionedRequest = StartGroupRequest & { env_version: string };

/**
 * The request with the version its environment declares: a group that pins another is a 409
 * naming both (`pinnedBy` says whose pin), so a run never mixes two sets of rules unnoticed; one
 * that pins none records the declared one. A remote environment that does not answer `/info` is
 * a 503.
 */
async function withEnvVersion(
  request: StartGroupRequest,
  remote: RemoteEnvironments,
  pinnedBy: "group" | "producer",
): Promise<VersionedRequest> {
  const { env, env_version: pinned } = request;
  const declared = await environmentVersion(env, remote).catch((error: unknown) => {
    if (error instanceof RemoteEnvError)
      throw new ApiError(
        503,
        "environment_unavailable",
        `environment "${env}": /info: ${error.message}`,
      );
    throw error;
  });
  if (pinned !== undefined && pinned !== declared)
    throw new ApiError(
      409,
      "env_version_mismatch",
      `env_version: the ${pinnedBy} pins "${pinned}" but environment "${env}" is at version "${declared}"`,
    );
  return { ...request, env_version: declared };
}

/** A tokenizer check that did not pass, as the API refuses the group: a 400, or a 503 to retry. */
function tokenizerRefusal(check: TokenizerProblem): ApiError {
  switch (check.kind) {
    case "mismatch":
      return new ApiError(400, "tokenizer_mismatch", check.message);
    case "refused":
      return new ApiError(400, "invalid_request", check.message);
    case "unavailable":
      return new ApiError(503, "tokenizer_check_unavailable", check.message);
  }
}

/** The example must be one the environment plays, with tools the request allows. */
async function openExample(request: StartGroupRequest, remote: RemoteEnvironments): Promise<void> {
  const tools = await acceptExample(request.env, request.example, request.prompt_text, remote);
  checkNativeTools(request, tools);
}

/**
 * Every check a group's start makes before anything is stored: the run's policy filled in (and
 * its max_lag), the environment's name and version (`pinnedBy` says whose pin a mismatch names),
 * the example and its tools, and a teacher's tokenizer. Refusals are ApiErrors (4xx, or a 503 to
 * retry). A run's producer asks it of its first example before it starts producing.
 */
export async function checkGroupStart(
  env: Env,
  asked: AskedGroupRequest,
  pinnedBy: "group" | "producer" = "group",
): Promise<{ request: VersionedRequest; policy: KnownPolicy | null }> {
  const run = await withRunPolicy(env.DB, asked);
  const remote = environmentsOf(env);
  checkEnvironmentName(run.request.env, remote);
  const request = await withEnvVersion(run.request, remote, pinnedBy);
  await openExample(request, remote);
  if (request.teacher !== undefined) {
    const check = await checkSharedTokenizer(
      configFrom(env),
      request.sampling.model,
      request.teacher.model,
    );
    if (!check.ok) throw tokenizerRefusal(check);
  }
  return { request, policy: run.policy };
}

/**
 * Starts a group as `POST /v1/groups` does, for the route and for a run's producer: checked,
 * then admitted by the run's budget and the starting token's quota (`principal`).
 */
export async function startGroup(
  env: Env,
  asked: AskedGroupRequest,
  key: string | null,
  principal: string | null,
): Promise<{ groupId: string; created: boolean }> {
  const { request, policy } = await checkGroupStart(env, asked);
  const spec = await newGroupSpec(request, key, asked, principal);
  const caps = await admitStart(env, spec, key !== null);
  const started = await rolloutGroup(env, spec.groupId).start(spec, policy, caps);
  if (started.outcome === "over_quota" || started.outcome === "over_max_groups")
    throw capRefusal(started.outcome, spec.request.run_id, caps);
  if (started.outcome === "conflict") {
    throw new ApiError(
      409,
      "idempotency_conflict",
      "Idempotency-Key was already used with a different request body",
    );
  }
  return { groupId: spec.groupId, created: started.outcome === "created" };
}

export const groupRoutes = new Hono<{ Bindings: Env; Variables: AuthVariables }>()
  .post("/groups", validated("json", StartGroupRequestSchema), async (c) => {
    const key = c.req.header("idempotency-key") ?? null;
    if (key !== null && !IDEMPOTENCY_KEY.test(key)) {
      throw new ApiError(
        400,
        "invalid_request",
        "Idempotency-Key: 1 to 255 printable ASCII characters",
      );
    }
    const started = await startGroup(c.env, c.req.valid("json"), key, c.get("principal"));
    return c.json(startedGroupView(started.groupId, started.created), 202);
  })
  .get("/groups/:id", async (c) => {
    const id = c.req.param("id");
    const group = await findGroupView(c.env, id);
    if (group === null) throw new ApiError(404, "not_found", `no group ${id}`);
    return c.json(group);
  });
