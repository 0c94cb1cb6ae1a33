/**
 * vLLM's tokenizer endpoints, served at the root as vLLM serves them: `POST /tokenize` (a text,
 * or messages rendered by the same chat template chat completions use) and `POST /detokenize`.
 * They stand for the tokenizer, not the model: the generation faults never touch them. `/tokenize`
 * plays only its own, `tokenize-fail`, and counts apart in the stats (`stats().tokenize`), so
 * generation counts stay generations; `/detokenize` plays none and counts in none.
 */
import type { ServerResponse } from "node:http";
import { z } from "zod";
import { hashString } from "../utils/random";
import { detokenize, type PromptEnding, tokenize } from "./chat-template";
import { type Directives, parseModel, unknownModel } from "./directives";
import { type Host, maxModelLen, templateFor } from "./host";
import { errorType, sendBadRequest, sendError, sendJson } from "./http";
import { promptIds } from "./token-answer";
import { firstUnknown, outOfVocabulary, vocabularyFor } from "./vocabulary";
import { templateMessages, WireMessageSchema, WireToolSchema } from "./wire-message";

/** vLLM's `TokenizeCompletionRequest`: a text. ChatML adds no BOS, so special tokens add none. */
const TokenizeTextSchema = z.object({
  model: z.string().nullish(),
  prompt: z.string(),
  add_special_tokens: z.boolean().nullish(),
});

/** vLLM's `TokenizeChatRequest`: messages (and tools), rendered as chat completions render them. */
const TokenizeChatSchema = z.object({
  model: z.string().nullish(),
  messages: z.array(WireMessageSchema).min(1),
  tools: z.array(WireToolSchema).nullish(),
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

/**
 * With `tokenize-fail:S[:N]`, the status this try gets instead of its tokens, or null. Tries are
 * counted by the body, so a client retrying the same request meets the fault N times.
 */
function tokenizeFault(host: Host, directives: Directives, body: string): number | null {
  const fail = directives.tokenizeFail;
  if (fail === undefined) return null;
  return host.ledger.attempt(`/tokenize|${hashString(body)}`) <= fail.times ? fail.status : null;
}

/** The error vLLM would send: a 404 names the model it does not serve. */
function sendTokenizeFault(
  res: ServerResponse,
  status: number,
  model: string,
  directives: Directives,
): void {
  const message =
    status === 404
      ? `The model \`${model}\` does not exist.`
      : `simulated ${status} on /tokenize (tokenize-fail)`;
  const { retryAfterS } = directives;
  const headers: Record<string, string> =
    retryAfterS === undefined ? {} : { "retry-after": String(retryAfterS) };
  sendError(res, status, message, errorType(status), headers);
}

export function tokenizeRoute(host: Host, res: ServerResponse, body: string): void {
  let parsed: z.infer<typeof TokenizeSchema>;
  try {
    parsed = TokenizeSchema.parse(JSON.parse(body));
  } catch (error) {
    sendBadRequest(res, error);
    return;
  }
  const model = parsed.model ?? "sim";
  const unknown = unknownModel(model);
  if (unknown !== null) {
    host.ledger.countTokenize(model, "tokenize_error_404");
    sendError(res, 404, unknown, "NotFoundError");
    return;
  }
  const directives = directivesOf(parsed.model);
  let ids: number[];
  if ("messages" in parsed) {
    // vLLM refuses this while it validates the request, before it looks for the model.
    if (parsed.add_generation_prompt && parsed.continue_final_message) {
      host.ledger.countTokenize(model, "tokenize_error_400");
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
    const template = templateFor(host, directives);
    ids = promptIds(templateMessages(parsed.messages), template, ending, parsed.tools ?? []);
  } else ids = tokenize(parsed.prompt);
  const fault = tokenizeFault(host, directives, body);
  if (fault !== null) {
    host.ledger.countTokenize(model, `tokenize_error_${fault}`);
    sendTokenizeFault(res, fault, model, directives);
    return;
  }
  host.ledger.countTokenize(model, "tokenize_ok");
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
