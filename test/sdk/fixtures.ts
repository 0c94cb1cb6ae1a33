/** Small environments whose every hook can be steered, for pinning the loop's semantics. */
import {
  type ChatMessage,
  type EnvironmentEpisode,
  EnvironmentMultiTurn,
  type EnvironmentStepResultInput,
  type MaybePromise,
  type RewardResultInput,
  type TaskExample,
} from "../../src/sdk";

export const example: TaskExample = { id: "ex-1", input: "say something", output: "all said" };

export interface StepCall {
  messages: ChatMessage[];
  assistantResponse: string;
}

/** Records what it is given; each step answers with `script[turn]` or a default echo. */
export class ScriptedEnv extends EnvironmentMultiTurn {
  readonly stepCalls: StepCall[] = [];
  opening: ChatMessage[] = [{ role: "user", content: "hello" }];
  turns = 3;
  script: EnvironmentStepResultInput[] = [];

  startEpisode(): ChatMessage[] {
    return this.opening;
  }

  maxEpisodeTurns(): number {
    return this.turns;
  }

  stepEpisode(
    _example: TaskExample,
    messages: readonly ChatMessage[],
    assistantResponse: string,
  ): EnvironmentStepResultInput {
    this.stepCalls.push({ messages: [...messages], assistantResponse });
    const turn = this.stepCalls.length - 1;
    return (
      this.script[turn] ?? {
        done: false,
        messages: [{ role: "user", content: `echo ${assistantResponse}` }],
        metadata: { turn },
      }
    );
  }

  scoreEpisode(
    _example: TaskExample,
    episode: EnvironmentEpisode,
  ): MaybePromise<RewardResultInput> {
    return { score: episode.responseText.length, threshold: 1 };
  }
}

/** A policy that answers "a0", "a1", ... */
export const counting = (_messages: readonly ChatMessage[], turn: { index: number }) =>
  `a${turn.index}`;
