/**
 * The front door of `npm run dev`: it listens on the stack's port and hands every request to
 * wrangler dev (on a port of its own), except while the Worker does not build. wrangler then
 * holds requests until a build succeeds, so a client would hang with no word of why; the gate
 * answers them at once with a 503 `build_failed` naming the file, line and message, and hands
 * requests through again as soon as a build succeeds. Only `npm run dev` has one: the demo,
 * tests and benchmarks talk to wrangler directly, and stop at a failed build instead.
 */
import {
  createServer,
  type IncomingMessage,
  request,
  type Server,
  type ServerResponse,
} from "node:http";
import type { Socket } from "node:net";
import { errorBody } from "../views/error-body";
import { type BuildState, buildFailureMessage } from "./worker-build";

const FIX =
  "fix it and save: npm run dev rebuilds on every change, and serves again once it builds";

export class BuildGate {
  private state: BuildState = { ok: true };
  private readonly server: Server;
  private readonly sockets = new Set<Socket>();
  /** Requests handed to wrangler that have no answer yet: a failed build answers them. */
  private readonly waiting = new Map<ServerResponse, () => void>();

  constructor(readonly workerPort: number) {
    this.server = createServer((req, res) => this.handle(req, res));
    this.server.on("connection", (socket) => {
      this.sockets.add(socket);
      socket.on("close", () => this.sockets.delete(socket));
    });
  }

  setState(state: BuildState): void {
    this.state = state;
    if (state.ok) return;
    for (const [res, abandon] of this.waiting) {
      abandon();
      this.refuse(res);
    }
    this.waiting.clear();
  }

  listen(port: number): Promise<void> {
    return new Promise((resolve, reject) => {
      this.server.once("error", reject);
      this.server.listen(port, "127.0.0.1", () => resolve());
    });
  }

  async close(): Promise<void> {
    for (const socket of this.sockets) socket.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private refuse(res: ServerResponse): void {
    if (res.headersSent || this.state.ok) return;
    const body = errorBody("build_failed", `${buildFailureMessage(this.state)}; ${FIX}`);
    res.writeHead(503, { "content-type": "application/json", "retry-after": "2" });
    res.end(JSON.stringify(body));
  }

  private handle(req: IncomingMessage, res: ServerResponse): void {
    if (!this.state.ok) {
      req.resume();
      this.refuse(res);
      return;
    }
    const upstream = request(
      {
        host: "127.0.0.1",
        port: this.workerPort,
        method: req.method,
        path: req.url,
        headers: req.headers,
      },
      (answer) => {
        this.waiting.delete(res);
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
      },
    );
    this.waiting.set(res, () => upstream.destroy());
    upstream.on("error", (error) => {
      this.waiting.delete(res);
      if (res.headersSent) return void res.destroy();
      if (!this.state.ok) return this.refuse(res);
      res.writeHead(502, { "content-type": "application/json" });
      res.end(
        JSON.stringify(
          errorBody(
            "internal_error",
            `wrangler dev did not answer (${error.message}): its output says why`,
          ),
        ),
      );
    });
    res.on("close", () => {
      this.waiting.delete(res);
      if (!res.writableFinished) upstream.destroy();
    });
    req.pipe(upstream);
  }
}
