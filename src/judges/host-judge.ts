/**
 * The judge a score hook asks, for one episode: each grade is a chat completion from the judge
 * host under JUDGE_TIMEOUT_S, retried with backoff on timeouts, 429s, 5xx, unreachable hosts and
 * unparsable answers, up to JUDGE_MAX_ATTEMPTS calls, all inside the score call's own deadline (a
 * judge that outlasted it would turn its failure into a `score_error` the group retries). A 4xx
 * is not retried: the same request would be refused again. Each call holds one of the judge's
 * slots (JUDGE_MAX_INFLIGHT across the deployment, judge-gate.ts). Every call is recorded, failed
 * ones included; a grade that never came throws JudgeError and the episode ends `judge_error`.
 */
import {
  type ChatMessage,
  type Judge,
  JudgeError,
  type JudgeRequest,
  type JudgeVerdict,
} from "../sdk";
import { backoffDelayMs, sleep } from "../utils/backoff";
import { type CallUsage, completionContent, NO_USAGE, parseVerdict } from "./verdict";

/** One call to the judge, as it lands in D1's `judgements`. */
export interface JudgementRecord {
  component: string;
  model: string;
  prompt: ChatMessage[];
  /** What the judge answered (its message content, or its error body), or what went wrong. */
  response: string;
  value: number | null;
  reason: string | null;
  error: string | null;
  /** 1 for a grade's first call. */
  attempt: number;
  latencyMs: number;
  createdAt: string;
  /** What the judge host counted of the call (absent in records made before it was kept). */
  usage?: CallUsage;
}

export interface JudgeSettings {
  baseUrl: string;
  apiKey: string | undefined;
  model: string | undefined;
  timeoutMs: number;
  maxAttempts: number;
  slots: JudgeSlots;
}

/** The judge's in-flight limit, as a judge sees it. */
export interface JudgeSlots {
  /** Runs `call` holding a slot; null when none freed before `deadlineAt` (and `call` never ran). */
  hold<T>(deadlineAt: number, call: () => Promise<T>): Promise<T | null>;
}

/** A call's outcome: a verdict, or an error that says whether another call may do better. */
type CallResult = { usage: CallUsage } & (
  | { ok: true; response: string; verdict: JudgeVerdict }
  | { ok: false; response: string; error: string; retryable: boolean }
);

/** Generous for a JSON verdict with a sentence of reason, short enough to bound a rambler. */
const MAX_VERDICT_TOKENS = 512;

/**
 * A judgement keeps at most this much of each message and of the answer: a judge shown a long
 * transcript is recorded all the same, and its row stays far inside D1's limits.
 */
const KEPT_CHARS = 16_000;

function kept(text: string): string {
  return text.length <= KEPT_CHARS
    ? text
    : `${text.slice(0, KEPT_CHARS)}… [${text.length - KEPT_CHARS} more characters not kept]`;
}

export class HostJudge implements Judge {
  /** Every call this judge made, in order. */
  readonly records: JudgementRecord[] = [];

  constructor(
    private readonly settings: JudgeSettings,
    /** When the score call's deadline passes (epoch ms): no call outlives it. */
    private readonly deadlineAt: number,
  ) {}

  async grade(request: JudgeRequest): Promise<JudgeVerdict> {
    const model = request.model ?? this.settings.model;
    if (model === undefined)
      throw new JudgeError(
        `component "${request.component}": no judge model (set JUDGE_MODEL, or the component's model)`,
      );
    const prompt = request.messages.map(({ role, content, name }) => ({
      role,
      content,
      ...(name === undefined ? {} : { name }),
    }));
    const recorded = prompt.map((m) => ({ ...m, content: kept(m.content) }));
    const before = this.records.length;
    let last = "";
    for (let attempt = 1; attempt <= this.settings.maxAttempts; attempt++) {
      if (this.deadlineAt <= Date.now()) {
        last = `${last}${last ? "; " : ""}no time left within SCORE_TIMEOUT_S`;
        break;
      }
      const started = Date.now();
      // Measured again once a slot frees: time waiting behind other judge calls is time gone.
      const result = (await this.settings.slots.hold(this.deadlineAt, () =>
        this.call(model, prompt, Math.min(this.settings.timeoutMs, this.deadlineAt - Date.now())),
      )) ?? {
        ok: false as const,
        response: "",
        error: `no judge slot freed within SCORE_TIMEOUT_S (JUDGE_MAX_INFLIGHT busy)`,
        retryable: false,
        usage: NO_USAGE,
      };
      this.records.push({
        component: request.component,
        model,
        prompt: recorded,
        response: kept(result.response),
        value: result.ok ? result.verdict.score : null,
        reason: result.ok ? result.verdict.reason : null,
        error: result.ok ? null : result.error,
        attempt,
        latencyMs: Date.now() - started,
        createdAt: new Date(started).toISOString(),
        usage: result.usage,
      });
      if (result.ok) return result.verdict;
      last = result.error;
      if (!result.retryable) break;
      if (attempt < this.settings.maxAttempts) {
        const wait = backoffDelayMs(attempt, { baseMs: 250, maxMs: 8000, jitter: true });
        if (Date.now() + wait >= this.deadlineAt) {
          last = `${last}; no time left within SCORE_TIMEOUT_S to retry`;
          break;
        }
        await sleep(wait);
      }
    }
    const calls = this.records.length - before;
    throw new JudgeError(
      `judge ${model} gave component "${request.component}" no grade in ${calls} call${calls === 1 ? "" : "s"}: ${last}`,
    );
  }

  private async call(model: string, prompt: ChatMessage[], timeoutMs: number): Promise<CallResult> {
    if (timeoutMs <= 0)
      return {
        ok: false,
        response: "",
        error: "no time left within SCORE_TIMEOUT_S (waited for a judge slot)",
        retryable: false,
        usage: NO_USAGE,
      };
    const headers: Record<string, string> = { "content-type": "application/json" };
    if (this.settings.apiKey) headers.authorization = `Bearer ${this.settings.apiKey}`;
    const body = JSON.stringify({
      model,
      messages: prompt,
      temperature: 0,
      max_tokens: MAX_VERDICT_TOKENS,
    });
    const url = `${this.settings.baseUrl.replace(/\/+$/, "")}/chat/completions`;
    let response: Response;
    let text: string;
    try {
      response = await fetch(url, {
        method: "POST",
        headers,
        body,
        signal: AbortSignal.timeout(timeoutMs),
      });
      text = await response.text();
    } catch (error) {
      const timedOut = error instanceof DOMException && error.name === "TimeoutError";
      const what = timedOut
        ? `timed out after ${(timeoutMs / 1000).toFixed(1)} s`
        : `could not reach the judge host: ${String(error)}`;
      return { ok: false, response: "", error: what, retryable: true, usage: NO_USAGE };
    }
    if (!response.ok) {
      const retryable =
        response.status >= 500 || response.status === 429 || response.status === 408;
      return {
        ok: false,
        response: text.slice(0, 2000),
        error: `HTTP ${response.status} from the judge host`,
        retryable,
        usage: NO_USAGE,
      };
    }
    const content = completionContent(text);
    const { usage } = content;
    if (!content.ok)
      return {
        ok: false,
        response: text.slice(0, 2000),
        error: "not a chat completion",
        retryable: true,
        usage,
      };
    const verdict = parseVerdict(content.content);
    if (!verdict.ok)
      return {
        ok: false,
        response: content.content,
        error: `unparsable verdict: ${verdict.problem}`,
        retryable: true,
        usage,
      };
    return { ok: true, response: content.content, verdict: verdict.verdict, usage };
  }
}
