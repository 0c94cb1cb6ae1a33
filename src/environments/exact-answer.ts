/** exact-answer (single-turn): arithmetic and short-answer prompts, scored by normalised exact match. */
import { z } from "zod";
import {
  type ChatMessage,
  EnvironmentSingleTurn,
  exampleMetadata,
  type RewardResultInput,
  type TaskExample,
} from "../sdk";

const ANSWER = /<answer>([\s\S]*?)<\/answer>/g;
const MetadataSchema = z.object({ aliases: z.array(z.string()).default([]) });
/** The reply is scored against `output`: an example without one cannot be played. */
const ExampleSchema = z.object({
  output: z.union([z.string(), z.number()], {
    error: "required: the answer to match, a string or a number",
  }),
  metadata: MetadataSchema,
});

/** The last `<answer>...</answer>` of a reply, or the whole reply when it has none. */
export function extractAnswer(response: string): string {
  return [...response.matchAll(ANSWER)].at(-1)?.[1] ?? response;
}

/**
 * Case, surrounding whitespace and quotes, trailing punctuation and number formatting do not
 * count: "  The Answer. " equals "the answer", "1,000.0" equals "1000".
 */
export function normaliseAnswer(text: string): string {
  const plain = text
    .normalize("NFKC")
    .trim()
    .toLowerCase()
    .replace(/^["'`*]+|["'`*]+$/g, "")
    .replace(/[.!?,;:]+$/, "")
    .replace(/\s+/g, " ")
    .trim();
  const numeric = plain.replace(/(?<=\d),(?=\d{3}\b)/g, "").replace(/^\+/, "");
  return /^-?\d+(\.\d+)?(e-?\d+)?$/.test(numeric) ? String(Number(numeric)) : plain;
}

export class ExactAnswer extends EnvironmentSingleTurn {
  override readonly version = "1";
  override readonly exampleSchema = ExampleSchema;

  buildPromptMessages(example: TaskExample): ChatMessage[] {
    return [
      {
        role: "user",
        content: `${example.input}\n\nGive your final answer as <answer>...</answer>.`,
      },
    ];
  }

  scoreResponse(example: TaskExample, responseText: string): RewardResultInput {
    if (example.output === undefined)
      throw new Error(`example "${example.id}" has no output to match`);
    const { aliases } = exampleMetadata(MetadataSchema, example);
    const accepted = [String(example.output), ...aliases].map(normaliseAnswer);
    const given = normaliseAnswer(extractAnswer(responseText));
    return { score: accepted.includes(given) ? 1 : 0, threshold: 1, metadata: { answer: given } };
  }

  /** The gold reply states the output in the answer format the prompt asks for. */
  override sftCompletion(example: TaskExample): ChatMessage[] {
    if (example.output === undefined) return super.sftCompletion(example) as ChatMessage[];
    return [{ role: "assistant", content: `<answer>${String(example.output)}</answer>` }];
  }
}
