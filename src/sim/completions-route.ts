/**
 * `POST /v1/completions`, vLLM's token-in endpoint: the prompt's ids (or a text, tokenized) read
 * back into a ChatML conversation, the scripted policy's turn played exactly as for chat (a
 * seeded request gives the same tokens as the chat request whose prompt ids these are), and the
 * answer as vLLM's `text_completion`, with `prompt_logprobs` when asked.
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import { z } from "zod";
import { hashString, seededRandom } from "../utils/random";
import { admit } from "./admission";
import { detokenize, tokenize } from "./chat-template";
import { parseChatML } from "./chatml-parser";
import { complete, choices as playChoices } from "./completion";
import { streamTextAnswer, type TextAnswer, textAnswerBody } from "./completions-answer";
import { unknownModel } from "./directives";
import { type Host, modelOf } from "./host";
import { sendBadRequest, sendError, sendJson, sessionOf, sleep } from "./http";
import { promptLogprobs } from "./prompt-logprobs";
import { firstUnknown, outOfVocabulary, vocabularyFor } from "./vocabulary";

/**
 * vLLM's `CompletionRequest`, the fields the simulator reads. `top_p`, `add_special_tokens` and
 * `skip_special_tokens` are accepted and change nothing: the scripted player has no distribution
 * to truncate, ChatML adds no BOS, and the only special token a completion holds ends it.
 */
const CompletionRequestSchema = z.object({
  model: z.string().min(1),
  prompt: z.union([z.string(), z.array(z.number().int()).min(1)]),
  /** vLLM's default is 16; null means as many as the model says. */
  max_tokens: z.number().int().positive().nullish(),
  temperature: z.number().min(0).nullish(),
  top_p: z.number().gt(0).max(1).nullish(),
  stop: z.union([z.string(), z.array(z.string())]).nullish(),
  seed: z.number().int().nullish(),
  n: z.number().int().min(1).max(16).nullish(),
  stream: z.boolean().nullish(),
  stream_options: z.object({ include_usage: z.boolean().nullish() }).loose().nullish(),
  /** How many alternatives to list per completion token; 0 lists the sampled token alone. */
  logprobs: z.number().int().nullish(),
  /** The same for each prompt token; -1 asks for the whole vocabulary. */
  prompt_logprobs: z.number().int().nullish(),
  return_token_ids: z.boolean().nullish(),
  add_special_tokens: z.boolean().nullish(),
  skip_special_tokens: z.boolean().nullish(),
});
type CompletionRequest = z.infer<typeof CompletionRequestSchema>;

/** vLLM's own refusals of logprob settings, with its wording. */
function logprobsRefusal(request: CompletionRequest): string | null {
  const k = request.prompt_logprobs;
  if (k !== null && k !== undefined) {
    if (request.stream && (k > 0 || k === -1))
      return "`prompt_logprobs` are not available when `stream=True`.";
    if (k < -1) return "`prompt_logprobs` must be a positive value or -1.";
  }
  if ((request.logprobs ?? 0) < 0) return "`logprobs` must be a positive value.";
  return null;
}

export async function completions(
  host: Host,
  req: IncomingMessage,
  res: ServerResponse,
  body: string,
): Promise<void> {
  let parsed: CompletionRequest;
  try {
    parsed = CompletionRequestSchema.parse(JSON.parse(body));
  } catch (error) {
    return sendBadRequest(res, error);
  }
  const notServed = unknownModel(parsed.model);
  if (notServed !== null) {
    host.ledger.count(parsed.model, "error_404");
    return sendError(res, 404, notServed, "NotFoundError");
  }
  const refusal = logprobsRefusal(parsed);
  if (refusal !== null) return sendError(res, 400, refusal);
  const { name, directives } = modelOf(host, parsed.model);
  const vocabulary = vocabularyFor(directives);
  const sent =
    typeof parsed.prompt === "string" ? vocabulary.toWire(tokenize(parsed.prompt)) : parsed.prompt;
  const prompt = vocabulary.fromWire(sent);
  const unknown = firstUnknown(prompt);
  if (unknown !== -1) return sendError(res, 400, outOfVocabulary(Number(sent[unknown])));
  // Nothing is re-rendered: the model sees the ids the client sent, reasoning and all.
  const { messages, open, tools } = parseChatML(detokenize(prompt));
  const continues = open?.role === "assistant";
  const conversation = open !== null && !continues ? [...messages, open] : messages;
  const prefix = continues ? (open?.content ?? "") : "";
  const seed = parsed.seed ?? undefined;
  const key = `${parsed.model}|${hashString(JSON.stringify(prompt))}|${seed ?? ""}`;
  const random = seededRandom(seed ?? Math.floor(Math.random() * 2 ** 31));
  const stream = parsed.stream === true;
  host.ledger.noteArrival(conversation);
  const admission = await admit(host, req, res, {
    model: parsed.model,
    directives,
    key,
    turn: conversation.filter((m) => m.role === "assistant").length,
    promptLength: prompt.length,
    prompt,
    random,
    stream,
    malformed: { body: '{"choices": [{"text": ', stream: 'data: {"choices": [{"text": "brok\n\n' },
  });
  if (!admission.admitted) return;
  const ask = {
    messages: conversation,
    temperature: parsed.temperature ?? 1,
    // A prompt rendered with tools asks for Qwen's calls; nothing parses them out here.
    tools,
    native: tools.length > 0,
    stop: [parsed.stop ?? []].flat(),
    budget: parsed.max_tokens === null ? Number.POSITIVE_INFINITY : (parsed.max_tokens ?? 16),
    prefix,
  };
  const choices = playChoices(parsed.n ?? 1, seed, random, (r) => complete(ask, r, directives));
  const completionTokens = choices.reduce((a, c) => a + c.ids.length, 0);
  const usage = {
    prompt_tokens: prompt.length,
    completion_tokens: completionTokens,
    total_tokens: prompt.length + completionTokens,
    // vLLM (--enable-prompt-tokens-details) and SGLang (--enable-cache-report) leave it out at 0.
    ...(admission.cachedTokens > 0
      ? { prompt_tokens_details: { cached_tokens: admission.cachedTokens } }
      : {}),
  };
  const first = choices[0];
  if (directives.record && first !== undefined) {
    host.ledger.keepAnswer(parsed.model, seed, {
      prompt_token_ids: vocabulary.toWire(prompt),
      token_ids: vocabulary.toWire(first.ids),
      logprobs: first.logprobs,
    });
  }
  const finished = () => {
    if (first !== undefined) {
      host.ledger.noteFinished(conversation, `${prefix}${first.text}`);
      admission.done(first.ids);
    }
  };
  const k = parsed.prompt_logprobs;
  const perTokenMs = (directives.trickleMs ?? host.latency.msPerToken) * host.slowFactor;
  const answer: TextAnswer = {
    id: `cmpl-sim-${hashString(key)}-${admission.attempt}`,
    created: Math.floor(Date.now() / 1000),
    model: name,
    choices,
    prompt,
    vocabulary,
    usage,
    tokenIds: parsed.return_token_ids === true && !directives.noTokenIds && host.tokenIds,
    logprobs: typeof parsed.logprobs === "number",
    promptLogprobs:
      k === null || k === undefined || stream
        ? null
        : promptLogprobs(prompt, k, directives, vocabulary),
    fault: admission.fault,
    perTokenMs,
    includeUsage: parsed.stream_options?.include_usage === true,
    onFinished: finished,
    onAbandoned: (writtenAt) => host.ledger.noteAbandoned(sessionOf(req), writtenAt),
  };
  if (!stream) {
    await sleep(perTokenMs * usage.completion_tokens);
    if (res.destroyed) return;
    finished();
    return sendJson(res, 200, textAnswerBody(answer));
  }
  await streamTextAnswer(res, answer);
}
