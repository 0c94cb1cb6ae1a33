/** The Worker's settings, read from wrangler vars and secrets with defaults, validated once. */
import { z } from "zod";
import { type Price, parsePriceVar } from "./costs/price";
import { fleetHosts } from "./fleet/hosts-config";

const seconds = (fallback: number) => z.coerce.number().positive().default(fallback);
const count = (fallback: number) => z.coerce.number().int().nonnegative().default(fallback);

const ConfigSchema = z.object({
  /**
   * The inference host's base URL, or several separated by commas: a fleet
   * (src/fleet/hosts-config.ts, which validates each). `INFERENCE_HOSTS` instead, a JSON array of
   * `{url, name?, weight?, max_inflight?}`, when hosts need settings of their own.
   */
  INFERENCE_BASE_URL: z.string().min(1).default("http://127.0.0.1:8000/v1"),
  INFERENCE_HOSTS: z.string().optional(),
  INFERENCE_API_KEY: z.string().optional(),
  /**
   * Prices, USD per million tokens as JSON `{"prompt": 0.2, "cached": 0.05, "completion": 0.8}`:
   * of every inference host without its own (`INFERENCE_HOSTS[].price`), of the judge and of the
   * teacher. A judge or teacher on the first inference host (their default) has its price.
   * Unpriced calls cost $0 in a run's bill and are counted as unpriced (docs/costs.md).
   */
  INFERENCE_PRICE: z.string().optional(),
  JUDGE_PRICE: z.string().optional(),
  TEACHER_PRICE: z.string().optional(),
  /** The teacher of on-policy distillation (`algorithm: "opd"`); default: the inference host. */
  TEACHER_BASE_URL: z.url().optional(),
  TEACHER_API_KEY: z.string().optional(),
  /** One teacher scoring call (a prefill of one sample), retries included. */
  TEACHER_TIMEOUT_S: seconds(300),
  /**
   * Streamed completions keep bytes flowing through a generation of many minutes, which
   * proxies in front of a GPU host would otherwise cut as idle (Cloudflare's edge after 100 s,
   * nginx after 60 s by default). "false" sends one body per generation instead: about 1 ms
   * less Worker CPU per turn (docs/benchmarks.md), for hosts the Worker reaches directly.
   */
  INFERENCE_STREAM: z.stringbool().default(true),
  GENERATION_DEADLINE_S_PER_TOKEN: seconds(0.5),
  GENERATION_DEADLINE_MIN_S: seconds(600),
  GENERATION_DEADLINE_MAX_S: seconds(3600),
  /** Transport retries (429, 5xx, resets, malformed bodies) inside one generation attempt. */
  INFERENCE_MAX_RETRIES: count(4),
  /**
   * Episodes in flight toward each host across all groups (each host's default `max_inflight`;
   * an episode has at most one generation in flight); 0 means no limit.
   */
  MAX_INFLIGHT_GENERATIONS: count(256),
  /** Consecutive failures (no answer, 5xx, timeouts), across all groups, that eject a host. */
  HOST_EJECT_AFTER_FAILURES: count(3),
  /** How often an ejected host is probed (`GET /models`) to be readmitted. */
  HOST_PROBE_S: seconds(5),
  /**
   * A new episode passes over a host already carrying more than this times the fleet's mean load
   * (by weight) and more than FLEET_LOAD_SLACK episodes over it (src/fleet/routing.ts).
   */
  FLEET_LOAD_FACTOR: z.coerce.number().min(1).default(1.5),
  FLEET_LOAD_SLACK: count(4),
  /**
   * Each host's cap follows its KV cache usage, read from its `/metrics` every HOST_PROBE_S
   * (src/fleet/adaptive-cap.ts), MAX_INFLIGHT_GENERATIONS or its `max_inflight` the ceiling.
   */
  INFERENCE_ADAPTIVE_INFLIGHT: z.stringbool().default(false),
  /**
   * The share of each host's cap kept for evaluation groups while any waits: training uses it
   * when none does (src/fleet/eval-share.ts). 0 gives evaluations no priority.
   */
  EVAL_SHARE: z.coerce.number().min(0).max(0.9).default(0.25),
  /** How often a group with work in flight wakes itself, to stay awake and resume after restarts. */
  HEARTBEAT_S: seconds(30),
  /** Re-sends of a generation lost to an object restart, per turn, before the episode fails. */
  MAX_REDISPATCHES: count(3),
  STEP_TIMEOUT_S: seconds(60),
  SCORE_TIMEOUT_S: seconds(300),
  /** Attempts at scoring a group before its unscored episodes fail with score_error. */
  MAX_SCORE_ATTEMPTS: count(3),
  /**
   * The judge a score hook asks (src/judges/): an OpenAI-compatible host (default: the first
   * inference host, with its key), its model (a component may name another), each call's
   * deadline, the calls per grade (retrying timeouts, 5xx and unparsable answers), and the
   * judge calls in flight across the deployment (src/judges/judge-gate.ts), so judging never
   * crowds out generation.
   */
  JUDGE_BASE_URL: z.url().optional(),
  JUDGE_MODEL: z.string().min(1).optional(),
  JUDGE_API_KEY: z.string().optional(),
  JUDGE_TIMEOUT_S: seconds(60),
  JUDGE_MAX_ATTEMPTS: z.coerce.number().int().min(1).default(3),
  JUDGE_MAX_INFLIGHT: z.coerce.number().int().min(1).default(16),
  /** Leases of one group without an ack before it is parked as poison. */
  MAX_DELIVERIES: count(5),
});

export type Config = z.infer<typeof ConfigSchema>;

const cache = new WeakMap<object, Config>();

/** Parses the Worker's env once per env object; a bad var is a deploy error, so it throws. */
export function configFrom(env: object): Config {
  let config = cache.get(env);
  if (config === undefined) {
    config = ConfigSchema.parse(env);
    // A fleet or a price that does not read is a deploy error too, named here rather than at the
    // first turn.
    priceBook(config);
    cache.set(env, config);
  }
  return config;
}

/** Where the teacher is: TEACHER_BASE_URL, else the inference host (with its key). */
export function teacherEndpoint(config: Config): {
  baseUrl: string;
  apiKey: string | undefined;
  name: string;
} {
  return config.TEACHER_BASE_URL === undefined
    ? {
        baseUrl: fleetHosts(config)[0]?.url ?? config.INFERENCE_BASE_URL,
        apiKey: config.TEACHER_API_KEY ?? config.INFERENCE_API_KEY,
        name: "teacher (the first inference host)",
      }
    : { baseUrl: config.TEACHER_BASE_URL, apiKey: config.TEACHER_API_KEY, name: "teacher host" };
}

/** Every price the deployment knows: each inference host's, the judge's and the teacher's. */
export interface PriceBook {
  /** The price of the host at `url`; null when it is not one of the fleet's or has none. */
  host(url: string | null): Price | null;
  /** JUDGE_PRICE, else the first inference host's when the judge is there (its default). */
  judge: Price | null;
  /** TEACHER_PRICE, else the first inference host's when the teacher is there (its default). */
  teacher: Price | null;
}

const books = new WeakMap<Config, PriceBook>();

/** The prices of `config`, read once per config. */
export function priceBook(config: Config): PriceBook {
  let book = books.get(config);
  if (book === undefined) {
    const hosts = fleetHosts(config);
    const byUrl = new Map(hosts.map((host) => [host.url, host.price]));
    const first = hosts[0]?.price ?? null;
    const ownOr = (name: string, value: string | undefined, elsewhere: boolean) =>
      parsePriceVar(name, value) ?? (elsewhere ? null : first);
    book = {
      host: (url) => (url === null ? null : (byUrl.get(url) ?? null)),
      judge: ownOr("JUDGE_PRICE", config.JUDGE_PRICE, config.JUDGE_BASE_URL !== undefined),
      teacher: ownOr("TEACHER_PRICE", config.TEACHER_PRICE, config.TEACHER_BASE_URL !== undefined),
    };
    books.set(config, book);
  }
  return book;
}

/** Whether any call of the deployment has a price (else a run's usd is always 0). */
export function anyPriced(config: Config): boolean {
  const book = priceBook(config);
  return (
    book.judge !== null ||
    book.teacher !== null ||
    fleetHosts(config).some((host) => host.price !== null)
  );
}

/** Where the judge is: JUDGE_BASE_URL, else the first inference host (with its key). */
export function judgeEndpoint(config: Config): { baseUrl: string; apiKey: string | undefined } {
  return config.JUDGE_BASE_URL === undefined
    ? {
        baseUrl: fleetHosts(config)[0]?.url ?? config.INFERENCE_BASE_URL,
        apiKey: config.JUDGE_API_KEY ?? config.INFERENCE_API_KEY,
      }
    : { baseUrl: config.JUDGE_BASE_URL, apiKey: config.JUDGE_API_KEY };
}

/** Generation deadline for a context size: clamp(per_token * tokens, min, max), in ms. */
export function generationDeadlineMs(config: Config, maxContextTokens: number): number {
  const s = config.GENERATION_DEADLINE_S_PER_TOKEN * maxContextTokens;
  const clamped = Math.min(
    Math.max(s, config.GENERATION_DEADLINE_MIN_S),
    config.GENERATION_DEADLINE_MAX_S,
  );
  return Math.round(clamped * 1000);
}
