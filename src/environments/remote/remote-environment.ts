/**
 * An environment served over HTTP (docs/remote-env-protocol.md), in any language, behind the
 * same contract as a built-in one: the step and score workers drive it through the SDK, so
 * everything the SDK validates for built-in environments it validates for remote answers too.
 * Like every environment here it keeps no episode state: each call carries the transcript.
 */
import {
  type ChatMessage,
  type EnvironmentEpisode,
  EnvironmentMultiTurn,
  type EnvironmentStepResultInput,
  isSampledAction,
  type RewardResultInput,
  type TaskExample,
  type ToolDefinition,
} from "../../sdk";
import { callRemote, RemoteEnvError, type RemoteTarget } from "./client";
import {
  type InfoResponse,
  InfoResponseSchema,
  ScoreResponseSchema,
  StartResponseSchema,
  StepResponseSchema,
} from "./protocol";

export interface RemoteCallLimits {
  /** Each `/start` and `/step` call (STEP_TIMEOUT_S). */
  stepTimeoutMs: number;
  /** Each `/score` call (SCORE_TIMEOUT_S). */
  scoreTimeoutMs: number;
}

export class RemoteEnvironment extends EnvironmentMultiTurn {
  /** `/start` answers the turn budget with the opening; the SDK asks for it after, by example. */
  private readonly openedMaxTurns = new Map<string, number>();
  /** Its tools come with the opening too. */
  private readonly openedTools = new Map<string, ToolDefinition[]>();

  constructor(
    private readonly target: RemoteTarget,
    private readonly limits: RemoteCallLimits,
    /**
     * Names the episode in its calls' Idempotency-Key (`<episode_id>:<turn>`, `:start`); without
     * one (a group's example checked before it exists) calls go without a key.
     */
    private readonly episodeId?: string,
  ) {
    super();
  }

  private key(call: string): string | undefined {
    return this.episodeId === undefined ? undefined : `${this.episodeId}:${call}`;
  }

  async startEpisode(example: TaskExample, promptText: string): Promise<ChatMessage[]> {
    const opening = await callRemote(
      this.target,
      "POST",
      "/start",
      { example, prompt_text: promptText },
      StartResponseSchema,
      { timeoutMs: this.limits.stepTimeoutMs, idempotencyKey: this.key("start") },
    );
    this.openedMaxTurns.set(example.id, opening.max_turns);
    if (opening.tools?.length) this.openedTools.set(example.id, opening.tools);
    return opening.messages;
  }

  override tools(example: TaskExample): ToolDefinition[] | undefined {
    return this.openedTools.get(example.id);
  }

  maxEpisodeTurns(example: TaskExample): number {
    const turns = this.openedMaxTurns.get(example.id);
    if (turns === undefined)
      throw new Error(
        "a remote environment's turn budget comes with its opening: call startEpisode first",
      );
    return turns;
  }

  async stepEpisode(
    example: TaskExample,
    messages: readonly ChatMessage[],
    assistantResponse: string,
  ): Promise<EnvironmentStepResultInput> {
    const turn = messages.filter(isSampledAction).length - 1;
    const step = await callRemote(
      this.target,
      "POST",
      "/step",
      {
        example,
        messages,
        assistant_response: assistantResponse,
        episode_id: this.episodeId ?? "unkeyed",
        turn,
      },
      StepResponseSchema,
      { timeoutMs: this.limits.stepTimeoutMs, idempotencyKey: this.key(String(turn)) },
    );
    return {
      done: step.done,
      messages: step.messages,
      finalResponseText: step.final_response_text,
      metadata: step.metadata,
    };
  }

  scoreEpisode(example: TaskExample, episode: EnvironmentEpisode): Promise<RewardResultInput> {
    return this.scoreEpisodes(example, [episode]).then(([result]) => result as RewardResultInput);
  }

  /** The whole group in one `/score` call: the server bounds its own concurrency. */
  override async scoreEpisodes(
    example: TaskExample,
    episodes: readonly EnvironmentEpisode[],
  ): Promise<RewardResultInput[]> {
    const scored = await callRemote(
      this.target,
      "POST",
      "/score",
      {
        example,
        episodes: episodes.map((e) => ({
          messages: e.messages,
          response_text: e.responseText,
          turns: e.turns,
          metadata: e.metadata,
        })),
      },
      ScoreResponseSchema,
      { timeoutMs: this.limits.scoreTimeoutMs },
    );
    if (scored.results.length !== episodes.length) {
      throw new RemoteEnvError(
        "failed",
        `remote environment "${this.target.name}" scored ${scored.results.length} episodes of ${episodes.length}`,
      );
    }
    return scored.results.map((r) => ({
      score: r.score,
      threshold: r.threshold ?? undefined,
      metadata: r.metadata,
      ...(r.components ? { components: r.components } : {}),
    }));
  }
}

/** `GET /info`: what `GET /v1/environments` and `edgeroll env check --url` show. */
export function remoteInfo(target: RemoteTarget, timeoutMs: number): Promise<InfoResponse> {
  return callRemote(target, "GET", "/info", undefined, InfoResponseSchema, { timeoutMs });
}
