/**
 * The inference fleet as configured: `INFERENCE_BASE_URL` (one base URL, or several separated by
 * commas) or `INFERENCE_HOSTS` (a JSON array with per-host settings), read into one list of
 * hosts. A host is known everywhere by its base URL without trailing slashes.
 */
import { z } from "zod";
import { type Price, PriceSchema, parsePriceVar } from "../costs/price";

const BaseUrlSchema = z.url({ protocol: /^https?$/ }).transform((url) => url.replace(/\/+$/, ""));

export const HostSettingsSchema = z.object({
  url: BaseUrlSchema,
  /** What the dashboard and `GET /v1/hosts` call it; default `host:port`. */
  name: z.string().min(1).max(100).optional(),
  /** Its share of new groups relative to the others (a GPU twice as fast: 2). */
  weight: z.number().positive().max(1000).default(1),
  /** Episodes in flight toward it at most; default MAX_INFLIGHT_GENERATIONS; 0: no limit. */
  max_inflight: z.number().int().nonnegative().optional(),
  /**
   * Adapt its cap to its KV cache (adaptive-cap.ts), `max_inflight` being the ceiling; default
   * INFERENCE_ADAPTIVE_INFLIGHT.
   */
  adaptive: z.boolean().optional(),
  /**
   * What it charges, USD per million tokens `{prompt, cached?, completion}`; default
   * INFERENCE_PRICE. A run's bill prices each call by it (src/costs/).
   */
  price: PriceSchema.optional(),
});
export type HostSettings = z.infer<typeof HostSettingsSchema>;

export interface FleetHost {
  url: string;
  name: string;
  weight: number;
  /** Episodes in flight toward it at most; Infinity for no limit. */
  maxInflight: number;
  /** Its cap follows its KV cache usage, up to `maxInflight`. */
  adaptive: boolean;
  /** What it charges; null: not priced (its calls cost $0 in the ledger, counted unpriced). */
  price: Price | null;
}

/** `http://a:8000/v1` → `a:8000`. */
const nameOf = (url: string) => new URL(url).host;

export class FleetConfigError extends Error {
  override name = "FleetConfigError";
}

const describe = (error: z.ZodError) =>
  error.issues.map((i) => `${i.path.join(".") || "(value)"}: ${i.message}`).join("; ");

/**
 * The configured hosts, in the order given. `INFERENCE_HOSTS` wins when set; a bad value is a
 * deploy error and says which host and field is wrong.
 */
export function fleetHosts(vars: {
  INFERENCE_BASE_URL: string;
  INFERENCE_HOSTS?: string | undefined;
  MAX_INFLIGHT_GENERATIONS: number;
  INFERENCE_ADAPTIVE_INFLIGHT?: boolean;
  INFERENCE_PRICE?: string | undefined;
}): FleetHost[] {
  const defaultPrice = parsePriceVar("INFERENCE_PRICE", vars.INFERENCE_PRICE);
  let settings: HostSettings[];
  if (vars.INFERENCE_HOSTS !== undefined && vars.INFERENCE_HOSTS.trim() !== "") {
    let json: unknown;
    try {
      json = JSON.parse(vars.INFERENCE_HOSTS);
    } catch {
      throw new FleetConfigError('INFERENCE_HOSTS is not JSON: expected [{"url": ...}, ...]');
    }
    const parsed = z.array(HostSettingsSchema).min(1).safeParse(json);
    if (!parsed.success) throw new FleetConfigError(`INFERENCE_HOSTS: ${describe(parsed.error)}`);
    settings = parsed.data;
  } else {
    const urls = vars.INFERENCE_BASE_URL.split(",")
      .map((u) => u.trim())
      .filter((u) => u !== "");
    const parsed = z.array(BaseUrlSchema).min(1).safeParse(urls);
    if (!parsed.success)
      throw new FleetConfigError(`INFERENCE_BASE_URL: ${describe(parsed.error)}`);
    settings = parsed.data.map((url) => ({ url, weight: 1 }));
  }
  const seen = new Set<string>();
  return settings.map((s) => {
    if (seen.has(s.url)) throw new FleetConfigError(`the host ${s.url} is listed twice`);
    seen.add(s.url);
    const cap = s.max_inflight ?? vars.MAX_INFLIGHT_GENERATIONS;
    return {
      url: s.url,
      name: s.name ?? nameOf(s.url),
      weight: s.weight,
      maxInflight: cap === 0 ? Number.POSITIVE_INFINITY : cap,
      adaptive: s.adaptive ?? vars.INFERENCE_ADAPTIVE_INFLIGHT ?? false,
      price: s.price ?? defaultPrice,
    };
  });
}
