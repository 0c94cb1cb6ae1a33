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
import { SIM_MODEL } from "./directives";
import { type FaultRates, NO_FAULTS } from "./faults";
import type { Host, LatencyModel } from "./host";
import { HostLedger, type SimulatorStats, type TurnGap } from "./host-ledger";
import { sendJson } from "./http";
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
}

export interface Simulator {
  /** The OpenAI base URL, `http://host:port/v1`; the tokenizer endpoints are at its root. */
  url: string;
  port: number;
  stats(): SimulatorStats;
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
          data: [{ id: SIM_MODEL, object: "model", owned_by: "edgeroll" }],
        });
      } else if (req.method === "GET" && path === "/sim/answers") {
        const query = new URL(req.url ?? "/", "http://sim").searchParams;
        const answer = host.ledger.answer(query.get("model"), query.get("seed"));
        if (answer) sendJson(res, 200, answer);
        else
          sendJson(res, 404, { error: { message: "no recorded answer for that model and seed" } });
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
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(options.port ?? 0, options.host ?? "127.0.0.1", resolve);
  });
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://${options.host ?? "127.0.0.1"}:${port}/v1`,
    port,
    stats: () => host.ledger.stats(),
    turnGaps: () => host.ledger.turnGaps(),
    close: async () => {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
