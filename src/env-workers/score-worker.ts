/** The stateless score worker: grades a finished group with the environment's `scoreEpisodes`. */
import { WorkerEntrypoint } from "cloudflare:workers";
import { loadEnvironment } from "../environments/registry";
import {
  type EnvironmentEpisode,
  errorMessage,
  type ScoreOutcome,
  scoreGroup,
  type TaskExample,
} from "../sdk";
import { environmentsOf } from "./environments";

export interface ScoreRequest {
  env: string;
  example: TaskExample;
  episodes: EnvironmentEpisode[];
}

/** What the group object calls. (Workers' RPC types cannot express our `unknown` JSON fields.) */
export interface ScoreWorkerApi {
  score(request: ScoreRequest): Promise<ScoreOutcome[]>;
}

export class ScoreWorker extends WorkerEntrypoint<Env> implements ScoreWorkerApi {
  /** One outcome per episode: a validated reward, or why that episode could not be graded. */
  async score(request: ScoreRequest): Promise<ScoreOutcome[]> {
    try {
      const env = loadEnvironment(request.env, environmentsOf(this.env));
      return await scoreGroup(env, request.example, request.episodes);
    } catch (error) {
      const failure = `scoring failed: ${errorMessage(error)}`;
      return request.episodes.map(() => ({ ok: false, error: failure }));
    }
  }
}
