/** The environments a Worker can run: the built-ins and the deployment's REMOTE_ENVS. */
import { configFrom } from "../config";
import { type RemoteEnvironments, remoteEnvironments } from "../environments/registry";

export function environmentsOf(env: Env): RemoteEnvironments {
  const config = configFrom(env);
  return remoteEnvironments(env, {
    stepTimeoutMs: config.STEP_TIMEOUT_S * 1000,
    scoreTimeoutMs: config.SCORE_TIMEOUT_S * 1000,
  });
}
