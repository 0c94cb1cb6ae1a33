/**
 * Qwen's tool-calling format, which vLLM's `hermes` parser reads: the tools block the chat
 * template adds to the system prompt, a call as the template writes it (and so as a Qwen model
 * generates it), a tool's reply, and the parser that turns generated calls into `tool_calls`.
 */

/** A tool as a request offers it (OpenAI's shape), as far as the template renders it. */
export interface ToolSpec {
  type?: string;
  function: { name: string; description?: string | null; parameters?: unknown; strict?: unknown };
}

/** A call read out of generated text: its arguments a JSON string, as the wire carries them. */
export interface ParsedCall {
  name: string;
  arguments: string;
}

/**
 * Python's `json.dumps` with its default separators (`", "` and `": "`), non-ASCII kept: how
 * Jinja's `tojson` writes a value in the template, and how the hermes parser writes arguments.
 */
export function pythonJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(pythonJson).join(", ")}]`;
  if (typeof value === "object" && value !== null) {
    const entries = Object.entries(value).filter(([, v]) => v !== undefined);
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}: ${pythonJson(v)}`).join(", ")}}`;
  }
  return JSON.stringify(value) ?? "null";
}

/** One call, as Qwen2.5's template writes it; several are joined with a newline. */
export function hermesCall(name: string, args: unknown): string {
  return `<tool_call>\n{"name": "${name}", "arguments": ${pythonJson(args)}}\n</tool_call>`;
}

/**
 * What the template adds to the system prompt when a request offers tools: each tool as vLLM
 * dumps it (unset fields null), then the instruction to call them in `<tool_call>` blocks.
 */
export function toolsBlock(tools: readonly ToolSpec[]): string {
  const lines = tools.map((t) => {
    const { name, description = null, parameters = null, strict = null } = t.function;
    return pythonJson({ type: "function", function: { name, description, parameters, strict } });
  });
  return (
    "\n\n# Tools\n\nYou may call one or more functions to assist with the user query.\n\n" +
    "You are provided with function signatures within <tools></tools> XML tags:\n<tools>\n" +
    `${lines.join("\n")}\n</tools>\n\nFor each function call, return a json object with function ` +
    "name and arguments within <tool_call></tool_call> XML tags:\n<tool_call>\n" +
    '{"name": <function-name>, "arguments": <args-json-object>}\n</tool_call>'
  );
}

/** The default system prompt Qwen2.5's template writes when tools come with none. */
export const DEFAULT_SYSTEM =
  "You are Qwen, created by Alibaba Cloud. You are a helpful assistant.";

/** A tool's reply as the template writes it, inside the user turn that gathers the replies. */
export const toolResponse = (content: string) => `\n<tool_response>\n${content}\n</tool_response>`;

/** The replies a rendered user turn carries, in order (for prompts read back from ChatML). */
export function toolResponses(content: string): string[] {
  return [...content.matchAll(/<tool_response>\n([\s\S]*?)\n<\/tool_response>/g)].map(
    (m) => m[1] ?? "",
  );
}

/** The tools a rendered system prompt offers, by name: what a model reading the prompt sees. */
export function toolNamesIn(system: string): string[] {
  const block = /<tools>\n([\s\S]*?)\n<\/tools>/.exec(system)?.[1] ?? "";
  return block.split("\n").flatMap((line) => {
    try {
      const name = (JSON.parse(line) as ToolSpec).function?.name;
      return typeof name === "string" ? [name] : [];
    } catch {
      return [];
    }
  });
}

// vLLM's `<tool_call>(.*?)</tool_call>|<tool_call>(.*)`: closed blocks, or one left open last.
const BLOCKS = /<tool_call>([\s\S]*?)<\/tool_call>|<tool_call>([\s\S]*)$/g;
/** A call whose arguments do not parse: its name, then whatever it wrote of them. */
const BROKEN = /^\{\s*"name"\s*:\s*"([^"]+)"\s*,\s*"arguments"\s*:\s*([\s\S]*)$/;

/**
 * The calls in a completion, or null to leave it text. A call the model left open when it ended
 * its turn (`ended`) goes out with the arguments it wrote, valid JSON or not: the malformed native
 * call clients must survive (vLLM's hermes parser returns such output as text when it does not
 * stream, and streams the start of the arguments when it does). Cut by the token budget, or any
 * other block that does not parse, the whole stays text, as the hermes parser leaves it.
 */
export function parseToolCalls(
  text: string,
  ended: boolean,
): { content: string; calls: ParsedCall[] } | null {
  const calls: ParsedCall[] = [];
  for (const [, closed, open] of text.matchAll(BLOCKS)) {
    const body = (closed ?? open ?? "").trim();
    try {
      const call = JSON.parse(body) as { name?: unknown; arguments?: unknown };
      if (typeof call.name !== "string") return null;
      calls.push({ name: call.name, arguments: pythonJson(call.arguments ?? {}) });
    } catch {
      const broken = open !== undefined && ended ? BROKEN.exec(body) : null;
      if (broken === null) return null;
      calls.push({ name: broken[1] ?? "", arguments: broken[2] ?? "" });
    }
  }
  if (calls.length === 0) return null;
  return { content: text.slice(0, text.indexOf("<tool_call>")).trim(), calls };
}
