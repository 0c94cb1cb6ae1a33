/**
 * The simulator's answer in tokens, as vLLM reports it: the prompt rendered by the chat
 * template and tokenized, the completion's ids as sampled (ending in the end-of-turn token when
 * the model ended its turn, in a stop string's tokens when one stopped it), and one logprob per
 * completion token.
 *
 * The logprobs reflect how the simulator samples: certain (0) at temperature 0, and further
 * from 0 the hotter it samples — each token's probability is drawn from the request's seeded
 * randomness, so a seeded request always reports the same values.
 */

import type { Random } from "../utils/random";
import {
  type PromptEnding,
  renderPrompt,
  type TemplateKind,
  type TemplateMessage,
  tokenize,
} from "./chat-template";
import type { ToolSpec } from "./hermes";

export function promptIds(
  messages: readonly TemplateMessage[],
  template: TemplateKind,
  ending: PromptEnding = "generation-prompt",
  tools: readonly ToolSpec[] = [],
): number[] {
  return tokenize(renderPrompt(messages, template, ending, tools));
}

export interface CompletionTokens {
  ids: number[];
  logprobs: number[];
}

/**
 * The completion's tokens: the ids the model would sample, `cut` at the token budget when they
 * outrun it (`budget` counts every sampled id, the end-of-turn token too, as hosts do).
 */
export function completionTokens(
  sampled: readonly number[],
  budget: number,
  temperature: number,
  random: Random,
): CompletionTokens & { cut: boolean } {
  const ids = [...sampled];
  const cut = ids.length > budget;
  const kept = cut ? ids.slice(0, budget) : ids;
  const spread = Math.min(0.9, 0.35 * temperature);
  const logprobs = kept.map(() => {
    const doubt = spread * random() ** 2;
    return Math.log(1 - doubt);
  });
  return { ids: kept, logprobs, cut };
}

/** vLLM's `logprobs` for chat: one `content` entry per token, with no alternatives asked for. */
export function logprobsField(
  ids: readonly number[],
  logprobs: readonly number[],
  text: (id: number) => string,
) {
  return {
    content: ids.map((id, i) => {
      const token = text(id);
      return {
        token,
        logprob: logprobs[i] ?? 0,
        bytes: [...new TextEncoder().encode(token)],
        top_logprobs: [],
      };
    }),
  };
}
