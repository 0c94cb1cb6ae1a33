// tool-agent-native through the SDK alone: native calls answered by tool messages, in order,
// malformed arguments answered as data, and the same grading as the text version.
import { describe, expect, it } from "vitest";
import { ToolAgentNative } from "../../src/environments/tool-agent-native";
import { episodeTools, runEpisode, type ToolCall, ToolDefinitionsSchema } from "../../src/sdk";

const EXAMPLE = {
  id: "tan-test",
  input:
    "Hello, Ana Ruiz here (ana.ruiz@example.com, ZIP 94107). My headphones broke; refund, please.",
  metadata: {
    customer: { name: "Ana Ruiz", email: "ana.ruiz@example.com", zip: "94107" },
    orders: [{ id: "A1012", item: "wireless headphones", status: "delivered", total: 71.53 }],
    goal: { tool: "refund_order", order_id: "A1012" },
  },
};

const call = (id: string, name: string, args: string): ToolCall => ({
  id,
  type: "function",
  function: { name, arguments: args },
});

describe("tool-agent-native", () => {
  it("declares the store's five tools as valid OpenAI function definitions", async () => {
    const tools = await episodeTools(new ToolAgentNative(), EXAMPLE);
    expect(ToolDefinitionsSchema.parse(tools).map((t) => t.function.name)).toEqual([
      "verify_identity",
      "list_orders",
      "get_order",
      "refund_order",
      "cancel_order",
    ]);
    expect(tools?.[0]?.function.parameters).toMatchObject({
      type: "object",
      required: ["email", "zip"],
    });
  });

  it("answers parallel calls in order, malformed arguments as data, and grades the result", async () => {
    const actions = [
      {
        content: "",
        toolCalls: [
          call("c1", "verify_identity", '{"email": "ana.ruiz@'),
          call("c2", "verify_identity", '{"email": "ana.ruiz@example.com", "zip": "94107"}'),
          call("c3", "list_orders", "{}"),
        ],
      },
      {
        content: "",
        toolCalls: [call("c4", "refund_order", '{"order_id": "A1012", "reason": "x"}')],
      },
      { content: "Refunded." },
    ];
    const episode = await runEpisode(new ToolAgentNative(), EXAMPLE, {
      policy: (_messages, turn) => actions[turn.index] ?? { content: "" },
    });
    const tools = episode.messages.filter((m) => m.role === "tool");
    expect(tools.map((m) => m.tool_call_id)).toEqual(["c1", "c2", "c3", "c4"]);
    expect(JSON.parse(tools[0]?.content ?? "")).toEqual({
      error: expect.stringMatching(/"arguments" is not valid JSON/),
    });
    expect(JSON.parse(tools[1]?.content ?? "")).toMatchObject({ verified: true });
    expect(JSON.parse(tools[3]?.content ?? "")).toEqual({ order_id: "A1012", status: "refunded" });
    const reward = await new ToolAgentNative().scoreEpisode(EXAMPLE, episode);
    expect(reward).toMatchObject({ score: 1 });
  });
});
