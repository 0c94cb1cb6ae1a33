/** Reassembles a streamed chat completion: content, tool calls, finish reason and usage. */
import { createParser } from "eventsource-parser";
import { describeZodError, type ToolCall } from "../sdk";
import { type Completion, CompletionChunkSchema, usageOf } from "./completion";
import { InferenceError } from "./failures";

function malformed(detail: string): InferenceError {
  return new InferenceError(
    "retryable",
    `malformed stream from the inference host: ${detail}`,
    undefined,
    {
      cause: "malformed",
    },
  );
}

/** Accumulates the chunks of one streamed completion. */
class StreamedCompletion {
  content = "";
  readonly calls: ToolCall[] = [];
  finishReason: string | null = null;
  usage: Completion["usage"] = null;
  sawDone = false;

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
    const chunk = CompletionChunkSchema.safeParse(json);
    if (!chunk.success) throw malformed(describeZodError(chunk.error));
    this.usage = usageOf(chunk.data.usage) ?? this.usage;
    const choice = chunk.data.choices[0];
    if (choice === undefined) return;
    this.content += choice.delta?.content ?? "";
    for (const part of choice.delta?.tool_calls ?? []) {
      const call = this.calls[part.index] ?? {
        id: "",
        type: "function",
        function: { name: "", arguments: "" },
      };
      this.calls[part.index] = call;
      if (part.id) call.id = part.id;
      call.function.name += part.function?.name ?? "";
      call.function.arguments += part.function?.arguments ?? "";
    }
    this.finishReason = choice.finish_reason ?? this.finishReason;
  }
}

/** Reads server-sent events off the body; the reader is driven by hand so a broken body fails here. */
export async function readCompletionStream(body: ReadableStream<Uint8Array>): Promise<Completion> {
  const completion = new StreamedCompletion();
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
  const reader = body.getReader();
  const decoder = new TextDecoder();
  try {
    while (failure === null && !completion.sawDone) {
      const { done, value } = await reader.read();
      if (done) break;
      parser.feed(decoder.decode(value, { stream: true }));
    }
  } finally {
    reader.cancel().catch(() => {});
  }
  if (failure !== null) throw failure;
  // A stream that stops before saying how it finished was cut, whatever it carried so far.
  if (!completion.sawDone && completion.finishReason === null) {
    throw malformed("the stream ended before the completion finished");
  }
  const { content, calls, finishReason, usage } = completion;
  return { content, toolCalls: calls.filter(Boolean), finishReason, usage };
}
