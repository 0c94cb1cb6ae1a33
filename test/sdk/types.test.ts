import { describe, expect, it } from "vitest";
import {
  ChatMessageSchema,
  EnvironmentStepResultSchema,
  parseDatasetJsonl,
  RewardResultSchema,
  rewardSuccess,
  TaskExampleSchema,
} from "../../src/sdk";

describe("wire schemas", () => {
  it("TaskExample: id and input required, output and metadata optional, nothing else", () => {
    expect(TaskExampleSchema.safeParse({ id: "a", input: "q" }).success).toBe(true);
    expect(TaskExampleSchema.safeParse({ input: "q" }).success).toBe(false);
    expect(TaskExampleSchema.safeParse({ id: "a", input: "q", answer: 1 }).success).toBe(false);
  });

  it("ChatMessage: OpenAI roles and snake_case fields; tool_calls only on assistant messages", () => {
    const call = { id: "c", type: "function", function: { name: "f", arguments: "{}" } };
    expect(
      ChatMessageSchema.safeParse({ role: "assistant", content: "", tool_calls: [call] }).success,
    ).toBe(true);
    expect(
      ChatMessageSchema.safeParse({ role: "tool", content: "r", tool_call_id: "c" }).success,
    ).toBe(true);
    expect(
      ChatMessageSchema.safeParse({ role: "user", content: "", tool_calls: [call] }).success,
    ).toBe(false);
    expect(
      ChatMessageSchema.safeParse({ role: "user", content: "x", tool_call_id: "c" }).success,
    ).toBe(false);
    expect(ChatMessageSchema.safeParse({ role: "robot", content: "x" }).success).toBe(false);
    expect(ChatMessageSchema.safeParse({ role: "user" }).success).toBe(false);
  });

  it("RewardResult: a finite score; success is score >= threshold, unknown without one", () => {
    expect(RewardResultSchema.safeParse({ score: Number.NaN }).success).toBe(false);
    expect(RewardResultSchema.safeParse({ score: Number.POSITIVE_INFINITY }).success).toBe(false);
    const reward = RewardResultSchema.parse({ score: 0.8, threshold: 0.8 });
    expect(reward.metadata).toEqual({});
    expect(rewardSuccess(reward)).toBe(true);
    expect(rewardSuccess({ score: 0.7, threshold: 0.8, metadata: {} })).toBe(false);
    expect(rewardSuccess({ score: 0.7, metadata: {} })).toBeNull();
  });

  it("EnvironmentStepResult: done defaults to true, messages to none", () => {
    expect(EnvironmentStepResultSchema.parse({})).toEqual({
      done: true,
      messages: [],
      metadata: {},
    });
  });
});

describe("dataset JSONL", () => {
  it("reads one example per line, skipping blank lines", () => {
    const { examples, problems } = parseDatasetJsonl(
      '{"id": "a", "input": "x"}\n\n{"id": "b", "input": "y", "output": 2}\n',
    );
    expect(problems).toEqual([]);
    expect(examples.map((e) => e.id)).toEqual(["a", "b"]);
  });

  it("names rows without an id after their line so reruns find them again", () => {
    const { examples } = parseDatasetJsonl('{"input": "x"}\n{"input": "y"}', "d.jsonl");
    expect(examples.map((e) => e.id)).toEqual(["line-1", "line-2"]);
  });

  it("reports bad rows by line (and id, when they have one) and keeps the good ones", () => {
    const { examples, problems } = parseDatasetJsonl(
      '{"id": "a", "input": "x"}\n{oops\n{"id": "a", "input": "z"}\n{"id": "c"}',
      "d.jsonl",
    );
    expect(examples.map((e) => e.id)).toEqual(["a"]);
    expect(problems[0]).toMatch(/^d\.jsonl:2: not valid JSON/);
    expect(problems[1]).toBe('d.jsonl:3: duplicate id "a"');
    expect(problems[2]).toMatch(/^d\.jsonl:4 \(id "c"\): .*input/s);
  });
});
