/**
 * Whether an environment can play an example, asked before anything is stored: by POST
 * /v1/groups for its one example, and by POST /v1/environments/:name/validate for a whole
 * dataset before a job starts any of it. Its example schema, then its opening, turn budget and
 * tools; a refusal names each field by its path in a group request (`example.metadata.secret`).
 */
import {
  environmentNames,
  isRegisteredEnvironment,
  loadEnvironment,
  type RemoteEnvironments,
} from "../environments/registry";
import { RemoteEnvError } from "../environments/remote/client";
import {
  ExampleRejectedError,
  episodeTools,
  errorMessage,
  openEpisode,
  type TaskExample,
  type ToolDefinition,
  turnBudget,
} from "../sdk";
import { ApiError } from "./errors";

/** `unknown environment "x" (registered: a, b, c)`: what every refusal of a name says. */
export function unknownEnvironment(name: string, remote: RemoteEnvironments): string {
  return `unknown environment "${name}" (registered: ${environmentNames(remote).join(", ")})`;
}

/** Built-in or configured remote (REMOTE_ENVS): callers name environments, never URLs. */
export function checkEnvironmentName(name: string, remote: RemoteEnvironments): void {
  if (isRegisteredEnvironment(name, remote)) return;
  const message = unknownEnvironment(name, remote);
  throw new ApiError(400, "invalid_request", `env: ${message}`, [{ path: "env", message }]);
}

/** The environment's refusal of an example, as a 422 naming each field by its path. */
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
 * Opens the example as a group would; returns the tools its episodes offer (null: none). A
 * refusal is a 422 `example_rejected`; a remote environment that cannot answer has refused
 * nothing, and is a 503 `environment_unavailable` to retry.
 */
export async function acceptExample(
  envName: string,
  example: TaskExample,
  promptText: string,
  remote: RemoteEnvironments,
): Promise<ToolDefinition[] | null> {
  const env = loadEnvironment(envName, remote);
  try {
    await openEpisode(env, example, promptText);
    turnBudget(env, example);
    return await episodeTools(env, example);
  } catch (error) {
    if (error instanceof RemoteEnvError && error.reason !== "failed")
      throw new ApiError(
        503,
        "environment_unavailable",
        `environment "${envName}": ${error.message}`,
      );
    throw exampleRejected(envName, error);
  }
}
