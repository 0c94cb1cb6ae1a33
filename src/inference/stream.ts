/** Reassembles a streamed chat completion: content, tool calls, finish reason and usage. */
import { EventSourceParserStream } from "eventsource-parser/stream";
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

export async function readCompletionStream(body: ReadableStream<Uint8Array>): Promise<Completion> {
  const reader = body
    .pipeThrough(new TextDecoderStream())
    .pipeThrough(new EventSourceParserStream())
    .getReader();
  let content = "";
  const calls: ToolCall[] = [];
  let finishReason: string | null = null;
  let usage: Completion["usage"] = null;
  let sawDone = false;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    if (value.data === "[DONE]") {
      sawDone = true;
      break;
    }
    let json: unknown;
    try {
      json = JSON.parse(value.data);
    } catch {
      throw malformed(`a chunk is not JSON: ${value.data.slice(0, 120)}`);
    }
    if (typeof json === "object" && json !== null && "error" in json) {
      throw new InferenceError(
        "retryable",
        `inference host streamed an error: ${JSON.stringify(json.error).slice(0, 300)}`,
      );
    }
    const chunk = CompletionChunkSchema.safeParse(json);
    if (!chunk.success) throw malformed(describeZodError(chunk.error));
    usage = usageOf(chunk.data.usage) ?? usage;
    const choice = chunk.data.choices[0];
    if (choice === undefined) continue;
    content += choice.delta?.content ?? "";
    for (const part of choice.delta?.tool_calls ?? []) {
      const call = calls[part.index] ?? {
        id: "",
        type: "function",
        function: { name: "", arguments: "" },
      };
      calls[part.index] = call;
      if (part.id) call.id = part.id;
      call.function.name += part.function?.name ?? "";
      call.function.arguments += part.function?.arguments ?? "";
    }
    finishReason = choice.finish_reason ?? finishReason;
  }
  // A stream that stops before saying how it finished was cut, whatever it carried so far.
  if (!sawDone && finishReason === null)
    throw malformed("the stream ended before the completion finished");
  return { content, toolCalls: calls.filter(Boolean), finishReason, usage };
}
