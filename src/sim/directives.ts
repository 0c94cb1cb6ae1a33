/**
 * Per-request fault directives, written after the model name: `sim+fail:503:2+latency:300`.
 * They steer chat completions and `/v1/completions` alike; `/tokenize` and `/detokenize` read
 * only the ones that change the tokenizer's answer (`think`, `context`, `foreign-vocab`), and
 * `/tokenize` its own fault, `tokenize-fail` (the generation faults are the model's: a host whose
 * model fails still tokenizes).
 *
 *   hang[:N]         never answer (the first N tries of each distinct request, or all)
 *   stall            send headers and a first chunk, then nothing (streaming)
 *   fail:S[:N]       answer status S (the first N tries of each distinct request; default all)
 *   reset[:N]        drop the connection
 *   malformed[:N]    answer a body that does not parse
 *   cut[:N]          cut the stream half-way
 *   latency:MS       answer MS later
 *   trickle:MS       stream one token every MS
 *   chaos:P          each try fails with probability P, in a random way (status, reset,
 *                    malformed body, cut stream)
 *   context:T        reject prompts over T tokens as too long for the context
 *   retryafter:S     the Retry-After header (seconds) sent with simulated errors (default 0;
 *                    `/tokenize` sends one only when this is set)
 *   tokenize-fail:S[:N]  `/tokenize` answers status S (the first N tries of each distinct request
 *                    body; default all) with vLLM's error body (for 404, "The model `X` does
 *                    not exist."); generation is untouched
 *   native           send tool calls as OpenAI `tool_calls` instead of text blocks, as a
 *                    request offering `tools` always gets them (the model then writes its
 *                    calls in Qwen's hermes format, hermes.ts)
 *   think[:keep]     think aloud (`<think>…</think>`) before each action; the chat template
 *                    drops that reasoning from earlier turns, as Qwen3's does (prefix breaks),
 *                    unless `:keep` (`/v1/completions` renders nothing: its prompt keeps
 *                    whatever the client sent)
 *   notokens         an old host: no `prompt_token_ids` or `token_ids` (logprobs still)
 *   sglang           SGLang's placement: token ids on the choice, and a 400 for
 *                    `return_token_ids` with streaming
 *   pad:N            make each completion N tokens long (the action, then filler), for benches
 *   overlong[:P]     run each completion on past its max tokens (the action, then filler, cut at
 *                    the budget: finish reason `length`), or with probability P each, drawn after
 *                    the play: a seeded group's episodes play as without it, and some run long
 *   garbage[:P]      answer prose that is no JSON verdict (with probability P each, default 1):
 *                    a judge that rambles (model `judge`, judge.ts)
 *   babble           answer seeded random words instead of playing: every episode's
 *                    conversation is its own (a fleet's prefix caches are then measured, not
 *                    shared by identical episodes)
 *   record           keep the tokens of every answer (chat and `/v1/completions`), by seed,
 *                    for `GET /sim/answers` (tests compare what edgeroll stored with what the
 *                    host sent)
 *   teacher          score prompts as a perfect player would (`prompt_logprobs` on
 *                    `/v1/completions`): an assistant token on the temperature-0 player's path
 *                    scores log 0.9, one off it log 0.05, every other token log 0.5
 *   foreign-vocab    a host with another tokenizer: every ordinary id it sends or reads is one
 *                    higher than the simulator's own (special tokens unchanged), so ids from
 *                    another host mean other text here; the text and the play are unchanged
 *
 * A counted fault may be limited to one turn with `@T`: `fail:503:1@2` fails only requests
 * whose transcript already holds two assistant messages. A part it does not know is ignored,
 * so `sim+tag:<name>` gives requests a model name of their own (the simulator counts requests
 * by model name) and plays them as `sim`.
 */
/** What can go wrong with one request: an error status, or how the answer breaks. */
export type Fault = `error_${number}` | "hang" | "stall" | "reset" | "malformed" | "cut";

export interface Directives {
  /** Faults applied to the first N attempts of each distinct request, checked in order. */
  failFirst: { fault: Fault; times: number; atTurn?: number }[];
  /** A fault applied to every attempt. */
  always: "hang" | "stall" | null;
  extraLatencyMs: number;
  trickleMs?: number;
  chaos: number;
  contextLimit?: number;
  /** Unset sends generation errors with `retry-after: 0`, and `/tokenize` errors with none. */
  retryAfterS?: number;
  /** `/tokenize` answers `status` to the first `times` tries of each distinct request body. */
  tokenizeFail?: { status: number; times: number };
  native: boolean;
  /** Think aloud before acting; `drop` re-renders history without it (Qwen3's template). */
  think: "drop" | "keep" | null;
  noTokenIds: boolean;
  sglang: boolean;
  record: boolean;
  padTokens?: number;
  /** The chance that a completion runs on past its max tokens (0: never). */
  overlong: number;
  /** The model is `judge`: it grades instead of playing (judge.ts). */
  judge: boolean;
  /** The chance that an answer is prose instead of a verdict (0: never). */
  garbage: number;
  babble: boolean;
  /** Prompt logprobs are a perfect player's (see teacher.ts). */
  teacher: boolean;
  /** Ids on the wire are shifted (see vocabulary.ts). */
  foreignVocab: boolean;
}

/** The one model name the simulator plays; directives follow it, as in `sim+fail:503:2`. */
export const SIM_MODEL = "sim";
/** The simulator's second model: a judge that grades answers against references (judge.ts). */
export const JUDGE_MODEL = "judge";

/**
 * Why the simulator will not answer for `model`, or null when it plays it. It plays `sim` (and
 * `judge`, which grades), so a real model's name (`--model Qwen/Qwen3-8B`) is refused as vLLM refuses a model
 * it does not serve, rather than played perfectly under another's name.
 */
export function unknownModel(model: string): string | null {
  const { name } = parseModel(model);
  if (name === SIM_MODEL || name === JUDGE_MODEL) return null;
  return `The model \`${model}\` does not exist. edgeroll's simulator plays \`${SIM_MODEL}\` (the CLI's default --model) and a judge, \`${JUDGE_MODEL}\` (src/sim/judge.ts; directives may follow it, e.g. \`${SIM_MODEL}+think\`, docs/simulator.md). For another model, run against a host that serves it: npm run dev -- --inference-url <url>`;
}

export function parseModel(model: string): { name: string; directives: Directives } {
  const [name = model, ...parts] = model.split("+");
  const directives: Directives = {
    failFirst: [],
    always: null,
    extraLatencyMs: 0,
    chaos: 0,
    native: false,
    think: null,
    noTokenIds: false,
    sglang: false,
    record: false,
    teacher: false,
    foreignVocab: false,
    babble: false,
    overlong: 0,
    judge: name === JUDGE_MODEL,
    garbage: 0,
  };
  for (const spec of parts) {
    const [part = "", turn] = spec.split("@");
    const atTurn = turn === undefined ? {} : { atTurn: Number(turn) };
    const [kind, a, b] = part.split(":");
    const times = (n: string | undefined) =>
      n === undefined ? Number.POSITIVE_INFINITY : Number(n);
    if (kind === "hang" && a !== undefined)
      directives.failFirst.push({ fault: "hang", times: Number(a), ...atTurn });
    else if (kind === "hang" || kind === "stall") directives.always = kind;
    else if (kind === "native") directives.native = true;
    else if (kind === "think") directives.think = a === "keep" ? "keep" : "drop";
    else if (kind === "notokens") directives.noTokenIds = true;
    else if (kind === "sglang") directives.sglang = true;
    else if (kind === "record") directives.record = true;
    else if (kind === "teacher") directives.teacher = true;
    else if (kind === "foreign-vocab") directives.foreignVocab = true;
    else if (kind === "pad") directives.padTokens = Number(a);
    else if (kind === "overlong") directives.overlong = a === undefined ? 1 : Number(a);
    else if (kind === "babble") directives.babble = true;
    else if (kind === "garbage") directives.garbage = a === undefined ? 1 : Number(a);
    else if (kind === "fail") {
      directives.failFirst.push({ fault: `error_${Number(a)}`, times: times(b), ...atTurn });
    } else if (kind === "reset" || kind === "malformed" || kind === "cut") {
      directives.failFirst.push({ fault: kind, times: times(a), ...atTurn });
    } else if (kind === "tokenize-fail") {
      directives.tokenizeFail = { status: Number(a), times: times(b) };
    } else if (kind === "latency") directives.extraLatencyMs = Number(a);
    else if (kind === "context") directives.contextLimit = Number(a);
    else if (kind === "retryafter") directives.retryAfterS = Number(a);
    else if (kind === "trickle") directives.trickleMs = Number(a);
    else if (kind === "chaos") directives.chaos = Number(a);
  }
  return { name, directives };
}
