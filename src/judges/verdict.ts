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

/** The content of an OpenAI chat completion's first choice, or why there is none. */
export function completionContent(body: string): { ok: true; content: string } | { ok: false } {
  try {
    const content = (JSON.parse(body) as { choices?: { message?: { content?: unknown } }[] })
      .choices?.[0]?.message?.content;
    return typeof content === "string" ? { ok: true, content } : { ok: false };
  } catch {
    return { ok: false };
  }
}
