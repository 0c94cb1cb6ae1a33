/**
 * tool-agent-native: the tool-agent store task with native tool calling. The tools go to the
 * host as OpenAI function definitions; the host's parser turns the model's calls into
 * `tool_calls`, each answered by a `role: "tool"` message with its `tool_call_id`. Graded on
 * the same behaviours as the text version. Malformed arguments are data: the call's answer says
 * what is wrong, and the model can try again.
 */
import { z } from "zod";
import {
  type ChatMessage,
  type EnvironmentStepResultInput,
  goldTranscript,
  parseAction,
  replayStep,
  type TaskExample,
  type ToolDefinition,
} from "../sdk";
import { type ActionCall, goldPlan, storeOf, TOOLS, ToolAgent, taskOf } from "./tool-agent";

const DESCRIPTIONS: Record<keyof typeof TOOLS, string> = {
  verify_identity: "Confirm who the customer is; required before anything else.",
  list_orders: "The customer's orders.",
  get_order: "One order.",
  refund_order: "Refund a delivered order.",
  cancel_order: "Cancel an order still processing.",
};

/** A tool's arguments as the JSON Schema object hosts take (without the `$schema` marker). */
function parametersOf(schema: z.ZodType): ToolDefinition["function"]["parameters"] {
  const { $schema: _dialect, ...parameters } = z.toJSONSchema(schema) as Record<string, unknown>;
  return { ...parameters, type: "object" };
}

/** Each native call on its own, with its id: its arguments parsed, or why they could not be. */
function nativeCalls(action: ChatMessage): ActionCall[] {
  return (action.tool_calls ?? []).map((toolCall) => {
    const parsed = parseAction({ ...action, content: "", tool_calls: [toolCall] }, TOOLS);
    return {
      id: toolCall.id,
      call: parsed.calls[0] ?? null,
      problem: parsed.problems[0] ?? null,
    };
  });
}

const store = storeOf(nativeCalls);

export class ToolAgentNative extends ToolAgent {
  override readonly version = "1";

  override tools(): ToolDefinition[] {
    return Object.entries(TOOLS).map(([name, schema]) => ({
      type: "function",
      function: {
        name,
        description: DESCRIPTIONS[name as keyof typeof TOOLS],
        parameters: parametersOf(schema),
      },
    }));
  }

  override startEpisode(example: TaskExample): ChatMessage[] {
    const system =
      "You are a customer-support agent for an online store. Use the tools provided to help " +
      "the customer; verify their identity before anything else. When the request is " +
      "handled, reply to the customer in plain text without calling a tool.";
    return [
      { role: "system", content: system },
      { role: "user", content: example.input },
    ];
  }

  override stepEpisode(
    example: TaskExample,
    messages: readonly ChatMessage[],
    assistantResponse: string,
  ): EnvironmentStepResultInput {
    const action = messages.at(-1);
    if (!action?.tool_calls?.length) {
      // A call the host's parser could not read comes back as text (vLLM's hermes parser
      // without streaming): say so, and let the model call again, rather than end on it.
      if (assistantResponse.includes("<tool_call>"))
        return {
          done: false,
          messages: [
            {
              role: "user",
              content:
                "Your tool call could not be read: call a tool through the tools provided, with JSON arguments.",
            },
          ],
          metadata: { calls: 0, problems: 1 },
        };
      return { done: true, finalResponseText: assistantResponse, metadata: { calls: 0 } };
    }
    const { after } = replayStep(example, messages, assistantResponse, store);
    return {
      done: false,
      messages: after.latest.answers.map(({ id, content }) => ({
        role: "tool",
        tool_call_id: id,
        content: JSON.stringify(content),
      })),
      metadata: { calls: after.latest.results.length, problems: after.latest.problems.length },
    };
  }

  protected override replayed() {
    return store;
  }

  /** The gold conversation, with native calls: authenticate, look up, resolve, then tell. */
  override sftCompletion(example: TaskExample): Promise<ChatMessage[]> {
    const { calls, reply: done } = goldPlan(taskOf(example));
    return goldTranscript(this, example, (_messages, turn) => {
      const call = calls[turn.index];
      if (call === undefined) return done;
      return {
        content: "",
        toolCalls: [
          {
            id: `call_gold_${turn.index}`,
            type: "function",
            function: { name: call[0], arguments: JSON.stringify(call[1]) },
          },
        ],
      };
    });
  }
}
