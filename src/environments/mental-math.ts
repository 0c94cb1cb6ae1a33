/**
 * mental-math: a short drill of sums, one question a turn (`metadata.questions`, pairs of whole
 * numbers, whose answers all differ), each answered as `<answer>N</answer>` and marked right or
 * wrong before the next. The score is the share answered right (success: all of them), with a
 * per-turn reward of 1 or 0. Small enough that a tiny model learns it in minutes on a CPU
 * (examples/train/).
 */
import { z } from "zod";
import {
  type ChatMessage,
  type EnvironmentEpisode,
  EnvironmentMultiTurn,
  type EnvironmentStepResultInput,
  exampleMetadata,
  goldTranscript,
  isSampledAction,
  type RewardResultInput,
  sampledTurns,
  type TaskExample,
} from "../sdk";

const MetadataSchema = z.object({
  questions: z
    .array(z.tuple([z.number().int().min(0).max(999), z.number().int().min(0).max(999)]))
    .min(1)
    .max(10)
    // A later answer equal to an earlier one is in the context already (the earlier answer, or
    // the "Wrong: a + b = N" reply), so a drill's answers must all differ.
    .refine((qs) => new Set(qs.map(([a, b]) => a + b)).size === qs.length, {
      message:
        "every question's answer must differ from the others' (a repeated one is given away)",
    }),
});

const ANSWER = /<answer>\s*(-?\d+)\s*<\/answer>/g;

/** The last `<answer>N</answer>` of an action, or null. */
export function parseAnswer(action: string): number | null {
  const last = [...action.matchAll(ANSWER)].at(-1);
  return last ? Number(last[1]) : null;
}

const question = ([a, b]: readonly [number, number]) => `What is ${a} + ${b}?`;

const ExampleSchema = z.object({ metadata: MetadataSchema });

export class MentalMath extends EnvironmentMultiTurn {
  override readonly version = "1";
  override readonly exampleSchema = ExampleSchema;

  private questions(example: TaskExample) {
    return exampleMetadata(MetadataSchema, example).questions;
  }

  maxEpisodeTurns(example: TaskExample): number {
    return this.questions(example).length;
  }

  startEpisode(example: TaskExample): ChatMessage[] {
    const first = this.questions(example)[0] as [number, number];
    const rules = "Answer each question with <answer>N</answer>.";
    return [{ role: "user", content: `${example.input}\n${rules}\n${question(first)}` }];
  }

  stepEpisode(
    example: TaskExample,
    messages: readonly ChatMessage[],
    assistantResponse: string,
  ): EnvironmentStepResultInput {
    const questions = this.questions(example);
    const asked = messages.filter(isSampledAction).length - 1;
    const [a, b] = questions[asked] as [number, number];
    const answer = parseAnswer(assistantResponse);
    const verdict = answer === a + b ? "Correct." : `Wrong: ${a} + ${b} = ${a + b}.`;
    const next = questions[asked + 1];
    return {
      done: next === undefined,
      messages: [{ role: "user", content: next ? `${verdict}\n${question(next)}` : verdict }],
      metadata: { answer, right: answer === a + b },
    };
  }

  scoreEpisode(example: TaskExample, episode: EnvironmentEpisode): RewardResultInput {
    const questions = this.questions(example);
    const perTurn = sampledTurns(episode).map((turn, i) => {
      const [a, b] = questions[i] ?? [Number.NaN, Number.NaN];
      return parseAnswer(turn.content) === a + b ? 1 : 0;
    });
    const right = perTurn.reduce((n: number, r) => n + r, 0);
    return {
      score: right / questions.length,
      threshold: 1,
      metadata: { per_turn_rewards: perTurn, right },
    };
  }

  /** The gold transcript: every sum right, in the environment's own replies. */
  override sftCompletion(example: TaskExample): Promise<ChatMessage[]> {
    const questions = this.questions(example);
    return goldTranscript(this, example, (_messages, turn) => {
      const [a, b] = questions[turn.index] as [number, number];
      return `<answer>${a + b}</answer>`;
    });
  }
}
