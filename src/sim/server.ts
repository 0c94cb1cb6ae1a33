/**
 * An OpenAI-compatible inference simulator for local runs and tests: chat completions
 * (streaming and not) played by scripted policies, real token counts, a latency model, and
 * fault injection — globally by options, or per request by directives in the model name
 * (`sim+hang`, `sim+fail:503:2`, ...).
 */
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo, Socket } from "node:net";
import { z } from "zod";
import { type Answer, answerBody, type Choice, type NativeCall, streamAnswer } from "./answer";
import { detokenize, type TemplateKind, tokenize } from "./chat-template";
import { type Directives, parseModel } from "./directives";
import { playTurn } from "./policies";
import { hashString, type Random, seededRandom } from "./random";
import { completionTokens, promptIds } from "./token-answer";

export interface LatencyModel {
  /** Time to first token, plus a share proportional to the prompt. */
  ttftMs: number;
  msPerPromptToken: number;
  msPerToken: number;
}

export interface FaultRates {
  /** Share of requests answered with one of `errorStatuses`. */
  errorRate: number;
  errorStatuses: number[];
  hangRate: number;
  malformedRate: number;
  cutRate: number;
  resetRate: number;
}

export interface SimulatorOptions {
  port?: number;
  host?: string;
  latency?: Partial<LatencyModel>;
  faults?: Partial<FaultRates>;
  /** The chat template (default ChatML; `drop-reasoning` re-renders history as Qwen3 does). */
  template?: TemplateKind;
  /** Answer `return_token_ids` (default true); false plays a host older than vLLM 0.10.2. */
  tokenIds?: boolean;
}

export interface SimulatorStats {
  requests: number;
  outcomes: Record<string, number>;
  byModel: Record<string, { requests: number; outcomes: Record<string, number> }>;
  /**
   * Pipeline time between turns, as the host sees it: from finishing generation t of an
   * episode to receiving its request t+1 (stepping the environment, persisting, queueing).
   */
  turnOverheadMs: { count: number; p50: number | null; p99: number | null; mean: number | null };
}

export interface Simulator {
  url: string;
  port: number;
  stats(): SimulatorStats;
  close(): Promise<void>;
}

const WireMessageSchema = z
  .object({
    role: z.string(),
    content: z.string().nullish(),
    tool_calls: z
      .array(z.object({ function: z.object({ name: z.string(), arguments: z.string() }) }).loose())
      .nullish(),
  })
  .loose();

const RequestSchema = z.object({
  model: z.string().min(1),
  messages: z.array(WireMessageSchema).min(1),
  temperature: z.number().min(0).default(1),
  max_tokens: z.number().int().positive().optional(),
  max_completion_tokens: z.number().int().positive().optional(),
  stop: z.union([z.string(), z.array(z.string())]).optional(),
  n: z.number().int().min(1).max(16).default(1),
  seed: z.number().int().optional(),
  stream: z.boolean().default(false),
  stream_options: z.object({ include_usage: z.boolean().optional() }).loose().optional(),
  logprobs: z.boolean().optional(),
  top_logprobs: z.number().int().min(0).optional(),
  return_token_ids: z.boolean().optional(),
});
type CompletionRequest = z.infer<typeof RequestSchema>;

const NO_FAULTS: FaultRates = {
  errorRate: 0,
  errorStatuses: [503],
  hangRate: 0,
  malformedRate: 0,
  cutRate: 0,
  resetRate: 0,
};
const NO_LATENCY: LatencyModel = { ttftMs: 0, msPerPromptToken: 0, msPerToken: 0 };

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

const TOOL_CALL = /<tool_call>\s*([\s\S]*?)\s*<\/tool_call>/g;

/** With `+native`, text tool calls go out as OpenAI `tool_calls`, as a tool-calling model's would. */
function asNativeCalls(choice: Choice, random: Random): Choice {
  const calls: NativeCall[] = [];
  for (const [, json] of choice.text.matchAll(TOOL_CALL)) {
    try {
      const call = JSON.parse(json ?? "") as { name: string; arguments?: unknown };
      const id = `call_${Math.floor(random() * 1e9).toString(36)}`;
      calls.push({ id, name: call.name, arguments: JSON.stringify(call.arguments ?? {}) });
    } catch {
      return choice; // a malformed call stays text, as a model's broken output would
    }
  }
  if (calls.length === 0) return choice;
  return {
    ...choice,
    text: choice.text.replace(TOOL_CALL, "").trim(),
    toolCalls: calls,
    finishReason: "tool_calls",
  };
}

/** What the simulator thinks aloud before acting, with `think`: Qwen3's format. */
const REASONING = "<think>\nThe conversation so far tells me what to do next.\n</think>\n\n";

const FILLER = " and the walk goes on";

/** The text made exactly `tokens` long with its end-of-turn token: padded with filler, or cut. */
function padded(text: string, tokens: number): string {
  let ids = tokenize(text);
  while (ids.length < tokens - 1) ids = tokenize(`${detokenize(ids)}${FILLER.repeat(8)}`);
  return detokenize(ids.slice(0, Math.max(0, tokens - 1)));
}

/** Plays one choice, then applies `stop` and the token budget like a real server would. */
function complete(request: CompletionRequest, random: Random, directives: Directives): Choice {
  const messages = request.messages.map((m) => ({ role: m.role, content: m.content ?? "" }));
  let text = playTurn({ messages, random, temperature: request.temperature });
  if (directives.think !== null) text = `${REASONING}${text}`;
  if (directives.padTokens !== undefined) text = padded(text, directives.padTokens);
  for (const stop of [request.stop ?? []].flat()) {
    const at = text.indexOf(stop);
    if (at !== -1) text = text.slice(0, at);
  }
  const budget = request.max_completion_tokens ?? request.max_tokens ?? Number.POSITIVE_INFINITY;
  const tokens = completionTokens(text, budget, request.temperature, random);
  return {
    text: tokens.cut ? detokenize(tokens.ids) : text,
    finishReason: tokens.cut ? "length" : "stop",
    toolCalls: [],
    ids: tokens.ids,
    logprobs: tokens.logprobs,
  };
}

/** Identifies a transcript by its roles and contents, as edgeroll sends them back. */
function transcriptKey(
  messages: readonly { role: string; content?: string | null | undefined }[],
): number {
  return hashString(JSON.stringify(messages.map((m) => [m.role, m.content ?? ""])));
}

function percentile(sorted: readonly number[], p: number): number | null {
  if (sorted.length === 0) return null;
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? null;
}

function summarize(samples: readonly number[]): SimulatorStats["turnOverheadMs"] {
  const sorted = [...samples].sort((a, b) => a - b);
  const mean = sorted.length > 0 ? sorted.reduce((a, b) => a + b, 0) / sorted.length : null;
  return { count: sorted.length, p50: percentile(sorted, 50), p99: percentile(sorted, 99), mean };
}

export async function startSimulator(options: SimulatorOptions = {}): Promise<Simulator> {
  const latency = { ...NO_LATENCY, ...options.latency };
  const faults = { ...NO_FAULTS, ...options.faults };
  const stats: Omit<SimulatorStats, "turnOverheadMs"> = { requests: 0, outcomes: {}, byModel: {} };
  /** When each answered generation finished, by the transcript it extended; for overheads. */
  const finishedAt = new Map<number, number>();
  const overheads: number[] = [];
  const attemptsByRequest = new Map<string, number>();
  /** With `record`: the tokens last answered, by model and seed. */
  const answers = new Map<
    string,
    { prompt_token_ids: number[]; token_ids: number[]; logprobs: number[] }
  >();
  const sockets = new Set<Socket>();

  const record = (model: string, outcome: string) => {
    stats.requests++;
    stats.outcomes[outcome] = (stats.outcomes[outcome] ?? 0) + 1;
    const perModel = stats.byModel[model] ?? { requests: 0, outcomes: {} };
    stats.byModel[model] = perModel;
    perModel.requests++;
    perModel.outcomes[outcome] = (perModel.outcomes[outcome] ?? 0) + 1;
  };

  const json = (res: ServerResponse, status: number, body: unknown) => {
    res.writeHead(status, { "content-type": "application/json" });
    res.end(JSON.stringify(body));
  };

  async function chatCompletions(req: IncomingMessage, res: ServerResponse, body: string) {
    let parsed: CompletionRequest;
    try {
      parsed = RequestSchema.parse(JSON.parse(body));
    } catch (error) {
      return json(res, 400, {
        error: {
          message: `bad request: ${String(error).slice(0, 300)}`,
          type: "invalid_request_error",
        },
      });
    }
    const { name, directives } = parseModel(parsed.model);
    // Counting directives (fail the first N tries) count retries of the same request.
    const key = `${parsed.model}|${hashString(JSON.stringify(parsed.messages))}|${parsed.seed ?? ""}`;
    const attempt = (attemptsByRequest.get(key) ?? 0) + 1;
    attemptsByRequest.set(key, attempt);
    const random = seededRandom(parsed.seed ?? Math.floor(Math.random() * 2 ** 31));
    const turn = parsed.messages.filter((m) => m.role === "assistant").length;
    const lastAction = parsed.messages.findLastIndex((m) => m.role === "assistant");
    if (lastAction !== -1) {
      const parent = finishedAt.get(transcriptKey(parsed.messages.slice(0, lastAction + 1)));
      if (parent !== undefined && overheads.length < 1_000_000) overheads.push(Date.now() - parent);
    }
    const fault = chooseFault(directives, attempt, turn, random);
    const template: TemplateKind =
      directives.think === "drop" ? "drop-reasoning" : (options.template ?? "chatml");
    const prompt = promptIds(
      parsed.messages.map((m) => ({
        role: m.role,
        content: m.content ?? "",
        ...(m.tool_calls ? { tool_calls: m.tool_calls } : {}),
      })),
      template,
    );
    if (directives.contextLimit !== undefined && prompt.length > directives.contextLimit) {
      record(parsed.model, "context_exceeded");
      return json(res, 400, {
        error: {
          message: `This model's maximum context length is ${directives.contextLimit} tokens. However, you requested ${prompt.length} tokens.`,
          type: "BadRequestError",
        },
      });
    }
    if (directives.sglang && parsed.stream && parsed.return_token_ids) {
      record(parsed.model, "token_fields_refused");
      return json(res, 400, {
        error: {
          message:
            "return_token_ids is not supported with streaming on /v1/chat/completions; use non-streaming requests",
          type: "BadRequestError",
        },
      });
    }
    record(parsed.model, fault ?? "ok");
    if (fault === "hang") return; // never answer; the client's deadline must end it
    if (fault === "reset") return req.socket.destroy();
    if (fault?.startsWith("error_")) {
      res.writeHead(Number(fault.slice(6)), {
        "content-type": "application/json",
        "retry-after": String(directives.retryAfterS),
      });
      return res.end(
        JSON.stringify({ error: { message: "simulated server error", type: "server_error" } }),
      );
    }
    await sleep(
      latency.ttftMs + latency.msPerPromptToken * prompt.length + directives.extraLatencyMs,
    );
    if (res.destroyed) return;
    if (fault === "malformed") {
      res.writeHead(200, {
        "content-type": parsed.stream ? "text/event-stream" : "application/json",
      });
      return res.end(
        parsed.stream
          ? 'data: {"choices": [{"delta": {"content": "brok\n\n'
          : '{"choices": [{"message": ',
      );
    }
    const choices = Array.from({ length: parsed.n }, (_, i) => {
      const choiceRandom = i === 0 ? random : seededRandom(hashString(`${parsed.seed}:${i}`));
      const choice = complete(parsed, choiceRandom, directives);
      return directives.native ? asNativeCalls(choice, choiceRandom) : choice;
    });
    const completionTokens = choices.reduce((a, c) => a + c.ids.length, 0);
    const usage = {
      prompt_tokens: prompt.length,
      completion_tokens: completionTokens,
      total_tokens: prompt.length + completionTokens,
    };
    const fields = {
      ids: parsed.return_token_ids === true && !directives.noTokenIds && options.tokenIds !== false,
      logprobs: parsed.logprobs === true,
      // vLLM puts the prompt's ids on the response, SGLang on each choice.
      promptOnChoice: directives.sglang,
    };
    const id = `chatcmpl-sim-${hashString(key)}-${attempt}`;
    const created = Math.floor(Date.now() / 1000);
    const perToken = directives.trickleMs ?? latency.msPerToken;
    if (directives.record && choices[0] !== undefined) {
      const answer = {
        prompt_token_ids: prompt,
        token_ids: choices[0].ids,
        logprobs: choices[0].logprobs,
      };
      answers.set(`${parsed.model}|${parsed.seed ?? ""}`, answer);
    }
    const answer: Answer = {
      id,
      created,
      model: name,
      choices,
      prompt,
      usage,
      fields,
      fault,
      perTokenMs: perToken,
      includeUsage: parsed.stream_options?.include_usage === true,
      onFinished: () => markFinished(parsed, choices[0]),
    };
    if (!parsed.stream) {
      await sleep(perToken * usage.completion_tokens);
      if (res.destroyed) return;
      markFinished(parsed, choices[0]);
      return json(res, 200, answerBody(answer));
    }
    await streamAnswer(res, answer);
  }

  function markFinished(request: CompletionRequest, choice: Choice | undefined): void {
    if (choice === undefined) return;
    const action = {
      role: "assistant",
      content: choice.toolCalls.length > 0 && choice.text === "" ? "" : choice.text,
    };
    finishedAt.set(transcriptKey([...request.messages, action]), Date.now());
    // Bounded: the oldest entries go first (Map keeps insertion order).
    if (finishedAt.size > 200_000) finishedAt.delete(finishedAt.keys().next().value as number);
  }

  function chooseFault(
    directives: Directives,
    attempt: number,
    turn: number,
    random: Random,
  ): string | null {
    for (const { fault, times, atTurn } of directives.failFirst) {
      if (attempt <= times && (atTurn === undefined || atTurn === turn)) return fault;
    }
    if (directives.always !== null) return directives.always;
    if (directives.chaos > 0 && Math.random() < directives.chaos) {
      return (
        ["error_500", "error_503", "error_429", "reset", "malformed", "cut"][
          Math.floor(Math.random() * 6)
        ] ?? "error_503"
      );
    }
    const roll = Math.random();
    let edge = faults.errorRate;
    if (roll < edge)
      return `error_${faults.errorStatuses[Math.floor(random() * faults.errorStatuses.length)] ?? 503}`;
    for (const [fault, rate] of [
      ["hang", faults.hangRate],
      ["malformed", faults.malformedRate],
      ["cut", faults.cutRate],
      ["reset", faults.resetRate],
    ] as const) {
      edge += rate;
      if (roll < edge) return fault;
    }
    return null;
  }

  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (chunk: Buffer) => chunks.push(chunk));
    req.on("end", () => {
      const body = Buffer.concat(chunks).toString("utf8");
      const path = (req.url ?? "/").split("?")[0];
      if (req.method === "POST" && path?.endsWith("/chat/completions")) {
        chatCompletions(req, res, body).catch((error) => {
          if (!res.headersSent) json(res, 500, { error: { message: String(error) } });
          else res.destroy();
        });
      } else if (req.method === "GET" && path?.endsWith("/models")) {
        json(res, 200, {
          object: "list",
          data: [{ id: "edgeroll-sim", object: "model", owned_by: "edgeroll" }],
        });
      } else if (req.method === "GET" && path === "/sim/answers") {
        const query = new URL(req.url ?? "/", "http://sim").searchParams;
        const answer = answers.get(`${query.get("model")}|${query.get("seed") ?? ""}`);
        if (answer) json(res, 200, answer);
        else json(res, 404, { error: { message: "no recorded answer for that model and seed" } });
      } else if (req.method === "GET" && path === "/sim/stats") {
        json(res, 200, { ...stats, turnOverheadMs: summarize(overheads) });
      } else if (req.method === "POST" && path === "/sim/stats/reset") {
        overheads.length = 0;
        json(res, 200, { ok: true });
      } else {
        json(res, 404, { error: { message: `no route ${req.method} ${path}` } });
      }
    });
  });
  server.on("connection", (socket) => {
    sockets.add(socket);
    socket.on("close", () => sockets.delete(socket));
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(options.port ?? 0, options.host ?? "127.0.0.1", resolve);
  });
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://${options.host ?? "127.0.0.1"}:${port}/v1`,
    port,
    stats: () => ({ ...structuredClone(stats), turnOverheadMs: summarize(overheads) }),
    close: async () => {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
