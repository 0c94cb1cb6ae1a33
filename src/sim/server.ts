/**
 * An OpenAI-compatible inference simulator for local runs and tests, in vLLM's wire format: chat
 * completions, token-in completions (`/v1/completions`) and the tokenizer endpoints (`/tokenize`,
 * `/detokenize`, at the root as vLLM serves them), played by scripted policies over a real
 * tokenizer, with a latency model and fault injection — globally by options, or per request by
 * directives in the model name (`sim+hang`, `sim+fail:503:2`, ...; see directives.ts).
 *
 * This file is the route table and the server's life; each route lives in its own file.
 */
import { createServer } from "node:http";
import type { AddressInfo, Socket } from "node:net";
import { chatCompletions } from "./chat-route";
import type { TemplateKind } from "./chat-template";
import { completions } from "./completions-route";
import { JUDGE_MODEL, SIM_MODEL } from "./directives";
import { type FaultRates, NO_FAULTS } from "./faults";
import type { Host, LatencyModel } from "./host";
import { HostLedger, type SimulatorStats, type TurnGap } from "./host-ledger";
import { sendJson, sessionOf } from "./http";
import { prometheusMetrics } from "./metrics";
import { PrefixCache } from "./prefix-cache";
import { detokenizeRoute, tokenizeRoute } from "./tokenize-route";

export type { FaultRates } from "./faults";
export type { LatencyModel } from "./host";
export type { SimulatorStats, TurnGap } from "./host-ledger";

export interface SimulatorOptions {
  port?: number;
  host?: string;
  latency?: Partial<LatencyModel>;
  faults?: Partial<FaultRates>;
  /** The chat template (default ChatML; `drop-reasoning` re-renders history as Qwen3 does). */
  template?: TemplateKind;
  /** Answer `return_token_ids` (default true); false plays a host older than vLLM 0.10.2. */
  tokenIds?: boolean;
  /**
   * KV cache capacity in 16-token blocks: a prefix cache (prefix-cache.ts) that reports
   * `cached_tokens` and spares the prefill of what it holds. Absent: no prefix cache.
   */
  kvBlocks?: number;
  /**
   * Prefill is one queue per host (`msPerPromptToken` of the GPU's time per uncached prompt
   * token, one request after another), not each request's own: what a host that recomputes
   * prefixes costs everyone it serves. Default false.
   */
  sharedPrefill?: boolean;
  /**
   * Every completion this many tokens long unless its model names `pad:N` (cut, as any, by the
   * request's max tokens): with `latency.msPerToken`, generations that stream for seconds, to
   * measure a weight sync against. Absent: as long as the action.
   */
  longTokens?: number;
}

export interface Simulator {
  /** The OpenAI base URL, `http://host:port/v1`; the tokenizer endpoints are at its root. */
  url: string;
  port: number;
  stats(): SimulatorStats;
  /**
   * The streams of `X-Session-ID: session` (an episode's id, as edgeroll sends it) whose client
   * closed them before the end: when each token sent on each was written.
   */
  abandonedStreams(session: string): number[][];
  /**
   * Forgets what its prefix cache holds, and any prefill queued (a run that must start cold);
   * `kvBlocks` gives the cache a new capacity.
   */
  clearCache(kvBlocks?: number): void;
  /** Prompt tokens looked up in its prefix cache so far, and found there. */
  cacheCounts(): { queries: number; hits: number };
  /** Plays a host this many times slower (1: as configured). */
  setSlow(factor: number): void;
  /** Stops answering at once: the port refuses connections, open ones are reset. */
  kill(): Promise<void>;
  /** Listens again on the same port, its cache empty (a restarted server has lost its KV). */
  revive(): Promise<void>;
  /** Every gap between an episode's turns since the last stats reset, as the host saw it. */
  turnGaps(): TurnGap[];
  close(): Promise<void>;
}

const NO_LATENCY: LatencyModel = { ttftMs: 0, msPerPromptToken: 0, msPerToken: 0 };

export async function startSimulator(options: SimulatorOptions = {}): Promise<Simulator> {
  const host: Host = {
    latency: { ...NO_LATENCY, ...options.latency },
    faults: { ...NO_FAULTS, ...options.faults },
    template: options.template ?? "chatml",
    tokenIds: options.tokenIds !== false,
    ledger: new HostLedger(),
    cache: options.kvBlocks === undefined ? null : new PrefixCache(options.kvBlocks),
    running: 0,
    slowFactor: 1,
    longTokens: options.longTokens ?? null,
    prefillFreeAt: options.sharedPrefill ? 0 : null,
  };
  const sockets = new Set<Socket>();

  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (chunk: Buffer) => chunks.push(chunk));
    req.on("end", () => {
      const body = Buffer.concat(chunks).toString("utf8");
      const path = (req.url ?? "/").split("?")[0] ?? "/";
      const post = req.method === "POST";
      const generate = (route: typeof completions) =>
        route(host, req, res, body).catch((error) => {
          if (!res.headersSent) sendJson(res, 500, { error: { message: String(error) } });
          else res.destroy();
        });
      if (post && path.endsWith("completions")) {
        host.ledger.noteSession(sessionOf(req));
      }
      if (post && path.endsWith("/chat/completions")) {
        generate(chatCompletions);
      } else if (post && path.endsWith("/completions")) {
        generate(completions);
      } else if (post && path === "/tokenize") {
        tokenizeRoute(host, res, body);
      } else if (post && path === "/detokenize") {
        detokenizeRoute(res, body);
      } else if (req.method === "GET" && path.endsWith("/models")) {
        sendJson(res, 200, {
          object: "list",
          data: [SIM_MODEL, JUDGE_MODEL].map((id) => ({
            id,
            object: "model",
            owned_by: "edgeroll",
          })),
        });
      } else if (req.method === "GET" && path === "/sim/answers") {
        const query = new URL(req.url ?? "/", "http://sim").searchParams;
        const answer = host.ledger.answer(query.get("model"), query.get("seed"));
        if (answer) sendJson(res, 200, answer);
        else
          sendJson(res, 404, { error: { message: "no recorded answer for that model and seed" } });
      } else if (req.method === "GET" && path === "/metrics") {
        res.writeHead(200, { "content-type": "text/plain; version=0.0.4" });
        res.end(prometheusMetrics(host));
      } else if (req.method === "GET" && path === "/sim/sessions") {
        const id = new URL(req.url ?? "/", "http://sim").searchParams.get("id") ?? "";
        sendJson(res, 200, { id, requests: host.ledger.sessionRequests(id) });
      } else if (req.method === "GET" && path === "/sim/stats") {
        sendJson(res, 200, host.ledger.stats());
      } else if (post && path === "/sim/stats/reset") {
        host.ledger.resetOverheads();
        sendJson(res, 200, { ok: true });
      } else {
        sendJson(res, 404, { error: { message: `no route ${req.method} ${path}` } });
      }
    });
  });
  server.on("connection", (socket) => {
    sockets.add(socket);
    socket.on("close", () => sockets.delete(socket));
  });
  const listen = (port: number) =>
    new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      server.listen(port, options.host ?? "127.0.0.1", () => {
        server.off("error", reject);
        resolve();
      });
    });
  const stop = async () => {
    for (const socket of sockets) socket.destroy();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  };
  await listen(options.port ?? 0);
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://${options.host ?? "127.0.0.1"}:${port}/v1`,
    port,
    stats: () => host.ledger.stats(),
    abandonedStreams: (session) => host.ledger.abandonedStreams(session),
    turnGaps: () => host.ledger.turnGaps(),
    clearCache: (kvBlocks = options.kvBlocks) => {
      host.cache = kvBlocks === undefined ? null : new PrefixCache(kvBlocks);
      if (host.prefillFreeAt !== null) host.prefillFreeAt = 0;
    },
    cacheCounts: () => ({ queries: host.cache?.queries ?? 0, hits: host.cache?.hits ?? 0 }),
    setSlow: (factor) => {
      host.slowFactor = factor;
    },
    kill: async () => {
      if (server.listening) await stop();
    },
    revive: async () => {
      if (server.listening) return;
      host.cache = options.kvBlocks === undefined ? null : new PrefixCache(options.kvBlocks);
      await listen(port);
    },
    close: async () => {
      if (server.listening) await stop();
    },
  };
}
