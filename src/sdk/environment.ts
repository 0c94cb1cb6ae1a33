/** The environment contract: the hooks the episode loop drives, for multi-turn and single-turn tasks. */
import pMap from "p-map";
import type { z } from "zod";
import { type ScoreContext, unjudgedContexts } from "./judge";
import { defaultSftCompletion } from "./sft-target";
import type {
  ChatMessage,
  EnvironmentEpisode,
  EnvironmentStepResultInput,
  MaybePromise,
  RewardResultInput,
  TaskExample,
  ToolDefinition,
} from "./types";

export type EnvironmentKind = "multi-turn" | "single-turn";

/**
 * A task that takes more than one response. Subclasses implement the four episode hooks;
 * everything else has a default. Keep durable episode state in the transcript, never on
 * `this`: many episodes of one example run at once, each turn possibly on another machine.
 */
export abstract class EnvironmentMultiTurn {
  readonly kind: EnvironmentKind = "multi-turn";

  /**
   * The rules' version: every group and episode records it (`env_version`), and a group that
   * pins one is refused when it differs, so a run never silently mixes two sets of rules. Bump
   * it whenever a change could change what an episode sees or scores. Undeclared, it is "0".
   */
  readonly version: string = "0";

  /** How many `scoreEpisode` calls the default `scoreEpisodes` runs at once. */
  maxScoreConcurrency = 8;

  /**
   * What an example must hold for this environment to play it, as a zod schema of the row
   * (`{metadata, output}`; a row without metadata is checked as `metadata: {}`). Checked before
   * the episode opens, so the API refuses an example outside it with a 422 naming each field,
   * before anything is stored, and `env check` reports the dataset rows outside it. Declare the
   * metadata the hooks read, and `output` where the score compares against one. None (the
   * default) checks nothing: whatever the hooks throw at the opening is the refusal. Assign a
   * module constant: edgeroll makes a fresh instance for every call, and building a zod schema
   * allocates many times what checking one does.
   */
  readonly exampleSchema?: z.ZodType;

  /** The opening messages, e.g. a system prompt and the first user turn. */
  abstract startEpisode(example: TaskExample, promptText: string): MaybePromise<ChatMessage[]>;

  /** The most assistant actions sampled for this example before the episode is ended. */
  abstract maxEpisodeTurns(example: TaskExample): number;

  /**
   * Reacts to one action. `messages` already ends with that action; return only the new
   * environment messages, and `done: true` to end the episode.
   */
  abstract stepEpisode(
    example: TaskExample,
    messages: readonly ChatMessage[],
    assistantResponse: string,
  ): MaybePromise<EnvironmentStepResultInput>;

  /**
   * Grades one finished transcript. `context.judge` asks a judge model (judge.ts); a `Rubric`
   * (rubric.ts) returns named, weighted components with the score. edgeroll always passes a
   * context; a unit test calling the hook may leave it out (no judge).
   */
  abstract scoreEpisode(
    example: TaskExample,
    episode: EnvironmentEpisode,
    context?: ScoreContext,
  ): MaybePromise<RewardResultInput>;

  /**
   * Grades a whole group, `contexts[i]` for `episodes[i]`; by default `scoreEpisode` for each,
   * `maxScoreConcurrency` at once (and then each episode's failure is its own).
   */
  scoreEpisodes(
    example: TaskExample,
    episodes: readonly EnvironmentEpisode[],
    contexts: readonly ScoreContext[] = unjudgedContexts(episodes.length),
  ): Promise<RewardResultInput[]> {
    return pMap(episodes, (episode, i) => this.scoreEpisode(example, episode, contexts[i]), {
      concurrency: this.maxScoreConcurrency,
    });
  }

  /**
   * Native tool calling: the tools the model may call for this example, sent to the host with
   * every generation (`tools`, `tool_choice: "auto"`); the host's parser turns the model's
   * calls into `tool_calls`, and `stepEpisode` answers each with a `role: "tool"` message
   * carrying its `tool_call_id`, in order. None (the default) means a text-only environment.
   * Native tool-calling environments are GRPO-only: no per-turn credit, no distillation.
   */
  tools?(example: TaskExample): MaybePromise<ToolDefinition[] | undefined>;

  /** The supervised target for SFT; by default built from `example.output`. */
  sftCompletion(example: TaskExample): MaybePromise<ChatMessage[]> {
    return defaultSftCompletion(example);
  }
}

/** A one-response task, run as a one-turn episode through the same machinery. */
export abstract class EnvironmentSingleTurn extends EnvironmentMultiTurn {
  override readonly kind: EnvironmentKind = "single-turn";

  /** The prompt for one example. */
  abstract buildPromptMessages(
    example: TaskExample,
    promptText: string,
  ): MaybePromise<ChatMessage[]>;

  /** Grades the model's one reply. */
  abstract scoreResponse(
    example: TaskExample,
    responseText: string,
    context?: ScoreContext,
  ): MaybePromise<RewardResultInput>;

  startEpisode(example: TaskExample, promptText: string): MaybePromise<ChatMessage[]> {
    return this.buildPromptMessages(example, promptText);
  }

  maxEpisodeTurns(): number {
    return 1;
  }

  stepEpisode(
    _example: TaskExample,
    _messages: readonly ChatMessage[],
    assistantResponse: string,
  ): EnvironmentStepResultInput {
    return { done: true, finalResponseText: assistantResponse };
  }

  scoreEpisode(
    example: TaskExample,
    episode: EnvironmentEpisode,
    context?: ScoreContext,
  ): MaybePromise<RewardResultInput> {
    return this.scoreResponse(example, episode.responseText, context);
  }
}
