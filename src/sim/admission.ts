/**
 * What every generation route does before the model plays: count the try, pick its fault,
 * refuse a prompt longer than the context, and answer instead of the model when the fault says
 * so (never, a dropped connection, an error status, a body that does not parse), after the
 * latency model's wait. Chat and `/v1/completions` differ only in the bodies they send.
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import type { Random } from "../utils/random";
import type { Directives, Fault } from "./directives";
import { chooseFault } from "./faults";
import { type Host, prefillWait } from "./host";
import { sendError, sleep } from "./http";

export interface AdmissionRequest {
  /** The model as asked for, directives and all: stats count by it. */
  model: string;
  directives: Directives;
  /** Names the request across its retries, so counted faults count its tries. */
  key: string;
  /** Assistant messages already in the transcript (for faults limited with `@T`). */
  turn: number;
  promptLength: number;
  /** The prompt's ids: what the prefix cache looks up. */
  prompt: readonly number[];
  random: Random;
  stream: boolean;
  /** What this route sends for `malformed`: a body and a stream that do not parse. */
  malformed: { body: string; stream: string };
  /** A refusal of the route's own, checked after the context limit (SGLang's, for chat). */
  refusal?: { outcome: string; message: string } | null;
}

export type Admission =
  | {
      admitted: true;
      attempt: number;
      fault: Fault | null;
      /** Prompt tokens found in the prefix cache (whole blocks); 0 without a cache. */
      cachedTokens: number;
      /** The answer is complete: its prompt and completion are cached for the next turn. */
      done: (completion: readonly number[]) => void;
    }
  | { admitted: false };

const ANSWERED: Admission = { admitted: false };

export async function admit(
  host: Host,
  req: IncomingMessage,
  res: ServerResponse,
  request: AdmissionRequest,
): Promise<Admission> {
  const { model, directives, promptLength } = request;
  const attempt = host.ledger.attempt(request.key);
  const fault = chooseFault(directives, host.faults, attempt, request.turn, request.random);
  if (directives.contextLimit !== undefined && promptLength > directives.contextLimit) {
    host.ledger.count(model, "context_exceeded");
    sendError(
      res,
      400,
      `This model's maximum context length is ${directives.contextLimit} tokens. However, you requested ${promptLength} tokens.`,
    );
    return ANSWERED;
  }
  if (request.refusal) {
    host.ledger.count(model, request.refusal.outcome);
    sendError(res, 400, request.refusal.message);
    return ANSWERED;
  }
  host.ledger.count(model, fault ?? "ok");
  if (fault === "hang") return ANSWERED; // never answer; the client's deadline must end it
  if (fault === "reset") {
    req.socket.destroy();
    return ANSWERED;
  }
  if (fault?.startsWith("error_")) {
    res.writeHead(Number(fault.slice(6)), {
      "content-type": "application/json",
      "retry-after": String(directives.retryAfterS ?? 0),
    });
    res.end(JSON.stringify({ error: { message: "simulated server error", type: "server_error" } }));
    return ANSWERED;
  }
  const { latency } = host;
  // Prefill costs only what the cache does not hold.
  const lookup = host.cache?.start(request.prompt) ?? {
    cachedTokens: 0,
    prefilled: () => {},
    release: () => {},
  };
  host.running++;
  if (host.running === 1) host.ledger.noteRunning(true);
  res.once("close", () => {
    host.running--;
    if (host.running === 0) host.ledger.noteRunning(false);
    lookup.release();
  });
  const prefill = latency.msPerPromptToken * (promptLength - lookup.cachedTokens) * host.slowFactor;
  await sleep(
    (latency.ttftMs + directives.extraLatencyMs) * host.slowFactor + prefillWait(host, prefill),
  );
  lookup.prefilled();
  if (res.destroyed) return ANSWERED;
  if (fault === "malformed") {
    res.writeHead(200, {
      "content-type": request.stream ? "text/event-stream" : "application/json",
    });
    res.end(request.stream ? request.malformed.stream : request.malformed.body);
    return ANSWERED;
  }
  return {
    admitted: true,
    attempt,
    fault,
    cachedTokens: lookup.cachedTokens,
    done: (completion) => host.cache?.finish([...request.prompt, ...completion]),
  };
}
