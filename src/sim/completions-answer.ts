/**
 * How the simulator sends a text completion (`/v1/completions`) in vLLM's shape: one JSON body,
 * or server-sent events two tokens a chunk — the prompt's ids on the first, the finish reason on
 * the last — with the stream faults (`cut`, `stall`) applied as in chat.
 */
import type { ServerResponse } from "node:http";
import type { Choice, SimUsage } from "./answer";
import { detokenize } from "./chat-template";
import type { Fault } from "./directives";
import { sleep } from "./http";
import type { PromptLogprob } from "./prompt-logprobs";
import { streamPieces } from "./stream-pieces";
import type { Vocabulary } from "./vocabulary";

export interface TextAnswer {
  id: string;
  created: number;
  model: string;
  choices: Choice[];
  /** The simulator's own ids; `vocabulary` puts them on the wire. */
  prompt: number[];
  vocabulary: Vocabulary;
  usage: SimUsage;
  /** `return_token_ids`: the prompt's and the completion's ids on the choices. */
  tokenIds: boolean;
  /** `logprobs` was a number: report the completion's. */
  logprobs: boolean;
  promptLogprobs: PromptLogprob[] | null;
  fault: Fault | null;
  perTokenMs: number;
  includeUsage: boolean;
  /** Called once the answer is complete (the overhead measurement's clock). */
  onFinished: () => void;
  /**
   * The client closed the stream before its end: when each completion token it had been sent was
   * written (a benchmark tells the tokens sent before a pause from those sent after).
   */
  onAbandoned: (writtenAt: readonly number[]) => void;
}

/** vLLM's `CompletionLogProbs`, for some of a completion's tokens. */
interface CompletionLogprobs {
  text_offset: number[];
  token_logprobs: number[];
  tokens: string[];
  top_logprobs: Record<string, number>[];
}

/**
 * Each token's text, logprob and offset into the completion's text. The simulator has no
 * alternatives to offer, so each `top_logprobs` holds the sampled token alone (vLLM's answer to
 * `logprobs: 0`).
 */
function completionLogprobs(choice: Choice): CompletionLogprobs {
  const tokens = choice.ids.map((id) => detokenize([id]));
  const token_logprobs = choice.ids.map((_, i) => choice.logprobs[i] ?? 0);
  let offset = 0;
  const text_offset = tokens.map((token) => {
    const at = offset;
    offset += token.length;
    return at;
  });
  const top_logprobs = tokens.map((token, i) => ({ [token]: token_logprobs[i] ?? 0 }));
  return { text_offset, token_logprobs, tokens, top_logprobs };
}

function sliceLogprobs(all: CompletionLogprobs, from: number, to: number): CompletionLogprobs {
  return {
    text_offset: all.text_offset.slice(from, to),
    token_logprobs: all.token_logprobs.slice(from, to),
    tokens: all.tokens.slice(from, to),
    top_logprobs: all.top_logprobs.slice(from, to),
  };
}

export function textAnswerBody(a: TextAnswer) {
  return {
    id: a.id,
    object: "text_completion",
    created: a.created,
    model: a.model,
    choices: a.choices.map((c, index) => ({
      index,
      text: c.text,
      logprobs: a.logprobs ? completionLogprobs(c) : null,
      finish_reason: c.finishReason,
      stop_reason: c.stopString,
      prompt_logprobs: a.promptLogprobs,
      ...(a.tokenIds
        ? {
            prompt_token_ids: a.vocabulary.toWire(a.prompt),
            token_ids: a.vocabulary.toWire(c.ids),
          }
        : {}),
    })),
    usage: a.usage,
  };
}

export async function streamTextAnswer(res: ServerResponse, a: TextAnswer): Promise<void> {
  res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" });
  const head = { id: a.id, object: "text_completion", created: a.created, model: a.model };
  const send = (chunk: object) => res.write(`data: ${JSON.stringify({ ...head, ...chunk })}\n\n`);
  for (const [index, choice] of a.choices.entries()) {
    const logprobs = a.logprobs ? completionLogprobs(choice) : null;
    const pieces = streamPieces(choice, choice.ids.length);
    const writtenAt: number[] = [];
    for (const [i, { from, to, text }] of pieces.entries()) {
      if (a.fault === "cut" && i >= pieces.length / 2) {
        res.destroy();
        return;
      }
      if (a.fault === "stall" && i >= 1) return; // headers and a first chunk, then nothing
      await sleep(a.perTokenMs * (to - from));
      if (res.destroyed) {
        a.onAbandoned(writtenAt);
        return;
      }
      const last = i === pieces.length - 1;
      const ids = choice.ids.slice(from, to);
      send({
        choices: [
          {
            index,
            text,
            logprobs: logprobs === null ? null : sliceLogprobs(logprobs, from, to),
            finish_reason: last ? choice.finishReason : null,
            stop_reason: last ? choice.stopString : null,
            ...(a.tokenIds && i === 0 ? { prompt_token_ids: a.vocabulary.toWire(a.prompt) } : {}),
            ...(a.tokenIds ? { token_ids: a.vocabulary.toWire(ids) } : {}),
          },
        ],
      });
      writtenAt.push(...Array<number>(to - from).fill(Date.now()));
    }
  }
  if (a.includeUsage) send({ choices: [], usage: a.usage });
  a.onFinished();
  res.end("data: [DONE]\n\n");
}
