/**
 * `POST /v1/chat/completions`: the messages rendered by the chat template, the scripted policy's
 * turn, and the answer in vLLM's shape (token fields, logprobs, streaming), or a fault instead.
 * A request offering `tools` is answered as vLLM with `--enable-auto-tool-choice
 * --tool-call-parser hermes` answers it: the model's `<tool_call>` blocks go out as `tool_calls`.
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import { z } from "zod";
import { hashString, type Random, seededRandom } from "../utils/random";
import { admit } from "./admission";
import { type Answer, answerBody, type Choice, streamAnswer } from "./answer";
import { complete, choices as playChoices } from "./completion";
import { unknownModel } from "./directives";
import { parseToolCalls } from "./hermes";
import { type Host, modelOf, templateFor } from "./host";
import { sendBadRequest, sendError, sendJson, sessionOf, sleep } from "./http";
import { promptIds } from "./token-answer";
import { vocabularyFor } from "./vocabulary";
import { templateMessages, WireMessageSchema, WireToolSchema } from "./wire-message";

const ChatRequestSchema = z.object({
  model: z.string().min(1),
  messages: z.array(WireMessageSchema).min(1),
  temperature: z.number().min(0).default(1),
  max_tokens: z.number().int().positive().optional(),
  max_completion_tokens: z.number().int().positive().optional(),
  stop: z.union([z.string(), z.array(z.string())]).optional(),
  n: z.number().int().min(1).max(16).default(1),
  seed: z.number().int().optional(),
  stream: z.boolean().default(false),
  stream_options: z.object({ include_usage: z.boolean().optional() }).loose().optional(),
  logprobs: z.boolean().optional(),
  top_logprobs: z.number().int().min(0).optional(),
  return_token_ids: z.boolean().optional(),
  tools: z.array(WireToolSchema).optional(),
  // "required" and a named function are parsed as "auto" is (vLLM would constrain the output).
  tool_choice: z
    .union([
      z.enum(["auto", "none", "required"]),
      z.object({ type: z.literal("function"), function: z.object({ name: z.string() }) }).loose(),
    ])
    .optional(),
});
type ChatRequest = z.infer<typeof ChatRequestSchema>;

/**
 * Natively (`tools` offered, or `+native`), the host's hermes parser takes the completion's
 * `<tool_call>` blocks out into `tool_calls`. The token ids stay those of the generated text: the
 * calls are what the model wrote, and the chat template writes them back the same way next turn.
 */
function asNativeCalls(choice: Choice, random: Random): Choice {
  const ended = choice.finishReason === "stop" && choice.stopString === null;
  const parsed = parseToolCalls(choice.text, ended);
  if (parsed === null) return choice;
  return {
    ...choice,
    text: parsed.content,
    toolCalls: parsed.calls.map((call) => ({
      id: `call_${Math.floor(random() * 1e9).toString(36)}`,
      ...call,
    })),
    finishReason: "tool_calls",
  };
}

export async function chatCompletions(
  host: Host,
  req: IncomingMessage,
  res: ServerResponse,
  body: string,
): Promise<void> {
  let parsed: ChatRequest;
  try {
    parsed = ChatRequestSchema.parse(JSON.parse(body));
  } catch (error) {
    return sendBadRequest(res, error);
  }
  const unknown = unknownModel(parsed.model);
  if (unknown !== null) {
    host.ledger.count(parsed.model, "error_404");
    return sendError(res, 404, unknown, "NotFoundError");
  }
  const { name, directives } = modelOf(host, parsed.model);
  const messages = templateMessages(parsed.messages);
  const key = `${parsed.model}|${hashString(JSON.stringify(parsed.messages))}|${parsed.seed ?? ""}`;
  const random = seededRandom(parsed.seed ?? Math.floor(Math.random() * 2 ** 31));
  host.ledger.noteArrival(messages);
  const tools = parsed.tools ?? [];
  const prompt = promptIds(messages, templateFor(host, directives), "generation-prompt", tools);
  const admission = await admit(host, req, res, {
    model: parsed.model,
    directives,
    key,
    turn: messages.filter((m) => m.role === "assistant").length,
    promptLength: prompt.length,
    prompt,
    random,
    stream: parsed.stream,
    malformed: {
      body: '{"choices": [{"message": ',
      stream: 'data: {"choices": [{"delta": {"content": "brok\n\n',
    },
    refusal:
      directives.sglang && parsed.stream && parsed.return_token_ids
        ? {
            outcome: "token_fields_refused",
            message:
              "return_token_ids is not supported with streaming on /v1/chat/completions; use non-streaming requests",
          }
        : null,
  });
  if (!admission.admitted) return;
  const budget = parsed.max_completion_tokens ?? parsed.max_tokens ?? Number.POSITIVE_INFINITY;
  const native = (directives.native || tools.length > 0) && parsed.tool_choice !== "none";
  const ask = {
    messages,
    temperature: parsed.temperature,
    tools: tools.map((t) => t.function.name),
    native,
    stop: [parsed.stop ?? []].flat(),
    budget,
  };
  const choices = playChoices(parsed.n, parsed.seed, random, (choiceRandom) => {
    const choice = complete(ask, choiceRandom, directives);
    return native ? asNativeCalls(choice, choiceRandom) : choice;
  });
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
  const vocabulary = vocabularyFor(directives);
  const perTokenMs = (directives.trickleMs ?? host.latency.msPerToken) * host.slowFactor;
  const first = choices[0];
  if (directives.record && first !== undefined) {
    host.ledger.keepAnswer(parsed.model, parsed.seed, {
      prompt_token_ids: vocabulary.toWire(prompt),
      token_ids: vocabulary.toWire(first.ids),
      logprobs: first.logprobs,
    });
  }
  const finished = () => {
    if (first !== undefined) {
      host.ledger.noteFinished(messages, first.text);
      admission.done(first.ids);
    }
  };
  const answer: Answer = {
    id: `chatcmpl-sim-${hashString(key)}-${admission.attempt}`,
    created: Math.floor(Date.now() / 1000),
    model: name,
    choices,
    prompt,
    vocabulary,
    usage,
    fields: {
      ids: parsed.return_token_ids === true && !directives.noTokenIds && host.tokenIds,
      logprobs: parsed.logprobs === true,
      // vLLM puts the prompt's ids on the response, SGLang on each choice.
      promptOnChoice: directives.sglang,
    },
    fault: admission.fault,
    perTokenMs,
    includeUsage: parsed.stream_options?.include_usage === true,
    onFinished: finished,
    onAbandoned: (writtenAt) => host.ledger.noteAbandoned(sessionOf(req), writtenAt),
  };
  if (!parsed.stream) {
    await sleep(perTokenMs * usage.completion_tokens);
    if (res.destroyed) return;
    finished();
    return sendJson(res, 200, answerBody(answer));
  }
  await streamAnswer(res, answer);
}
