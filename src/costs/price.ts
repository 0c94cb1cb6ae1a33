/**
 * What a host charges, in USD per million tokens: prompt tokens it computed, prompt tokens it
 * served from its prefix cache (`cached`, default the prompt price), and completion tokens. A
 * call is priced when its group lands, by the price its host has then.
 */
import { z } from "zod";

const perMillion = z.number().nonnegative().max(1_000_000);

export const PriceSchema = z.strictObject({
  prompt: perMillion,
  cached: perMillion.optional(),
  completion: perMillion,
});
export type Price = z.infer<typeof PriceSchema>;

/** Token counts of one call, as the host reported them (null: it did not say). */
export interface CallTokens {
  promptTokens: number | null;
  cachedTokens?: number | null;
  completionTokens: number | null;
}

/**
 * A call's cost in USD, or null when it cannot be priced: its host has no price, or it reported
 * no token counts (a call that timed out). Cached tokens are part of the prompt tokens (OpenAI's
 * `prompt_tokens_details.cached_tokens`), priced at `cached` instead.
 */
export function usdOf(call: CallTokens, price: Price | null): number | null {
  if (price === null || (call.promptTokens === null && call.completionTokens === null)) return null;
  const prompt = call.promptTokens ?? 0;
  const cached = Math.min(call.cachedTokens ?? 0, prompt);
  const usd =
    (prompt - cached) * price.prompt +
    cached * (price.cached ?? price.prompt) +
    (call.completionTokens ?? 0) * price.completion;
  return usd / 1_000_000;
}

/** A price given as JSON in a var (`INFERENCE_PRICE`, `JUDGE_PRICE`, `TEACHER_PRICE`). */
export function parsePriceVar(name: string, value: string | undefined): Price | null {
  if (value === undefined || value.trim() === "") return null;
  let json: unknown;
  try {
    json = JSON.parse(value);
  } catch {
    throw new PriceConfigError(
      `${name} is not JSON: expected {"prompt": <usd>, "cached": <usd>, "completion": <usd>} per million tokens`,
    );
  }
  const parsed = PriceSchema.safeParse(json);
  if (!parsed.success)
    throw new PriceConfigError(
      `${name}: ${parsed.error.issues.map((i) => `${i.path.join(".") || "(value)"}: ${i.message}`).join("; ")}`,
    );
  return parsed.data;
}

export class PriceConfigError extends Error {
  override name = "PriceConfigError";
}
