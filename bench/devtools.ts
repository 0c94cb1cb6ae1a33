/** A minimal Chrome DevTools Protocol client over workerd's inspector (wrangler's --inspector-port). */
import WebSocket from "ws";

export interface DevTools {
  send<T>(method: string, params?: object): Promise<T>;
  /** Calls `handler` with the params of every event named `method`. */
  on(method: string, handler: (params: unknown) => void): void;
  close(): void;
}

/** The Worker's inspector target on `port` (the first one wrangler lists). */
export async function connectWorker(port: number): Promise<DevTools> {
  const targets = (await (await fetch(`http://127.0.0.1:${port}/json`)).json()) as {
    webSocketDebuggerUrl: string;
  }[];
  const target = targets[0];
  if (target === undefined) throw new Error("the inspector lists no Worker");
  return devtools(target.webSocketDebuggerUrl);
}

export async function devtools(url: string): Promise<DevTools> {
  // The `ws` package: Node's built-in WebSocket is refused by workerd's inspector.
  const socket = new WebSocket(url, { maxPayload: 2 ** 30 });
  await new Promise((open, fail) => {
    socket.once("open", open);
    socket.once("error", fail);
  });
  let next = 0;
  const pending = new Map<number, (result: unknown) => void>();
  const handlers = new Map<string, ((params: unknown) => void)[]>();
  socket.on("message", (data) => {
    const message = JSON.parse(String(data)) as {
      id?: number;
      result?: unknown;
      method?: string;
      params?: unknown;
    };
    if (message.id !== undefined) pending.get(message.id)?.(message.result);
    else if (message.method !== undefined)
      for (const handler of handlers.get(message.method) ?? []) handler(message.params);
  });
  return {
    send<T>(method: string, params: object = {}): Promise<T> {
      const id = ++next;
      socket.send(JSON.stringify({ id, method, params }));
      return new Promise((resolve) => pending.set(id, resolve as (result: unknown) => void));
    },
    on(method, handler) {
      handlers.set(method, [...(handlers.get(method) ?? []), handler]);
    },
    close: () => socket.close(),
  };
}

/** Where a profile's frame is: V8's ids, 0-based line. */
export interface FrameLocation {
  scriptId: string;
  lineNumber: number;
}

/**
 * A frame's source line, trimmed to `width`: the bundle's line numbers mean little alone. Each
 * script's source is asked of the inspector once (it needs `Debugger.enable`).
 */
export function sourceLines(cdp: DevTools, width: number) {
  const sources = new Map<string, string[]>();
  return async (frame: FrameLocation | undefined): Promise<string> => {
    if (frame === undefined || frame.scriptId === "0" || frame.lineNumber < 0) return "";
    let lines = sources.get(frame.scriptId);
    if (lines === undefined) {
      const { scriptSource } = await cdp.send<{ scriptSource: string }>(
        "Debugger.getScriptSource",
        { scriptId: frame.scriptId },
      );
      lines = (scriptSource ?? "").split("\n");
      sources.set(frame.scriptId, lines);
    }
    return (lines[frame.lineNumber] ?? "").trim().slice(0, width);
  };
}
