/**
 * Scripted players for the built-in environments, playing like a weak model would: right most of
 * the time, with mistakes that grow with the temperature, so rewards vary inside a group.
 * Temperature 0 plays perfectly. They read only the conversation, as a real model would.
 */

import type { Random } from "../utils/random";
import type { TemplateMessage } from "./chat-template";
import { hermesCall, toolResponses } from "./hermes";

/** A message as the player reads it: what the chat template reads, native calls and all. */
export type SimMessage = TemplateMessage;

export interface PlayContext {
  messages: readonly SimMessage[];
  random: Random;
  temperature: number;
  /** The tools the request offers for native calls, by name; none for a text protocol. */
  tools: readonly string[];
  /**
   * Whether the host parses calls out into `tool_calls` (tools offered, or `+native`): the model
   * then writes them as Qwen was trained to (hermes.ts), and can make several in one action.
   */
  native: boolean;
}

const lastMatch = (text: string, pattern: RegExp) => [...text.matchAll(pattern)].at(-1)?.[1];

/** Noisy binary search on the higher/lower hints; sometimes forgets the format or a hint. */
function guessNumber({ messages, random, temperature }: PlayContext): string {
  let [low, high] = [1, 100];
  messages.forEach((m, i) => {
    if (m.role !== "assistant") return;
    const guess = Number(lastMatch(m.content, /<guess>\s*(\d+)\s*<\/guess>/g));
    const reply = messages[i + 1]?.content ?? "";
    if (!Number.isInteger(guess)) return;
    if (/\bhigher\b/.test(reply)) low = Math.max(low, guess + 1);
    if (/\blower\b/.test(reply)) high = Math.min(high, guess - 1);
  });
  if (low > high) [low, high] = [1, 100];
  const middle = Math.floor((low + high) / 2);
  if (random() < 0.07 * temperature) return `I think the number is ${middle}.`;
  if (random() < 0.08 * temperature) return `<guess>${1 + Math.floor(random() * 100)}</guess>`;
  const spread = ((high - low) / 3) * temperature;
  const guess = Math.min(high, Math.max(low, Math.round(middle + (random() * 2 - 1) * spread)));
  return `Narrowing it down: <guess>${guess}</guess>`;
}

function textCall(name: string, args: object): string {
  return `<tool_call>${JSON.stringify({ name, arguments: args })}</tool_call>`;
}

/** A call cut off in its arguments (after the email's `@`), as a model that stopped mid-call. */
function cutShort(call: string): string {
  const args = call.indexOf('"arguments": ') + '"arguments": '.length;
  const at = call.indexOf("@", args);
  return call.slice(0, at === -1 ? args + 2 : at + 1);
}

interface ToolResult {
  name: string;
  result: unknown;
}

/** The text protocol's results: `<tool_result>` blocks of `{name, result}` in user turns. */
function textResults(messages: readonly SimMessage[]): ToolResult[] {
  return messages.flatMap((m) => {
    const block = lastMatch(m.content, /<tool_result>([\s\S]*?)<\/tool_result>/g);
    if (m.role !== "user" || block === undefined) return [];
    try {
      return JSON.parse(block) as ToolResult[];
    } catch {
      return [];
    }
  });
}

/** An action's calls: its `tool_calls`, or the `<tool_call>` blocks of a turn read back as text. */
function callsOf(m: SimMessage): { id?: string; name: string }[] {
  if (m.tool_calls?.length) return m.tool_calls.map((c) => ({ id: c.id, name: c.function.name }));
  return [...m.content.matchAll(/<tool_call>\s*\{\s*"name"\s*:\s*"([^"]+)"/g)].map((c) => ({
    name: c[1] ?? "",
  }));
}

/** A tool's reply as the model reads it: JSON when it is, else text (an error, say). */
function replyValue(content: string): unknown {
  try {
    return JSON.parse(content);
  } catch {
    return content;
  }
}

/**
 * Native results: each `tool` message (or `<tool_response>` block, in a prompt read back from
 * ChatML) answers a call of the action before it, the one with its `tool_call_id` or the next.
 */
function nativeResults(messages: readonly SimMessage[]): ToolResult[] {
  const results: ToolResult[] = [];
  let calls: { id?: string; name: string }[] = [];
  let answered = 0;
  for (const m of messages) {
    if (m.role === "assistant") {
      calls = callsOf(m);
      answered = 0;
    }
    const replies =
      m.role === "tool" ? [m.content] : m.role === "user" ? toolResponses(m.content) : [];
    for (const reply of replies) {
      const call = calls.find((c) => c.id !== undefined && c.id === m.tool_call_id);
      results.push({ name: (call ?? calls[answered])?.name ?? "", result: replyValue(reply) });
      answered++;
    }
  }
  return results;
}

/**
 * Authenticates, looks the orders up, resolves; sometimes skips authentication or picks wrong.
 * Calling natively it also sometimes batches the lookup with the check, or breaks off mid-call.
 */
function toolAgent({ messages, random, temperature, native }: PlayContext): string {
  const call = native ? hermesCall : textCall;
  const request = messages.find((m) => m.role === "user")?.content ?? "";
  const email = /[\w.+-]+@[\w-]+(\.[\w-]+)+/.exec(request)?.[0] ?? "";
  const zip = /ZIP (\d{5})/i.exec(request)?.[1] ?? "";
  const actions = messages.filter((m) => m.role === "assistant").length;
  const results = [...textResults(messages), ...nativeResults(messages)];
  const resolved = results.find((r) =>
    /"status":"(refunded|cancelled)"/.test(JSON.stringify(r.result)),
  );
  if (resolved || actions >= 6)
    return resolved ? "Done: your request has been handled." : "Sorry, I could not finish this.";
  const verified = results.some(
    (r) => r.name === "verify_identity" && JSON.stringify(r.result).includes('"verified":true'),
  );
  if (!verified) {
    if (actions === 0 && random() < 0.15 * temperature) return call("list_orders", {});
    if (random() < 0.05 * temperature)
      return native
        ? cutShort(hermesCall("verify_identity", { email, zip }))
        : '<tool_call>{"name": "verify_identity", "arguments": {"email": ';
    const verify = call("verify_identity", { email, zip });
    if (native && random() < 0.2 * temperature) return `${verify}\n${call("list_orders", {})}`;
    return verify;
  }
  const listed = results.findLast((r) => r.name === "list_orders" && Array.isArray(r.result));
  if (listed === undefined) return call("list_orders", {});
  const orders = listed.result as { id: string; item: string }[];
  const named = orders.find((o) => request.toLowerCase().includes(o.item.toLowerCase()));
  const pick =
    named && random() >= 0.15 * temperature ? named : orders[Math.floor(random() * orders.length)];
  if (pick === undefined) return "Sorry, I found no orders.";
  return /cancel/i.test(request)
    ? call("cancel_order", { order_id: pick.id })
    : call("refund_order", { order_id: pick.id, reason: "damaged on arrival" });
}

/** + - * / and parentheses, by recursive descent; null for anything else. */
export function evaluateArithmetic(expression: string): number | null {
  const tokens = expression.match(/\d+(\.\d+)?|[-+*/()]/g) ?? [];
  if (tokens.join("") !== expression.replace(/\s+/g, "")) return null;
  let at = 0;
  const peek = () => tokens[at];
  const atom = (): number => {
    const token = tokens[at++];
    if (token === "(") {
      const value = sum();
      at++;
      return value;
    }
    if (token === "-") return -atom();
    return Number(token);
  };
  const product = (): number => {
    let value = atom();
    while (peek() === "*" || peek() === "/")
      value = tokens[at++] === "*" ? value * atom() : value / atom();
    return value;
  };
  const sum = (): number => {
    let value = product();
    while (peek() === "+" || peek() === "-")
      value = tokens[at++] === "+" ? value + product() : value - product();
    return value;
  };
  const value = sum();
  return at === tokens.length && Number.isFinite(value) ? value : null;
}

/** Works arithmetic out, occasionally off by one; admits it does not know anything else. */
function exactAnswer({ messages, random, temperature }: PlayContext): string {
  const question = messages.findLast((m) => m.role === "user")?.content ?? "";
  const text = question
    .replace(/(\d+(?:\.\d+)?)% of (\d+(?:\.\d+)?)/i, "($1 * $2 / 100)")
    .replace(/(\d+) to the power of (\d+)/i, (_, a, b) => String(Number(a) ** Number(b)))
    .replace(/(?:the )?square root of (\d+)/i, (_, a) => String(Math.sqrt(Number(a))))
    .replace(/(\d+) squared/i, "($1 * $1)");
  const expression = /what is ([-+*/().\d\s]+)\??/i.exec(text)?.[1]?.trim();
  const value = expression ? evaluateArithmetic(expression) : null;
  if (value === null) return "<answer>I don't know</answer>";
  const slip = random() < 0.15 * temperature ? 1 : 0;
  return `The result is <answer>${Number((value + slip).toFixed(6))}</answer>`;
}

/**
 * A scripted player, chosen by what the opening messages ask for. To make the simulator play
 * a new environment, add one here: `recognises` looks for something only that environment's
 * prompt says (its action format, say) or the tools it offers, `play` answers from the
 * conversation alone.
 */
export interface Player {
  /** The environment it was written for, for messages. */
  env: string;
  /** `tools` are the names of the tools offered for native calls. */
  recognises(prompt: string, tools: readonly string[]): boolean;
  play(context: PlayContext): string;
}

export const PLAYERS: readonly Player[] = [
  { env: "guess-number", recognises: (p) => p.includes("<guess>"), play: guessNumber },
  {
    env: "tool-agent",
    recognises: (p, tools) => p.includes("<tool_call>") || tools.includes("verify_identity"),
    play: toolAgent,
  },
  { env: "exact-answer", recognises: (p) => p.includes("<answer>"), play: exactAnswer },
];

/** What the simulator answers a prompt no player recognises: it says so, and what to do. */
export const UNKNOWN_TASK_ANSWER = `I am edgeroll's simulated model and have no player for this task: I play ${PLAYERS.map((p) => p.env).join(", ")}. Add a player in src/sim/policies.ts, or run against a real model (npm run dev -- --inference-url <url>).`;

/** Picks the player from what the prompt asks for. */
export function playTurn(context: PlayContext): string {
  const prompt = context.messages
    .filter((m) => m.role !== "assistant")
    .slice(0, 2)
    .map((m) => m.content)
    .join("\n");
  const player = PLAYERS.find((p) => p.recognises(prompt, context.tools));
  return player ? player.play(context) : UNKNOWN_TASK_ANSWER;
}
