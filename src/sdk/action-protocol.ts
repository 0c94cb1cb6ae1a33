/**
 * The plain-text action protocol: `<tool_call>{"name": ..., "arguments": {...}}</tool_call>`
 * blocks (and OpenAI-style native `tool_calls`). A bad call is reported back to the model as
 * a problem to fix, never thrown: a malformed action is data, not a crash.
 */
import type { z } from "zod";
import { describeZodError } from "./errors";
import type { ChatMessage } from "./types";

/** Argument schemas by tool name: the tools an environment offers. */
export type ToolSchemas = Readonly<Record<string, z.ZodType<Record<string, unknown>>>>;

export interface ParsedToolCall {
  name: string;
  arguments: Record<string, unknown>;
}

export interface ParsedAction {
  /** Calls that named a known tool with valid arguments, in order. */
  calls: ParsedToolCall[];
  /** One line per rejected call, saying what was wrong. */
  problems: string[];
  /** The text outside any tool-call block, trimmed: the reply when there are no calls. */
  text: string;
}

const BLOCK = /<tool_call>([\s\S]*?)<\/tool_call>/g;
const OPEN_TAG = "<tool_call>";

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function parseJson(text: string): { ok: true; value: unknown } | { ok: false; error: string } {
  try {
    return { ok: true, value: JSON.parse(text) };
  } catch (error) {
    return { ok: false, error: error instanceof Error ? error.message : String(error) };
  }
}

/** Validates one call's name and arguments against the tool schemas. */
function checkCall(
  label: string,
  name: unknown,
  rawArguments: unknown,
  tools: ToolSchemas,
): ParsedToolCall | string {
  if (typeof name !== "string" || name === "") return `${label}: "name" must be a tool name`;
  const schema = tools[name];
  if (schema === undefined) {
    return `${label}: unknown tool "${name}" (available: ${Object.keys(tools).join(", ")})`;
  }
  let args: unknown = rawArguments ?? {};
  // Models often emit arguments as a JSON string, as the OpenAI wire format does.
  if (typeof args === "string") {
    const parsed = parseJson(args);
    if (!parsed.ok) return `${label}: "arguments" is not valid JSON (${parsed.error})`;
    args = parsed.value;
  }
  if (!isRecord(args)) return `${label}: "arguments" must be an object`;
  const checked = schema.safeParse(args);
  if (!checked.success) return `${label} (${name}): ${describeZodError(checked.error)}`;
  return { name, arguments: checked.data };
}

function collect(outcome: ParsedToolCall | string, into: ParsedAction): void {
  if (typeof outcome === "string") into.problems.push(outcome);
  else into.calls.push(outcome);
}

/** Parses an action's tool calls: text blocks in its content, then native `tool_calls`. */
export function parseAction(action: string | ChatMessage, tools: ToolSchemas): ParsedAction {
  const content = typeof action === "string" ? action : action.content;
  const result: ParsedAction = { calls: [], problems: [], text: "" };
  let blockNumber = 0;
  for (const match of content.matchAll(BLOCK)) {
    blockNumber++;
    const label = `tool call ${blockNumber}`;
    const json = parseJson((match[1] ?? "").trim());
    if (!json.ok) {
      result.problems.push(`${label}: not valid JSON (${json.error})`);
    } else if (!isRecord(json.value)) {
      result.problems.push(`${label}: must be a JSON object with "name" and "arguments"`);
    } else {
      collect(checkCall(label, json.value.name, json.value.arguments, tools), result);
    }
  }
  const outside = content.replace(BLOCK, "");
  if (outside.includes(OPEN_TAG)) {
    result.problems.push("a <tool_call> block is not closed with </tool_call>");
  }
  result.text = outside.split(OPEN_TAG)[0]?.trim() ?? "";

  if (typeof action !== "string") {
    for (const [i, call] of (action.tool_calls ?? []).entries()) {
      collect(
        checkCall(`native tool call ${i + 1}`, call.function.name, call.function.arguments, tools),
        result,
      );
    }
  }
  return result;
}

/** The environment's reply to rejected calls: what went wrong and the expected format. */
export function describeToolProblems(problems: readonly string[]): string {
  return [
    "Your tool call could not be run:",
    ...problems.map((p) => `- ${p}`),
    'Call a tool as <tool_call>{"name": "<tool>", "arguments": {...}}</tool_call>.',
  ].join("\n");
}
