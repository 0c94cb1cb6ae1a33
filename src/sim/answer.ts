/**
 * How the simulator sends a chat completion: one JSON body, or server-sent events in vLLM's
 * shape — the prompt's token ids in the first chunk, two tokens of text a chunk with their ids
 * and logprobs (stream-pieces.ts), the end-of-turn token in the last; or native tool calls as
 * vLLM's tool parser streams them — with the stream faults (`cut`, `stall`) either way.
 */
import type { ServerResponse } from "node:http";
import { detokenize, IM_END } from "./chat-template";
import type { Fault } from "./directives";
import { streamPieces } from "./stream-pieces";
import { logprobsField } from "./token-answer";
import type { Vocabulary } from "./vocabulary";

export interface NativeCall {
  id: string;
  name: string;
  arguments: string;
}

export interface Choice {
  /** The visible content (tool calls taken out when they go as native `tool_calls`). */
  text: string;
  finishReason: "stop" | "length" | "tool_calls";
  /** The stop string that ended it, if one did (vLLM's `stop_reason`). */
  stopString: string | null;
  toolCalls: NativeCall[];
  /**
   * What the model produced, in tokens: the training truth, whatever is parsed out of it (a stop
   * string the text leaves out is in them).
   */
  ids: number[];
  logprobs: number[];
}

/** Which token fields the request asked for, and where this host puts the prompt's ids. */
export interface TokenFieldsAsked {
  ids: boolean;
  logprobs: boolean;
  promptOnChoice: boolean;
}

/** OpenAI's usage, with the cached prompt tokens when there are any. */
export interface SimUsage {
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
  prompt_tokens_details?: { cached_tokens: number };
}

export interface Answer {
  id: string;
  created: number;
  model: string;
  choices: Choice[];
  /** The simulator's own ids, as the choices' are; `vocabulary` puts them on the wire. */
  prompt: number[];
  vocabulary: Vocabulary;
  usage: SimUsage;
  fields: TokenFieldsAsked;
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

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const tokenText = (id: number) => detokenize([id]);

export function answerBody(a: Answer) {
  return {
    id: a.id,
    object: "chat.completion",
    created: a.created,
    model: a.model,
    choices: a.choices.map((c, index) => ({
      index,
      message: {
        role: "assistant",
        content: c.toolCalls.length > 0 && c.text === "" ? null : c.text,
        ...(c.toolCalls.length > 0
          ? {
              tool_calls: c.toolCalls.map((t) => ({
                id: t.id,
                type: "function",
                function: { name: t.name, arguments: t.arguments },
              })),
            }
          : {}),
      },
      logprobs: a.fields.logprobs ? logprobsField(c.ids, c.logprobs, tokenText) : null,
      finish_reason: c.finishReason,
      stop_reason: c.stopString,
      ...(a.fields.ids
        ? {
            token_ids: a.vocabulary.toWire(c.ids),
            ...(a.fields.promptOnChoice ? { prompt_token_ids: a.vocabulary.toWire(a.prompt) } : {}),
          }
        : {}),
    })),
    usage: a.usage,
    ...(a.fields.ids && !a.fields.promptOnChoice
      ? { prompt_token_ids: a.vocabulary.toWire(a.prompt) }
      : {}),
  };
}

/** One chunk of a choice's stream: its delta, the tokens it stands for (its pace), their fields. */
interface StreamStep {
  delta: object;
  tokens: number;
  /** The completion tokens the chunk hands the client (a tool-call parser holds them back). */
  carries: number;
  part: object;
}

/** A chunk's share of the completion's tokens: its ids and their logprobs, as asked. */
function tokenPart(a: Answer, c: Choice, from: number, to: number): object {
  return {
    ...(a.fields.logprobs
      ? { logprobs: logprobsField(c.ids.slice(from, to), c.logprobs.slice(from, to), tokenText) }
      : {}),
    ...(a.fields.ids ? { token_ids: a.vocabulary.toWire(c.ids.slice(from, to)) } : {}),
  };
}

function textSteps(a: Answer, choice: Choice, spoken: number): StreamStep[] {
  return streamPieces(choice, spoken).map(({ from, to, text }) => ({
    delta: { content: text },
    tokens: to - from,
    carries: to - from,
    part: tokenPart(a, choice, from, to),
  }));
}

/**
 * A tool-call parser's stream: the text before the calls, then each call, its id and name first
 * (no arguments key, as vLLM's hermes parser sends it) and its arguments in two pieces that
 * clients must stitch together. The parser holds tokens back, so they all come in the last chunk;
 * the chunks keep the pace of the tokens they stand for.
 */
function nativeSteps(choice: Choice, spoken: number): StreamStep[] {
  const deltas: object[] = (choice.text.match(/\S+\s*|\s+/g) ?? []).map((content) => ({ content }));
  for (const [index, call] of choice.toolCalls.entries()) {
    const head = { index, id: call.id, type: "function", function: { name: call.name } };
    const half = Math.ceil(call.arguments.length / 2);
    deltas.push({ tool_calls: [head] });
    for (const piece of [call.arguments.slice(0, half), call.arguments.slice(half)])
      deltas.push({ tool_calls: [{ index, function: { arguments: piece } }] });
  }
  return deltas.map((delta) => ({ delta, tokens: spoken / deltas.length, carries: 0, part: {} }));
}

export async function streamAnswer(res: ServerResponse, a: Answer): Promise<void> {
  res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" });
  const send = (chunk: object) =>
    res.write(
      `data: ${JSON.stringify({ id: a.id, object: "chat.completion.chunk", created: a.created, model: a.model, ...chunk })}\n\n`,
    );
  for (const [index, choice] of a.choices.entries()) {
    // The prompt's ids come once, in the first chunk, at the top level (vLLM).
    send({
      choices: [
        { index, delta: { role: "assistant", content: "" }, logprobs: null, finish_reason: null },
      ],
      ...(a.fields.ids && index === 0 ? { prompt_token_ids: a.vocabulary.toWire(a.prompt) } : {}),
    });
    // Text as it is generated, two tokens a chunk; the end-of-turn token comes in the last.
    const spoken = choice.ids.at(-1) === IM_END ? choice.ids.length - 1 : choice.ids.length;
    const native = choice.toolCalls.length > 0;
    const steps = native ? nativeSteps(choice, spoken) : textSteps(a, choice, spoken);
    const writtenAt: number[] = [];
    for (const [i, step] of steps.entries()) {
      if (a.fault === "cut" && i >= steps.length / 2) {
        res.destroy();
        return;
      }
      if (a.fault === "stall" && i >= 1) return; // headers and a first chunk, then nothing
      await sleep(a.perTokenMs * step.tokens);
      if (res.destroyed) {
        a.onAbandoned(writtenAt);
        return;
      }
      send({ choices: [{ index, delta: step.delta, finish_reason: null, ...step.part }] });
      writtenAt.push(...Array<number>(step.carries).fill(Date.now()));
    }
    const rest = native ? 0 : spoken;
    send({
      choices: [
        {
          index,
          delta: { content: "" },
          finish_reason: choice.finishReason,
          stop_reason: choice.stopString,
          ...tokenPart(a, choice, rest, choice.ids.length),
        },
      ],
    });
  }
  if (a.includeUsage) send({ choices: [], usage: a.usage });
  a.onFinished();
  res.end("data: [DONE]\n\n");
}
