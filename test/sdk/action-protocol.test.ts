import { describe, expect, it } from "vitest";
import { z } from "zod";
import { describeToolProblems, parseAction } from "../../src/sdk";

const tools = {
  lookup: z.strictObject({ id: z.string() }),
  ping: z.strictObject({}),
};

describe("the plain-text action protocol", () => {
  it("parses tool-call blocks and keeps the text outside them", () => {
    const parsed = parseAction(
      'Let me check. <tool_call>{"name": "lookup", "arguments": {"id": "A1"}}</tool_call>\n<tool_call>{"name":"ping"}</tool_call>',
      tools,
    );
    expect(parsed.calls).toEqual([
      { name: "lookup", arguments: { id: "A1" } },
      { name: "ping", arguments: {} },
    ]);
    expect(parsed.problems).toEqual([]);
    expect(parsed.text).toBe("Let me check.");
  });

  it("treats an action without blocks as a plain reply", () => {
    expect(parseAction("All done!", tools)).toEqual({ calls: [], problems: [], text: "All done!" });
  });

  it("reports malformed JSON instead of throwing", () => {
    const parsed = parseAction("<tool_call>{name: lookup}</tool_call>", tools);
    expect(parsed.calls).toEqual([]);
    expect(parsed.problems).toHaveLength(1);
    expect(parsed.problems[0]).toMatch(/^tool call 1: not valid JSON/);
  });

  it("names an unknown tool and lists the ones available", () => {
    const parsed = parseAction(
      '<tool_call>{"name": "delete_all", "arguments": {}}</tool_call>',
      tools,
    );
    expect(parsed.problems).toEqual([
      'tool call 1: unknown tool "delete_all" (available: lookup, ping)',
    ]);
  });

  it("validates arguments against the tool's schema, naming the field", () => {
    const parsed = parseAction(
      '<tool_call>{"name": "lookup", "arguments": {"id": 7}}</tool_call>',
      tools,
    );
    expect(parsed.problems[0]).toMatch(/tool call 1 \(lookup\): .*id/s);
  });

  it("accepts arguments sent as a JSON string, as the OpenAI wire format does", () => {
    const parsed = parseAction(
      '<tool_call>{"name": "lookup", "arguments": "{\\"id\\": \\"B2\\"}"}</tool_call>',
      tools,
    );
    expect(parsed.calls).toEqual([{ name: "lookup", arguments: { id: "B2" } }]);
  });

  it("reports non-object calls and missing names", () => {
    expect(parseAction("<tool_call>[1, 2]</tool_call>", tools).problems[0]).toMatch(/JSON object/);
    expect(parseAction('<tool_call>{"arguments": {}}</tool_call>', tools).problems[0]).toMatch(
      /"name" must be a tool name/,
    );
  });

  it("reports a block that is never closed", () => {
    const parsed = parseAction('Sure. <tool_call>{"name": "ping"', tools);
    expect(parsed.problems).toEqual(["a <tool_call> block is not closed with </tool_call>"]);
    expect(parsed.text).toBe("Sure.");
  });

  it("reads native OpenAI tool_calls on an assistant message too", () => {
    const parsed = parseAction(
      {
        role: "assistant",
        content: "",
        tool_calls: [
          { id: "c1", type: "function", function: { name: "lookup", arguments: '{"id":"C3"}' } },
          { id: "c2", type: "function", function: { name: "lookup", arguments: "{oops" } },
        ],
      },
      tools,
    );
    expect(parsed.calls).toEqual([{ name: "lookup", arguments: { id: "C3" } }]);
    expect(parsed.problems[0]).toMatch(/^native tool call 2: "arguments" is not valid JSON/);
  });

  it("turns problems into a reply that tells the model what to fix", () => {
    const reply = describeToolProblems(["tool call 1: not valid JSON (x)"]);
    expect(reply).toContain("- tool call 1: not valid JSON (x)");
    expect(reply).toContain("<tool_call>");
  });
});
