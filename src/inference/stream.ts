/**
 * Reassembles a streamed completion: content, tool calls, finish reason and usage. Chat chunks
 * carry `delta.content`; a token-in completion's chunks carry the choice's `text`.
 */
import { createParser } from "eventsource-parser";
import type { ToolCall } from "../sdk";
import { type Completion, usageOf } from "./completion";
import { InferenceError, malformed as malformedBody } from "./failures";
import { TokenFieldReader } from "./token-fields";

const malformed = (detail: string) =>
  malformedBody(`malformed stream from the inference host: ${detail}`);

/** The fields edgeroll reads from a streamed chunk, all of them optional on the wire. */
interface Chunk {
  choices?: {
    text?: unknown;
    delta?: {
      content?: unknown;
      tool_calls?: {
        index?: unknown;
        id?: unknown;
        function?: { name?: unknown; arguments?: unknown };
      }[];
    };
    finish_reason?: unknown;
  }[];
  usage?: {
    prompt_tokens: number;
    completion_tokens: number;
    prompt_tokens_details?: { cached_tokens?: number | null } | null;
  } | null;
}

/**
 * What a stream had carried when it was cut short (an interrupting pause aborted it): its text,
 * how many tokens that was, and their ids and logprobs when the request asked for them.
 */
export interface PartialCompletion {
  content: string;
  /** Counted from the ids when the host sent them, else one a chunk (vLLM streams one a chunk). */
  completionTokens: number;
  tokens: { ids: number[]; logprobs: number[] } | null;
}

/** Accumulates the chunks of one streamed completion. */
class StreamedCompletion {
  /** Reads the token fields when the request asked for them. */
  readonly tokens: TokenFieldReader | null;
  content = "";
  readonly calls: ToolCall[] = [];
  finishReason: string | null = null;
  usage: Completion["usage"] = null;
  sawDone = false;
  /** Chunks that carried some of the completion (text or a tool call's). */
  chunksWithOutput = 0;

  constructor(wantTokens: boolean) {
    this.tokens = wantTokens ? new TokenFieldReader() : null;
  }

  add(data: string): void {
    if (data === "[DONE]") {
      this.sawDone = true;
      return;
    }
    let json: unknown;
    try {
      json = JSON.parse(data);
    } catch {
      throw malformed(`a chunk is not JSON: ${data.slice(0, 120)}`);
    }
    if (typeof json === "object" && json !== null && "error" in json) {
      throw new InferenceError(
        "retryable",
        `inference host streamed an error: ${JSON.stringify(json.error).slice(0, 300)}`,
      );
    }
    // One chunk per token on real servers: checked by hand, not with a schema, to stay cheap.
    const chunk = json as Chunk;
    if (
      typeof chunk !== "object" ||
      chunk === null ||
      (chunk.choices !== undefined && !Array.isArray(chunk.choices))
    ) {
      throw malformed(`a chunk is not a completion chunk: ${data.slice(0, 120)}`);
    }
    const usage = chunk.usage;
    if (
      usage &&
      typeof usage.prompt_tokens === "number" &&
      typeof usage.completion_tokens === "number"
    ) {
      const cached = usage.prompt_tokens_details?.cached_tokens;
      this.usage = usageOf({
        prompt_tokens: usage.prompt_tokens,
        completion_tokens: usage.completion_tokens,
        prompt_tokens_details: { cached_tokens: typeof cached === "number" ? cached : null },
      });
    }
    const choice = chunk.choices?.[0];
    this.tokens?.add(
      json as Record<string, unknown>,
      choice as Record<string, unknown> | undefined,
    );
    if (choice === undefined) return;
    const delta = choice.delta;
    const before = this.content.length;
    if (typeof delta?.content === "string") this.content += delta.content;
    else if (typeof choice.text === "string") this.content += choice.text;
    if (this.content.length > before || Array.isArray(delta?.tool_calls)) this.chunksWithOutput++;
    for (const part of Array.isArray(delta?.tool_calls) ? delta.tool_calls : []) {
      const index = typeof part.index === "number" ? part.index : 0;
      const call = this.calls[index] ?? {
        id: "",
        type: "function",
        function: { name: "", arguments: "" },
      };
      this.calls[index] = call;
      if (typeof part.id === "string" && part.id) call.id = part.id;
      if (typeof part.function?.name === "string") call.function.name += part.function.name;
      if (typeof part.function?.arguments === "string")
        call.function.arguments += part.function.arguments;
    }
    if (typeof choice.finish_reason === "string") this.finishReason = choice.finish_reason;
  }

  partial(): PartialCompletion {
    const tokens = this.tokens?.partial() ?? null;
    return {
      content: this.content,
      completionTokens: tokens?.ids.length ?? this.chunksWithOutput,
      tokens,
    };
  }
}

/** Feeds server-sent events into a completion; the first fault is kept, later events ignored. */
function collector(wantTokens: boolean) {
  const completion = new StreamedCompletion(wantTokens);
  let failure: unknown = null;
  const parser = createParser({
    onEvent: (event) => {
      if (failure !== null || completion.sawDone) return;
      try {
        completion.add(event.data);
      } catch (error) {
        failure = error;
      }
    },
  });
  return {
    completion,
    feed: (text: string) => parser.feed(text),
    failure: () => failure,
    /** What the stream carried, or why it is not a completion. */
    result(): Completion {
      if (failure !== null) throw failure;
      // A stream that stops before saying how it finished was cut, whatever it carried so far.
      if (!completion.sawDone && completion.finishReason === null) {
        throw malformed("the stream ended before the completion finished");
      }
      const { content, calls, finishReason, usage } = completion;
      const tokens = completion.tokens?.result(completion.usage) ?? null;
      return { content, toolCalls: calls.filter(Boolean), finishReason, usage, tokens };
    },
  };
}

/** Parses a whole streamed body at once (read by the runtime, no JavaScript per chunk). */
export function parseCompletionStream(text: string, wantTokens = false): Completion {
  const events = collector(wantTokens);
  events.feed(text);
  return events.result();
}

/** Where a generation's call puts the stream it is reading, if any (none before its headers). */
export interface StreamProgress {
  stream: StreamWatch | null;
}

/**
 * A stream being read, for whoever may cut it short (an interrupting pause): what has arrived so
 * far, and a way to stop once what has already arrived is read.
 */
export interface StreamWatch {
  sofar(): PartialCompletion;
  /**
   * Reads on while the host's bytes keep arriving at once (each read given DRAIN_IDLE_MS, all of
   * them DRAIN_MAX_MS), then calls `stop`, which aborts the call. Bytes the host had sent before
   * the cut but that were not yet read (a busy thread reads late) are kept, not lost.
   */
  drain(stop: () => void): void;
}

/** A drain's read that takes longer than this finds nothing already arrived: the drain stops. */
export const DRAIN_IDLE_MS = 5;
/** A drain stops after this however much keeps arriving (a host that streams without pause). */
export const DRAIN_MAX_MS = 50;

/**
 * Reads server-sent events off the body as they arrive; a broken body fails here. `watch` is
 * handed the stream while it is read, for whoever cuts the read short to see what it cut.
 */
export async function readCompletionStream(
  body: ReadableStream<Uint8Array>,
  wantTokens = false,
  watch?: (stream: StreamWatch) => void,
): Promise<Completion> {
  const events = collector(wantTokens);
  const reader = body.getReader();
  const decoder = new TextDecoder();
  // A drain: each read that brings bytes re-arms the timer; the first that does not within
  // DRAIN_IDLE_MS (or DRAIN_MAX_MS in all) calls `stop`, whose abort breaks the pending read.
  let stop: (() => void) | null = null;
  let finished = false;
  let drainEndsAt = 0;
  let timer: ReturnType<typeof setTimeout> | null = null;
  const disarm = () => {
    if (timer !== null) clearTimeout(timer);
  };
  const arm = () => {
    disarm();
    const wait = Math.max(0, Math.min(DRAIN_IDLE_MS, drainEndsAt - Date.now()));
    timer = setTimeout(() => stop?.(), wait);
  };
  watch?.({
    sofar: () => events.completion.partial(),
    drain: (then) => {
      // Read whole already: nothing to cut, the answer stands.
      if (stop !== null || finished) return;
      stop = then;
      drainEndsAt = Date.now() + DRAIN_MAX_MS;
      arm();
    },
  });
  try {
    while (events.failure() === null && !events.completion.sawDone) {
      const { done, value } = await reader.read();
      if (done) break;
      events.feed(decoder.decode(value, { stream: true }));
      if (stop !== null) arm();
    }
    disarm();
    // Read to the end after [DONE] (usually nothing left): cheaper than cancelling the body. The
    // completion is whole by then: an abort or a break in that last read loses nothing.
    try {
      while (
        events.completion.sawDone &&
        events.failure() === null &&
        !(await reader.read()).done
      ) {}
    } catch {}
  } finally {
    finished = true;
    disarm();
    if (events.failure() !== null) reader.cancel().catch(() => {});
  }
  return events.result();
}
