/**
 * The stateless step worker: opens episodes and steps actions with the environment's code. It
 * keeps nothing between calls; environments rebuild what they need by replaying the transcript.
 */
import { WorkerEntrypoint } from "cloudflare:workers";
import { loadEnvironment } from "../environments/registry";
import {
  type ChatMessage,
  type EnvironmentStepResult,
  openEpisode,
  stepEnvironment,
  type TaskExample,
  turnBudget,
} from "../sdk";
import { type EnvCall, envCall } from "./env-call";

export interface OpenRequest {
  env: string;
  example: TaskExample;
  promptText: string;
}

export interface Opening {
  messages: ChatMessage[];
  maxTurns: number;
}

export interface StepRequest {
  env: string;
  example: TaskExample;
  /** The whole transcript, ending with the sampled action to step. */
  messages: ChatMessage[];
}

/** What the group object calls. (Workers' RPC types cannot express our `unknown` JSON fields.) */
export interface StepWorkerApi {
  open(request: OpenRequest): Promise<EnvCall<Opening>>;
  step(request: StepRequest): Promise<EnvCall<EnvironmentStepResult>>;
}

export class StepWorker extends WorkerEntrypoint<Env> implements StepWorkerApi {
  async open(request: OpenRequest): Promise<EnvCall<Opening>> {
    return envCall(async () => {
      const env = loadEnvironment(request.env);
      const messages = await openEpisode(env, request.example, request.promptText);
      return { messages, maxTurns: turnBudget(env, request.example) };
    });
  }

  async step(request: StepRequest): Promise<EnvCall<EnvironmentStepResult>> {
    return envCall(() =>
      stepEnvironment(loadEnvironment(request.env), request.example, request.messages),
    );
  }
}
