/**
 * vLLM's tokenizer endpoints, served at the root as vLLM serves them: `POST /tokenize` (a text,
 * or messages rendered by the same chat template chat completions use) and `POST /detokenize`.
 * They play no faults and count in no stats: they stand for the tokenizer, not the model.
 */
import type { ServerResponse } from "node:http";
import { z } from "zod";
import { detokenize, type PromptEnding, tokenize } from "./chat-template";
import { parseModel } from "./directives";
import { type Host, maxModelLen, templateFor } from "./host";
import { sendBadRequest, sendError, sendJson } from "./http";
import { promptIds } from "./token-answer";
import { firstUnknown, outOfVocabulary, vocabularyFor } from "./vocabulary";
import { templateMessages, WireMessageSchema } from "./wire-message";

/** vLLM's `TokenizeCompletionRequest`: a text. ChatML adds no BOS, so special tokens add none. */
const TokenizeTextSchema = z.object({
  model: z.string().nullish(),
  prompt: z.string(),
  add_special_tokens: z.boolean().nullish(),
});

/** vLLM's `TokenizeChatRequest`: messages, rendered as the chat endpoint renders them. */
const TokenizeChatSchema = z.object({
  model: z.string().nullish(),
  messages: z.array(WireMessageSchema).min(1),
  add_generation_prompt: z.boolean().default(true),
  continue_final_message: z.boolean().default(false),
  add_special_tokens: z.boolean().nullish(),
});

const TokenizeSchema = z.union([TokenizeChatSchema, TokenizeTextSchema]);

const DetokenizeSchema = z.object({
  model: z.string().nullish(),
  tokens: z.array(z.number().int()),
});

/** The directives of the model named, if one is; a request with no model reads as plain `sim`. */
const directivesOf = (model: string | null | undefined) => parseModel(model ?? "sim").directives;

export function tokenizeRoute(host: Host, res: ServerResponse, body: string): void {
  let parsed: z.infer<typeof TokenizeSchema>;
  try {
    parsed = TokenizeSchema.parse(JSON.parse(body));
  } catch (error) {
    sendBadRequest(res, error);
    return;
  }
  const directives = directivesOf(parsed.model);
  let ids: number[];
  if ("messages" in parsed) {
    if (parsed.add_generation_prompt && parsed.continue_final_message) {
      sendError(
        res,
        400,
        "Cannot set both `continue_final_message` and `add_generation_prompt` to True.",
      );
      return;
    }
    const ending: PromptEnding = parsed.add_generation_prompt
      ? "generation-prompt"
      : parsed.continue_final_message
        ? "open-final"
        : "closed";
    ids = promptIds(templateMessages(parsed.messages), templateFor(host, directives), ending);
  } else ids = tokenize(parsed.prompt);
  const tokens = vocabularyFor(directives).toWire(ids);
  sendJson(res, 200, { count: tokens.length, max_model_len: maxModelLen(directives), tokens });
}

export function detokenizeRoute(res: ServerResponse, body: string): void {
  let parsed: z.infer<typeof DetokenizeSchema>;
  try {
    parsed = DetokenizeSchema.parse(JSON.parse(body));
  } catch (error) {
    sendBadRequest(res, error);
    return;
  }
  const ids = vocabularyFor(directivesOf(parsed.model)).fromWire(parsed.tokens);
  const unknown = firstUnknown(ids);
  // vLLM decodes as Hugging Face does by default: special tokens stay in the text.
  if (unknown === -1) sendJson(res, 200, { prompt: detokenize(ids) });
  else sendError(res, 400, outOfVocabulary(Number(parsed.tokens[unknown])));
}
