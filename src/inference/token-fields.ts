/**
 * The host's token fields, asked for and read back. vLLM (0.10.2 and later) answers
 * `return_token_ids` with `prompt_token_ids` on the response (in the first chunk of a stream)
 * and `token_ids` on each choice (each chunk's share of it); SGLang puts both on the choice,
 * and only without streaming. `logprobs: true, top_logprobs: 0` gives one
 * `logprobs.content[]` entry per completion token, the end-of-turn token included. A completion
 * from token ids (`/completions`, token-in generation) has both id lists on the choice and its
 * logprobs as `logprobs.token_logprobs[]`, one number per completion token.
 *
 * The arrays are read by hand, not by schema: a prompt's ids arrive whole every turn, and
 * checking tens of thousands of numbers through a schema would cost more than the turn.
 */
import type { HostTokens } from "../tokens/turn-tokens";

/** Added to a request whose group wants token-exact episodes. */
export const TOKEN_REQUEST_FIELDS = {
  logprobs: true,
  top_logprobs: 0,
  return_token_ids: true,
} as const;

/** What the host sent in tokens: all of it, or the first thing missing. */
export type TokenFields =
  | { kind: "exact"; tokens: HostTokens }
  | { kind: "missing"; problem: string };

/** vLLM's placeholder for a logprob it did not have (`max(logprob, -9999.0)`). */
export const PLACEHOLDER_LOGPROB = -9999;

const HOW_TO_GET_THEM =
  "vLLM sends them from 0.10.2 on; SGLang only without streaming (set INFERENCE_STREAM=false)";

function ids(value: unknown): number[] | null {
  if (!Array.isArray(value)) return null;
  for (const id of value) if (!Number.isInteger(id) || id < 0) return null;
  return value as number[];
}

/** Reads a stream's token fields chunk by chunk, or a whole body's at once. */
export class TokenFieldReader {
  private promptIds: number[] | null = null;
  private readonly completionIds: number[] = [];
  private readonly logprobs: number[] = [];
  private sawCompletionIds = false;
  private problem: string | null = null;
  private model: string | null = null;

  /** One chunk, or a whole body: its top level and its first choice. */
  add(top: Record<string, unknown>, choice: Record<string, unknown> | undefined): void {
    if (typeof top.model === "string") this.model = top.model;
    const prompt = top.prompt_token_ids ?? choice?.prompt_token_ids;
    if (prompt !== undefined && prompt !== null) {
      const read = ids(prompt);
      if (read === null) this.problem ??= "prompt_token_ids is not a list of token ids";
      else this.promptIds = read;
    }
    if (choice === undefined) return;
    const completion = choice.token_ids;
    if (completion !== undefined && completion !== null) {
      const read = ids(completion);
      if (read === null) this.problem ??= "token_ids is not a list of token ids";
      else {
        this.sawCompletionIds = true;
        for (const id of read) this.completionIds.push(id);
      }
    }
    const logprobs = choice.logprobs as
      | { content?: unknown; token_logprobs?: unknown }
      | null
      | undefined;
    if (Array.isArray(logprobs?.content)) {
      for (const entry of logprobs.content)
        this.addLogprob((entry as { logprob?: unknown } | null)?.logprob);
    } else if (Array.isArray(logprobs?.token_logprobs)) {
      for (const logprob of logprobs.token_logprobs) this.addLogprob(logprob);
    }
  }

  private addLogprob(logprob: unknown): void {
    if (
      typeof logprob !== "number" ||
      !Number.isFinite(logprob) ||
      logprob <= PLACEHOLDER_LOGPROB
    ) {
      this.problem ??= "a completion token came without its logprob";
      this.logprobs.push(0);
    } else this.logprobs.push(logprob);
  }

  /**
   * The completion so far, of a stream cut short: its ids with their logprobs (as many as came
   * in pairs), or null when what came is not usable.
   */
  partial(): { ids: number[]; logprobs: number[] } | null {
    if (this.problem !== null || !this.sawCompletionIds) return null;
    const n = Math.min(this.completionIds.length, this.logprobs.length);
    return { ids: this.completionIds.slice(0, n), logprobs: this.logprobs.slice(0, n) };
  }

  /** What the host sent, checked against the counts its usage reports when it reports them. */
  result(usage: { promptTokens: number; completionTokens: number } | null = null): TokenFields {
    const missing = (what: string): TokenFields => ({
      kind: "missing",
      problem: `the host sent ${what} (${HOW_TO_GET_THEM})`,
    });
    if (this.problem !== null) return { kind: "missing", problem: this.problem };
    if (this.promptIds === null) return missing("no prompt_token_ids");
    if (!this.sawCompletionIds) return missing("no token_ids for the completion");
    if (this.logprobs.length === 0 && this.completionIds.length > 0) return missing("no logprobs");
    if (this.logprobs.length !== this.completionIds.length) {
      return {
        kind: "missing",
        problem: `the host sent ${this.completionIds.length} completion token ids but ${this.logprobs.length} logprobs`,
      };
    }
    if (
      usage !== null &&
      (usage.promptTokens !== this.promptIds.length ||
        usage.completionTokens !== this.completionIds.length)
    ) {
      return {
        kind: "missing",
        problem: `the host's token ids (${this.promptIds.length} prompt, ${this.completionIds.length} completion) do not match its usage (${usage.promptTokens}, ${usage.completionTokens})`,
      };
    }
    // Prompt and completion in one buffer, in that order: the sequence the turn leaves for the
    // next one, which the token table then keeps without copying it again (joinedSequence).
    const prompt = this.promptIds.length;
    const all = new Int32Array(prompt + this.completionIds.length);
    all.set(this.promptIds);
    all.set(this.completionIds, prompt);
    return {
      kind: "exact",
      tokens: {
        promptIds: all.subarray(0, prompt),
        completionIds: all.subarray(prompt),
        logprobs: Float32Array.from(this.logprobs),
        model: this.model,
      },
    };
  }
}
