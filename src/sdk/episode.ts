/**
 * The steps of the episode loop, each validated against the contract. The in-process loop
 * (`runEpisode`) and the rollout engine's Durable Object compose the same steps, so both
 * follow the same semantics.
 */
import pMap from "p-map";
import { z } from "zod";
import { EnvironmentMultiTurn } from "./environment";
import { describeZodError, EnvironmentContractError, errorMessage } from "./errors";
import { checkExample } from "./example-schema";
import { JudgeError, NO_JUDGE, type ScoreContext, unjudgedContexts } from "./judge";
import { isSampledAction } from "./transcript";
import {
  type ChatMessage,
  ChatMessageSchema,
  type EnvironmentEpisode,
  type EnvironmentStepResult,
  EnvironmentStepResultSchema,
  type JsonObject,
  type RewardResult,
  RewardResultSchema,
  type TaskExample,
  type ToolDefinition,
  ToolDefinitionsSchema,
} from "./types";

const OpeningMessagesSchema = z.array(ChatMessageSchema).min(1);
const TurnBudgetSchema = z.number().int().positive();

/** Only the loop may mark an action as sampled; an environment that does so would forge one. */
function rejectSampledMarks(hook: string, messages: readonly ChatMessage[]): void {
  const forged = messages.findIndex((m) => m.metadata?.sampled !== undefined);
  if (forged !== -1) {
    throw new EnvironmentContractError(
      hook,
      `messages[${forged}].metadata.sampled is reserved for sampled actions`,
    );
  }
}

/** The run's prompt text becomes the system message when the opening has none or an empty one. */
export function withPromptText(messages: ChatMessage[], promptText: string): ChatMessage[] {
  if (promptText.trim() === "") return messages;
  const system = messages.findIndex((m) => m.role === "system");
  if (system === -1) return [{ role: "system", content: promptText }, ...messages];
  const current = messages[system] as ChatMessage;
  if (current.content.trim() !== "") return messages;
  return messages.map((m, i) => (i === system ? { ...current, content: promptText } : m));
}

/**
 * `startEpisode`, validated, with the prompt-text rule applied; first the example against the
 * environment's `exampleSchema` (an `ExampleRejectedError` naming the fields).
 */
export async function openEpisode(
  env: EnvironmentMultiTurn,
  example: TaskExample,
  promptText: string,
): Promise<ChatMessage[]> {
  checkExample(env, example);
  const parsed = OpeningMessagesSchema.safeParse(await env.startEpisode(example, promptText));
  if (!parsed.success) {
    throw new EnvironmentContractError("startEpisode", describeZodError(parsed.error));
  }
  rejectSampledMarks("startEpisode", parsed.data);
  return withPromptText(parsed.data, promptText);
}

/** `tools`, validated: the episode's native tool definitions, or none (a text environment). */
export async function episodeTools(
  env: EnvironmentMultiTurn,
  example: TaskExample,
): Promise<ToolDefinition[] | null> {
  if (env.tools === undefined) return null;
  const raw = await env.tools(example);
  if (raw === undefined || (Array.isArray(raw) && raw.length === 0)) return null;
  const parsed = ToolDefinitionsSchema.safeParse(raw);
  if (!parsed.success) throw new EnvironmentContractError("tools", describeZodError(parsed.error));
  return parsed.data;
}

/** `maxEpisodeTurns`, validated: a positive integer. */
export function turnBudget(env: EnvironmentMultiTurn, example: TaskExample): number {
  const budget = env.maxEpisodeTurns(example);
  const parsed = TurnBudgetSchema.safeParse(budget);
  if (!parsed.success) {
    throw new EnvironmentContractError(
      "maxEpisodeTurns",
      `must return a positive integer, got ${String(budget)}`,
    );
  }
  return parsed.data;
}

/**
 * `stepEpisode` for the action that ends `messages`, validated. The environment gets its own
 * copy of the array, so it cannot rewrite the recorded transcript.
 */
export async function stepEnvironment(
  env: EnvironmentMultiTurn,
  example: TaskExample,
  messages: readonly ChatMessage[],
): Promise<EnvironmentStepResult> {
  const action = messages.at(-1);
  if (action === undefined || !isSampledAction(action)) {
    throw new EnvironmentContractError(
      "stepEpisode",
      "the transcript must end with the sampled action being stepped",
    );
  }
  const raw = await env.stepEpisode(example, messages.slice(), action.content);
  const parsed = EnvironmentStepResultSchema.safeParse(raw);
  if (!parsed.success) {
    throw new EnvironmentContractError("stepEpisode", describeZodError(parsed.error));
  }
  rejectSampledMarks("stepEpisode", parsed.data.messages);
  return parsed.data;
}

/** The text passed to scoring after a step: `finalResponseText` overrides the action. */
export function responseTextAfter(result: EnvironmentStepResult, actionContent: string): string {
  return result.finalResponseText ?? actionContent;
}

export interface EpisodeParts {
  messages: readonly ChatMessage[];
  /** How many messages `openEpisode` produced; the turns are everything after them. */
  openingCount: number;
  responseText: string;
  /** Each step's metadata, in order; lands in the episode metadata under `steps`. */
  steps: readonly JsonObject[];
  latencyMs?: number | null;
  totalTokens?: number | null;
}

/** The finished episode the scorer sees. */
export function assembleEpisode(parts: EpisodeParts): EnvironmentEpisode {
  return {
    messages: [...parts.messages],
    responseText: parts.responseText,
    turns: parts.messages.slice(parts.openingCount).map((m) => ({
      role: m.role,
      content: m.content,
      name: m.name ?? null,
      metadata: m.metadata ?? {},
    })),
    metadata: { steps: [...parts.steps] },
    latencyMs: parts.latencyMs ?? null,
    totalTokens: parts.totalTokens ?? null,
  };
}

/**
 * One episode's grade, or why it could not be graded, and who failed to give one: the judge
 * (the episode ends `judge_error`, which a re-score may mend) or the environment's scorer
 * (`score_error`).
 */
export type ScoreOutcome =
  | { ok: true; reward: RewardResult }
  | { ok: false; error: string; by: "judge" | "scorer" };

function parseReward(hook: string, raw: unknown): ScoreOutcome {
  const parsed = RewardResultSchema.safeParse(raw);
  if (parsed.success) return { ok: true, reward: parsed.data };
  return { ok: false, error: `${hook}: ${describeZodError(parsed.error)}`, by: "scorer" };
}

/** A grade that threw: the judge's failure is its own reason, anything else the scorer's. */
function thrown(hook: string, error: unknown): ScoreOutcome {
  if (error instanceof JudgeError)
    return { ok: false, error: `${hook}: ${error.message}`, by: "judge" };
  return { ok: false, error: `${hook} threw: ${errorMessage(error)}`, by: "scorer" };
}

/**
 * Grades a group. An environment that overrides `scoreEpisodes` is asked for the whole group at
 * once; when that throws or answers with the wrong number of results, each episode is graded
 * alone with `scoreEpisode`, so one bad transcript fails only its own episode. One that does not
 * is graded episode by episode from the start (a judge is then asked once per episode, and its
 * failure fails only that one). `contexts[i]` is `episodes[i]`'s (its judge); none, no judge.
 */
export async function scoreGroup(
  env: EnvironmentMultiTurn,
  example: TaskExample,
  episodes: readonly EnvironmentEpisode[],
  contexts: readonly ScoreContext[] = unjudgedContexts(episodes.length),
): Promise<ScoreOutcome[]> {
  if (env.scoreEpisodes !== EnvironmentMultiTurn.prototype.scoreEpisodes) {
    try {
      const rewards = await env.scoreEpisodes(example, episodes, contexts);
      if (Array.isArray(rewards) && rewards.length === episodes.length) {
        return rewards.map((r) => parseReward("scoreEpisodes", r));
      }
    } catch {
      // Fall through: grade one by one to find which episode is at fault.
    }
  }
  return pMap(
    episodes,
    async (episode, i): Promise<ScoreOutcome> => {
      try {
        const context = contexts[i] ?? { judge: NO_JUDGE };
        return parseReward("scoreEpisode", await env.scoreEpisode(example, episode, context));
      } catch (error) {
        return thrown("scoreEpisode", error);
      }
    },
    { concurrency: env.maxScoreConcurrency },
  );
}
