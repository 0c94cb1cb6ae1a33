/**
 * The judge's answer, read strictly: the message content must be one JSON object, nothing
 * around it but whitespace, with exactly `score` (a number in [0, 1]) and `reason` (a string).
 * Anything else is an unparsable answer, retried like a failed call: a guess at what a rambling
 * judge meant would be a grade nobody gave.
 */
import { z } from "zod";
import { describeZodError, type JudgeVerdict } from "../sdk";

const VerdictSchema = z.strictObject({
  score: z.number().min(0).max(1),
  reason: z.string(),
});

export type ParsedVerdict = { ok: true; verdict: JudgeVerdict } | { ok: false; problem: string };

export function parseVerdict(content: string): ParsedVerdict {
  let json: unknown;
  try {
    json = JSON.parse(content.trim());
  } catch {
    return { ok: false, problem: 'not one JSON object {"score": <0..1>, "reason": "..."}' };
  }
  const parsed = VerdictSchema.safeParse(json);
  if (!parsed.success) return { ok: false, problem: describeZodError(parsed.error) };
  return { ok: true, verdict: parsed.data };
}

/** What the host counted of a call (`usage`); null where it did not say. */
export interface CallUsage {
  promptTokens: number | null;
  cachedTokens: number | null;
  completionTokens: number | null;
}

export const NO_USAGE: CallUsage = {
  promptTokens: null,
  cachedTokens: null,
  completionTokens: null,
};

const count = z.number().int().nonnegative().nullish().catch(null);
const UsageSchema = z
  .object({
    prompt_tokens: count,
    completion_tokens: count,
    prompt_tokens_details: z.object({ cached_tokens: count }).nullish().catch(null),
  })
  .nullish()
  .catch(null);

/** The usage a chat completion reports, read leniently: a bill is never a reason to fail. */
function usageOf(json: unknown): CallUsage {
  const usage = UsageSchema.parse((json as { usage?: unknown } | null)?.usage);
  return {
    promptTokens: usage?.prompt_tokens ?? null,
    cachedTokens: usage?.prompt_tokens_details?.cached_tokens ?? null,
    completionTokens: usage?.completion_tokens ?? null,
  };
}

/** The content of an OpenAI chat completion's first choice and its usage, or why there is none. */
export function completionContent(
  body: string,
): { ok: true; content: string; usage: CallUsage } | { ok: false; usage: CallUsage } {
  let json: unknown;
  try {
    json = JSON.parse(body);
  } catch {
    return { ok: false, usage: NO_USAGE };
  }
  const usage = usageOf(json);
  const content = (json as { choices?: { message?: { content?: unknown } }[] } | null)?.choices?.[0]
    ?.message?.content;
  return typeof content === "string" ? { ok: true, content, usage } : { ok: false, usage };
}
