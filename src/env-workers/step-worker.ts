/**
 * The stateless step worker: opens episodes and steps actions with the environment's code. It
 * keeps nothing between calls; environments rebuild what they need by replaying the transcript.
 */
import { RpcTarget, WorkerEntrypoint } from "cloudflare:workers";
import { loadEnvironment, type RemoteEnvironments } from "../environments/registry";
import {
  type ChatMessage,
  type EnvironmentStepResult,
  episodeTools,
  openEpisode,
  stepEnvironment,
  type TaskExample,
  type ToolDefinition,
  turnBudget,
} from "../sdk";
import { type EnvCall, envCall } from "./env-call";
import { environmentsOf } from "./environments";

export interface OpenRequest {
  env: string;
  example: TaskExample;
  promptText: string;
  episodeId?: string;
}

export interface Opening {
  messages: ChatMessage[];
  maxTurns: number;
  /** Native tool calling: the tools every generation of the episode offers; null for none. */
  tools: ToolDefinition[] | null;
}

export interface StepRequest {
  env: string;
  example: TaskExample;
  /** Names a remote environment's step calls (Idempotency-Key `<episode_id>:<turn>`). */
  episodeId?: string;
  /** The whole transcript, ending with the sampled action to step. */
  messages: ChatMessage[];
}

/** What a session is opened with: the episode's environment and example. */
export type StepSessionRequest = Omit<StepRequest, "messages">;

/**
 * One episode's steps through one invocation of this worker: the caller saves a new
 * invocation per turn. Each step still gets a fresh environment instance and the whole
 * transcript, exactly as `StepWorker.step` does: a session holds no environment state.
 */
export interface StepSessionApi extends Disposable {
  step(messages: ChatMessage[]): Promise<EnvCall<EnvironmentStepResult>>;
}

/** What the group object calls. (Workers' RPC types cannot express our `unknown` JSON fields.) */
export interface StepWorkerApi {
  open(request: OpenRequest): Promise<EnvCall<Opening>>;
  step(request: StepRequest): Promise<EnvCall<EnvironmentStepResult>>;
  session(request: StepSessionRequest): Promise<StepSessionApi>;
}

function step(
  request: StepRequest,
  remote: RemoteEnvironments,
): Promise<EnvCall<EnvironmentStepResult>> {
  return envCall(() =>
    stepEnvironment(
      loadEnvironment(request.env, remote, request.episodeId),
      request.example,
      request.messages,
    ),
  );
}

class StepSession extends RpcTarget {
  constructor(
    private readonly request: StepSessionRequest,
    private readonly remote: RemoteEnvironments,
  ) {
    super();
  }

  step(messages: ChatMessage[]): Promise<EnvCall<EnvironmentStepResult>> {
    return step({ ...this.request, messages }, this.remote);
  }
}

export class StepWorker
  extends WorkerEntrypoint<Env>
  implements Pick<StepWorkerApi, "open" | "step">
{
  async open(request: OpenRequest): Promise<EnvCall<Opening>> {
    return envCall(async () => {
      const env = loadEnvironment(request.env, environmentsOf(this.env), request.episodeId);
      const messages = await openEpisode(env, request.example, request.promptText);
      const tools = await episodeTools(env, request.example);
      return { messages, maxTurns: turnBudget(env, request.example), tools };
    });
  }

  async step(request: StepRequest): Promise<EnvCall<EnvironmentStepResult>> {
    return step(request, environmentsOf(this.env));
  }

  /** A session for one episode's steps; it lives until the caller disposes of its stub. */
  session(request: StepSessionRequest): StepSession {
    return new StepSession(request, environmentsOf(this.env));
  }
}
