/** The reference episode loop: the contract's semantics as one pure function over a policy. */
import type { EnvironmentMultiTurn } from "./environment";
import {
  assembleEpisode,
  episodeTools,
  openEpisode,
  responseTextAfter,
  stepEnvironment,
  turnBudget,
} from "./episode";
import { EnvironmentContractError } from "./errors";
import { answeredStep, withCallIds } from "./tool-calls";
import { type PolicyAction, sampledMessage } from "./transcript";
import type {
  ChatMessage,
  EnvironmentEpisode,
  JsonObject,
  MaybePromise,
  TaskExample,
} from "./types";

/** Token counts the inference host reported for one generation. */
export interface GenerationUsage {
  promptTokens: number;
  completionTokens: number;
}

export interface PolicyOutput extends PolicyAction {
  usage?: GenerationUsage;
}

export interface PolicyTurn {
  /** 0-based index of the action being sampled. */
  index: number;
  example: TaskExample;
}

/** Samples one assistant action from the transcript so far. */
export type Policy = (
  messages: readonly ChatMessage[],
  turn: PolicyTurn,
) => MaybePromise<string | PolicyOutput>;

export interface RunEpisodeOptions {
  policy: Policy;
  promptText?: string;
  /** Caps the environment's own turn budget (used to replay a gold transcript). */
  maxTurns?: number;
  /** Clock for `latencyMs`; injectable so tests are deterministic. */
  now?: () => number;
}

/**
 * Runs one episode: open, then sample / append / step until the environment says done or the
 * turn budget runs out, and return the episode ready for scoring.
 */
export async function runEpisode(
  env: EnvironmentMultiTurn,
  example: TaskExample,
  options: RunEpisodeOptions,
): Promise<EnvironmentEpisode> {
  const now = options.now ?? Date.now;
  const started = now();
  const messages = await openEpisode(env, example, options.promptText ?? "");
  // As in the Durable Object: a native tool-calling episode's calls get ids and answers.
  const native = (await episodeTools(env, example)) !== null;
  const openingCount = messages.length;
  const budget = Math.min(turnBudget(env, example), options.maxTurns ?? Number.POSITIVE_INFINITY);
  const steps: JsonObject[] = [];
  let responseText = "";
  let lastUsage: GenerationUsage | undefined;

  for (let index = 0; index < budget; index++) {
    const sampled = await options.policy(messages.slice(), { index, example });
    const output: PolicyOutput = typeof sampled === "string" ? { content: sampled } : sampled;
    lastUsage = output.usage;
    const toolCalls = native
      ? withCallIds(output.toolCalls ?? [], index, messages)
      : output.toolCalls;
    const action = sampledMessage({ ...output, ...(toolCalls ? { toolCalls } : {}) });
    messages.push(action);
    const answered = answeredStep(native, action, await stepEnvironment(env, example, messages));
    if (!answered.ok) throw new EnvironmentContractError("stepEpisode", answered.problem);
    const result = answered.step;
    responseText = responseTextAfter(result, output.content);
    messages.push(...result.messages);
    steps.push(result.metadata);
    if (result.done) break;
  }

  return assembleEpisode({
    messages,
    openingCount,
    responseText,
    steps,
    latencyMs: Math.max(0, Math.round(now() - started)),
    // The trajectory's length as the host counted it: the last prompt plus its completion.
    totalTokens: lastUsage ? lastUsage.promptTokens + lastUsage.completionTokens : null,
  });
}
