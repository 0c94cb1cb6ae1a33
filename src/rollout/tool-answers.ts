/**
 * Native tool calling's one rule of the transcript: every call of an action is answered by a
 * `role: "tool"` message carrying its `tool_call_id`, in the calls' order, right after the
 * action — OpenAI-style hosts refuse a history with an unanswered call. The engine keeps the
 * rule whatever the environment answered: a call it left unanswered gets an explicit "not
 * executed" message, and an answer to no call of the action is the environment's error.
 */
import type { ChatMessage, ToolCall } from "../sdk";

/** The hosts' calls, each with an id; one the host sent none for gets one unique in the episode. */
export function withCallIds(calls: readonly ToolCall[], turn: number): ToolCall[] {
  return calls.map((call, i) => (call.id === "" ? { ...call, id: `call_t${turn}_${i}` } : call));
}

export type AnsweredCalls =
  | { ok: true; messages: ChatMessage[]; notExecuted: number }
  | { ok: false; problem: string };

const notExecuted = (call: ToolCall): ChatMessage => ({
  role: "tool",
  tool_call_id: call.id,
  content: `not executed: the environment did not answer this call to ${call.function.name}`,
  metadata: { not_executed: true },
});

/** The environment's reply to `action`, with every call answered in order, or what is wrong. */
export function answerEveryCall(action: ChatMessage, reply: readonly ChatMessage[]): AnsweredCalls {
  const calls = action.tool_calls ?? [];
  const answers = new Map<string, ChatMessage>();
  for (const message of reply) {
    if (message.role !== "tool") continue;
    const id = message.tool_call_id;
    if (id === undefined) return { ok: false, problem: "a tool message has no tool_call_id" };
    if (!calls.some((c) => c.id === id))
      return {
        ok: false,
        problem: `a tool message answers "${id}", which is no call of the action (its calls: ${calls.map((c) => c.id).join(", ") || "none"})`,
      };
    if (answers.has(id)) return { ok: false, problem: `call "${id}" is answered twice` };
    answers.set(id, message);
  }
  const answered = calls.map((call) => answers.get(call.id) ?? notExecuted(call));
  return {
    ok: true,
    messages: [...answered, ...reply.filter((m) => m.role !== "tool")],
    notExecuted: calls.length - answers.size,
  };
}
