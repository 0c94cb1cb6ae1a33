// Native tool calling's transcript rules (src/sdk/tool-calls.ts), the same in the Durable
// Object and in the SDK's own episode loop.
import { describe, expect, it } from "vitest";
import {
  answerEveryCall,
  answeredStep,
  type ChatMessage,
  EnvironmentContractError,
  EnvironmentMultiTurn,
  runEpisode,
  type ToolCall,
  withCallIds,
} from "../../src/sdk";

const call = (id: string, name = "f"): ToolCall => ({
  id,
  type: "function",
  function: { name, arguments: "{}" },
});
const action = (...calls: ToolCall[]): ChatMessage => ({
  role: "assistant",
  content: "",
  tool_calls: calls,
  metadata: { sampled: true },
});
const tool = (id: string, content = "ok"): ChatMessage => ({
  role: "tool",
  tool_call_id: id,
  content,
});

describe("native tool calls", () => {
  it("get ids unique in the episode: a missing one, or one the host reuses, is replaced", () => {
    const earlier = [action(call("0"))];
    const ids = withCallIds([call(""), call("0"), call("a"), call("a")], 3, earlier).map(
      (c) => c.id,
    );
    expect(ids).toEqual(["call_t3_0", "call_t3_1", "a", "call_t3_3"]);
  });

  it("are answered right after the action, in the calls' order, the rest after them", () => {
    const answered = answerEveryCall(action(call("a"), call("b")), [
      { role: "user", content: "note" },
      tool("b"),
      tool("a"),
    ]);
    expect(answered.ok && answered.messages.map((m) => m.tool_call_id ?? m.role)).toEqual([
      "a",
      "b",
      "user",
    ]);
  });

  it("left unanswered get 'not executed', counted in the step's metadata", () => {
    const step = { done: false, messages: [tool("a")], metadata: {}, finalResponseText: null };
    const answered = answeredStep(true, action(call("a"), call("b", "g")), step);
    expect(answered.ok && answered.step.messages[1]).toMatchObject({
      role: "tool",
      tool_call_id: "b",
      content: "not executed: the environment did not answer this call to g",
    });
    expect(answered.ok && answered.step.metadata).toEqual({ not_executed: 1 });
    // A text environment's step is left as it is.
    expect(answeredStep(false, action(call("a")), step)).toEqual({ ok: true, step });
  });

  it("are the environment's error when answered twice, with no id, or to no call", () => {
    const act = action(call("a"));
    const cases: [ChatMessage[], RegExp][] = [
      [[tool("a"), tool("a")], /answered twice/],
      [[{ role: "tool", content: "?" }], /has no tool_call_id/],
      [[tool("zzz")], /answers "zzz", which is no call of the action/],
    ];
    for (const [reply, problem] of cases) {
      const answered = answerEveryCall(act, reply);
      expect(answered.ok ? "" : answered.problem).toMatch(problem);
    }
  });

  it("follow the same rules in the SDK's episode loop as in the Durable Object", async () => {
    class Stray extends EnvironmentMultiTurn {
      override tools() {
        return [{ type: "function" as const, function: { name: "f" } }];
      }
      startEpisode() {
        return [{ role: "user" as const, content: "go" }];
      }
      maxEpisodeTurns() {
        return 2;
      }
      stepEpisode() {
        return { done: false, messages: [tool("nope")] };
      }
      scoreEpisode() {
        return { score: 0 };
      }
    }
    const episode = runEpisode(
      new Stray(),
      { id: "x", input: "" },
      {
        policy: () => ({ content: "", toolCalls: [call("")] }),
      },
    );
    await expect(episode).rejects.toThrow(EnvironmentContractError);
    await expect(episode).rejects.toThrow(/answers "nope"/);
  });
});
