/**
 * Calls to a remote environment server: JSON over HTTP under one deadline, transport faults
 * retried with the same Idempotency-Key, and every answer checked against the protocol's schema.
 * What went wrong is classified for the episode's end reason: `unavailable` (nothing usable
 * answered: refused connections, 429/502/503/504 past the retries), `timed_out` (the deadline
 * ran out) or `failed` (the environment answered, and the answer was an error or garbage). A 4xx
 * `example_rejected` (the environment cannot play the example, `/start`) is the SDK's
 * `ExampleRejectedError`, naming the fields, as a built-in environment's schema would.
 */
import type { z } from "zod";
import { ExampleRejectedError, errorMessage } from "../../sdk";
import { backoffDelayMs, sleep } from "../../utils/backoff";
import { parseRetryAfter } from "../../utils/retry-after";
import { ErrorBodySchema } from "./protocol";

export type RemoteFault = "unavailable" | "timed_out" | "failed";

export class RemoteEnvError extends Error {
  constructor(
    readonly reason: RemoteFault,
    message: string,
  ) {
    super(message);
    this.name = "RemoteEnvError";
  }
}

export interface RemoteTarget {
  /** The name it is registered under (REMOTE_ENVS). */
  name: string;
  baseUrl: string;
  /** Sent as `Authorization: Bearer` (REMOTE_ENV_TOKEN). */
  token?: string;
}

/** Attempts at one call while the server is busy or unreachable. */
const ATTEMPTS = 4;
/** The longest Retry-After honoured inside a call; longer waits fail it as unavailable. */
const MAX_RETRY_AFTER_MS = 10_000;
const BUSY = new Set([429, 502, 503, 504]);

export interface CallOptions {
  idempotencyKey?: string;
  /** The whole call, retries included. */
  timeoutMs: number;
}

export async function callRemote<S extends z.ZodType>(
  target: RemoteTarget,
  method: "GET" | "POST",
  path: string,
  body: unknown,
  answer: S,
  { idempotencyKey, timeoutMs }: CallOptions,
): Promise<z.infer<S>> {
  const url = `${target.baseUrl.replace(/\/+$/, "")}${path}`;
  const what = `remote environment "${target.name}" ${method} ${path}`;
  const deadline = Date.now() + timeoutMs;
  // No new attempt starts in the deadline's last quarter: a server that keeps failing is then
  // reported unavailable before the caller's own timer (the same deadline) calls it a timeout.
  const retriesEnd = deadline - timeoutMs / 4;
  const headers: Record<string, string> = { accept: "application/json" };
  if (body !== undefined) headers["content-type"] = "application/json";
  if (target.token) headers.authorization = `Bearer ${target.token}`;
  if (idempotencyKey) headers["idempotency-key"] = idempotencyKey;
  let last = "";
  for (let attempt = 1; attempt <= ATTEMPTS; attempt++) {
    const left = deadline - Date.now();
    if (left <= 0) break;
    let response: Response;
    try {
      response = await fetch(url, {
        method,
        headers,
        body: body === undefined ? undefined : JSON.stringify(body),
        signal: AbortSignal.timeout(left),
      });
    } catch (error) {
      if (Date.now() >= deadline) break;
      last = errorMessage(error);
      const wait = backoffDelayMs(attempt, { baseMs: 200, maxMs: 2000 });
      if (attempt === ATTEMPTS || Date.now() + wait >= retriesEnd) break;
      await sleep(wait);
      continue;
    }
    const text = await response.text();
    if (BUSY.has(response.status)) {
      last = `answered ${response.status}${detailOf(text)}`;
      const asked = parseRetryAfter(response.headers.get("retry-after"));
      const wait =
        asked === undefined ? backoffDelayMs(attempt, { baseMs: 200, maxMs: 2000 }) : asked * 1000;
      if (attempt === ATTEMPTS || wait > MAX_RETRY_AFTER_MS || Date.now() + wait >= retriesEnd)
        break;
      await sleep(wait);
      continue;
    }
    if (!response.ok) {
      const refusal = response.status < 500 ? exampleRefusal(text) : null;
      if (refusal !== null) throw refusal;
      throw new RemoteEnvError("failed", `${what} answered ${response.status}${detailOf(text)}`);
    }
    return parsed(what, text, answer);
  }
  if (Date.now() >= deadline)
    throw new RemoteEnvError(
      "timed_out",
      `${what} ran past ${timeoutMs / 1000} s${last ? ` (${last})` : ""}`,
    );
  throw new RemoteEnvError("unavailable", `${what}: ${last || "no answer"}, retries exhausted`);
}

/** An `example_rejected` answer's fields (its message alone when it names none), or null. */
function exampleRefusal(text: string): ExampleRejectedError | null {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    return null;
  }
  const body = ErrorBodySchema.safeParse(json);
  if (!body.success || body.data.error.code !== "example_rejected") return null;
  const { message, details } = body.data.error;
  return new ExampleRejectedError(
    details?.length ? details : [{ path: "", message: message || "rejected" }],
  );
}

/** The server's `{error: {code, message}}`, or the start of whatever it sent instead. */
function detailOf(text: string): string {
  try {
    const body = ErrorBodySchema.safeParse(JSON.parse(text));
    if (body.success) return `: ${body.data.error.code}: ${body.data.error.message}`;
  } catch {
    // not JSON: show the text itself
  }
  return text.trim() === "" ? "" : `: ${text.slice(0, 200)}`;
}

function parsed<S extends z.ZodType>(what: string, text: string, schema: S): z.infer<S> {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    throw new RemoteEnvError(
      "failed",
      `${what} answered something that is not JSON: ${text.slice(0, 200)}`,
    );
  }
  const result = schema.safeParse(json);
  if (!result.success) {
    const issues = result.error.issues
      .slice(0, 3)
      .map((i) => `${i.path.join(".") || "(root)"}: ${i.message}`)
      .join("; ");
    throw new RemoteEnvError("failed", `${what} answered outside the protocol: ${issues}`);
  }
  return result.data;
}
