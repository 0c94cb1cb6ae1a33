/** Routes for rollout groups and their episodes. */
import { zValidator } from "@hono/zod-validator";
import { Hono } from "hono";
import { configFrom } from "../config";
import { readRunPolicy } from "../db/run-policies";
import { checkSharedTokenizer, type TokenizerProblem } from "../distill/tokenizer-check";
import { environmentsOf } from "../env-workers/environments";
import {
  environmentNames,
  isRegisteredEnvironment,
  loadEnvironment,
  type RemoteEnvironments,
} from "../environments/registry";
import { RemoteEnvError } from "../environments/remote/client";
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
import {
  ExampleRejectedError,
  episodeTools,
  errorMessage,
  openEpisode,
  type ToolDefinition,
  turnBudget,
} from "../sdk";
import { findGroupView } from "../views/group-view";
import { startedGroupView } from "../views/responses";
import { ApiError, invalidRequest } from "./errors";

/** Built-in or configured remote (REMOTE_ENVS): callers name environments, never URLs. */
function checkEnvironment(name: string, remote: RemoteEnvironments): void {
  if (isRegisteredEnvironment(name, remote)) return;
  const message = `unknown environment "${name}" (registered: ${environmentNames(remote).join(", ")})`;
  throw new ApiError(400, "invalid_request", `env: ${message}`, [{ path: "env", message }]);
}

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
 * current one; one that names a version more than the run's `max_lag` behind is refused, as
 * its episodes would be stale before they start.
 */
async function withRunPolicy(
  db: D1Database,
  asked: AskedGroupRequest,
): Promise<{ request: StartGroupRequest; policy: KnownPolicy | null }> {
  const policy = await readRunPolicy(db, asked.run_id);
  const request = withPolicyVersion(asked, policy?.version ?? null);
  if (policy !== null && beyondMaxLag(policy, request.policy_version))
    throw new ApiError(
      409,
      "policy_too_stale",
      `policy_version: ${request.policy_version} is ${policy.version - request.policy_version} versions behind run "${asked.run_id}"'s ${policy.version}, more than its max_lag of ${policy.maxLag}`,
    );
  return { request, policy: policy === null ? null : knownPolicy(policy) };
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

/**
 * The environment's refusal of an example, as the API answers it: each field by its path in the
 * request body (`example.metadata.secret`), in the message and in `details`, as `invalid_request`
 * names them.
 */
function exampleRejected(env: string, error: unknown): ApiError {
  const rejected = `environment "${env}" rejected the example`;
  if (!(error instanceof ExampleRejectedError))
    return new ApiError(422, "example_rejected", `${rejected}: ${errorMessage(error)}`);
  const details = error.problems.map((p) => ({
    path: p.path === "" ? "example" : `example.${p.path}`,
    message: p.message,
  }));
  const fields = details.map((d) => `${d.path}: ${d.message}`).join("; ");
  return new ApiError(422, "example_rejected", `${rejected}: ${fields}`, details);
}

/**
 * The environment must accept the example before anything is stored: its example schema, then
 * its opening, turn budget and tools.
 */
async function openExample(request: StartGroupRequest, remote: RemoteEnvironments): Promise<void> {
  const env = loadEnvironment(request.env, remote);
  let tools: ToolDefinition[] | null;
  try {
    await openEpisode(env, request.example, request.prompt_text);
    turnBudget(env, request.example);
    tools = await episodeTools(env, request.example);
  } catch (error) {
    // A remote environment that cannot answer has not rejected anything: try again later.
    if (error instanceof RemoteEnvError && error.reason !== "failed")
      throw new ApiError(
        503,
        "environment_unavailable",
        `environment "${request.env}": ${error.message}`,
      );
    throw exampleRejected(request.env, error);
  }
  checkNativeTools(request, tools);
}

export const groupRoutes = new Hono<{ Bindings: Env }>()
  .post(
    "/groups",
    zValidator("json", StartGroupRequestSchema, (result) => {
      if (!result.success) throw invalidRequest(result.error);
    }),
    async (c) => {
      const asked = c.req.valid("json");
      const key = c.req.header("idempotency-key") ?? null;
      if (key !== null && !IDEMPOTENCY_KEY.test(key)) {
        throw new ApiError(
          400,
          "invalid_request",
          "Idempotency-Key: 1 to 255 printable ASCII characters",
        );
      }
      const { request, policy } = await withRunPolicy(c.env.DB, asked);
      const remote = environmentsOf(c.env);
      checkEnvironment(request.env, remote);
      await openExample(request, remote);
      if (request.teacher !== undefined) {
        const check = await checkSharedTokenizer(
          configFrom(c.env),
          request.sampling.model,
          request.teacher.model,
        );
        if (!check.ok) throw tokenizerRefusal(check);
      }
      const spec = await newGroupSpec(request, key, asked);
      const started = await rolloutGroup(c.env, spec.groupId).start(spec, policy);
      if (started.outcome === "conflict") {
        throw new ApiError(
          409,
          "idempotency_conflict",
          "Idempotency-Key was already used with a different request body",
        );
      }
      return c.json(startedGroupView(spec.groupId, started.outcome === "created"), 202);
    },
  )
  .get("/groups/:id", async (c) => {
    const id = c.req.param("id");
    const group = await findGroupView(c.env, id);
    if (group === null) throw new ApiError(404, "not_found", `no group ${id}`);
    return c.json(group);
  });
