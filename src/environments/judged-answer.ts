/**
 * judged-answer (single-turn): a short free-text answer, graded by the judge model against the
 * example's reference. Its rubric: `correctness`, the judge's score (weight 1), and `length`, the
 * answer's words (weight 0: a metric, recorded beside the score and never rewarded). A judge that
 * gives no grade ends the episode `judge_error`, never a score of 0.
 */
import { z } from "zod";
import {
  type ChatMessage,
  type EnvironmentEpisode,
  EnvironmentSingleTurn,
  exampleMetadata,
  judgedComponent,
  type RewardResultInput,
  Rubric,
  type ScoreContext,
  type TaskExample,
} from "../sdk";
import { extractAnswer } from "./exact-answer";

/** The reference the judge compares against; `judge_model` names another judge for this example. */
const ExampleSchema = z.object({
  output: z.string({ error: "required: the reference answer the judge compares against" }).min(1),
  metadata: z.object({ judge_model: z.string().min(1).optional() }),
});
const MetadataSchema = z.object({ judge_model: z.string().min(1).optional() });

/** What the judge is asked: one JSON verdict, read strictly (src/judges/verdict.ts). */
export function judgePrompt(question: string, reference: string, answer: string): ChatMessage[] {
  return [
    {
      role: "system",
      content:
        'You grade answers against a reference. Reply with one JSON object and nothing else: {"score": <a number from 0 to 1>, "reason": "<one sentence>"}. Score 1 when the answer means the same as the reference, 0 when it does not.',
    },
    {
      role: "user",
      content: `Question: ${question}\nReference answer: ${reference}\nAnswer to grade: ${answer}`,
    },
  ];
}

const words = (text: string) => text.trim().split(/\s+/).filter(Boolean).length;

export class JudgedAnswer extends EnvironmentSingleTurn {
  override readonly version = "1";
  override readonly exampleSchema = ExampleSchema;

  private readonly rubric = new Rubric(
    [
      judgedComponent({
        name: "correctness",
        weight: 1,
        messages: (example, episode) =>
          judgePrompt(example.input, String(example.output), extractAnswer(episode.responseText)),
        model: (example) => exampleMetadata(MetadataSchema, example).judge_model,
      }),
      {
        name: "length",
        weight: 0,
        value: (_example, episode) => words(extractAnswer(episode.responseText)),
      },
    ],
    { threshold: 1 },
  );

  buildPromptMessages(example: TaskExample): ChatMessage[] {
    return [
      {
        role: "user",
        content: `${example.input}\n\nAnswer in a few words, as <answer>...</answer>.`,
      },
    ];
  }

  scoreResponse(): RewardResultInput {
    throw new Error("judged-answer grades whole episodes (scoreEpisode), with its rubric");
  }

  override scoreEpisode(
    example: TaskExample,
    episode: EnvironmentEpisode,
    context?: ScoreContext,
  ): Promise<RewardResultInput> {
    return this.rubric.score(example, episode, context);
  }

  override sftCompletion(example: TaskExample): ChatMessage[] {
    return [{ role: "assistant", content: `<answer>${String(example.output)}</answer>` }];
  }
}
