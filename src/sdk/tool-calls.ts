/**
 * Native tool calling's rules of the transcript, kept the same in the Durable Object and in the
 * SDK's own episode loop (`env check`): every call has an id unique in the episode, and every
 * call of an action is answered by a `role: "tool"` message carrying its `tool_call_id`, in the
 * calls' order, right after the action — OpenAI-style hosts refuse a history with an unanswered
 * call. Whatever the environment answered: a call it left unanswered gets an explicit "not
 * executed" message, and an answer to no call of the action is the environment's error.
 */
import type { ChatMessage, EnvironmentStepResult, ToolCall } from "./types";

/**
 * The host's calls, each with an id unique in the episode: one the host sent none for, or one
 * already used (some servers number every call "0"), gets `call_t<turn>_<i>`.
 */
export function withCallIds(
  calls: readonly ToolCall[],
  turn: number,
  transcript: readonly ChatMessage[],
): ToolCall[] {
  const used = new Set(transcript.flatMap((m) => (m.tool_calls ?? []).map((c) => c.id)));
  return calls.map((call, i) => {
    const id = call.id === "" || used.has(call.id) ? `call_t${turn}_${i}` : call.id;
    used.add(id);
    return id === call.id ? call : { ...call, id };
  });
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

/**
 * A step's result under the rule: for a native tool-calling episode, its messages with every
 * call of `action` answered in order, and how many were not (`metadata.not_executed`); a text
 * episode's, unchanged.
 */
export function answeredStep(
  native: boolean,
  action: ChatMessage,
  step: EnvironmentStepResult,
): { ok: true; step: EnvironmentStepResult } | { ok: false; problem: string } {
  if (!native) return { ok: true, step };
  const answered = answerEveryCall(action, step.messages);
  if (!answered.ok) return answered;
  const metadata =
    answered.notExecuted > 0
      ? { ...step.metadata, not_executed: answered.notExecuted }
      : step.metadata;
  return { ok: true, step: { ...step, messages: answered.messages, metadata } };
}
