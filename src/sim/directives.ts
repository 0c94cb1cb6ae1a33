/**
 * Per-request fault directives, written after the model name: `sim+fail:503:2+latency:300`.
 *
 *   hang[:N]         never answer (the first N tries of each distinct request, or all)
 *   stall            send headers and a first chunk, then nothing (streaming)
 *   fail:S[:N]       answer status S (the first N tries of each distinct request; default all)
 *   reset[:N]        drop the connection
 *   malformed[:N]    answer a body that does not parse
 *   cut[:N]          cut the stream half-way
 *   latency:MS       answer MS later
 *   trickle:MS       stream one token every MS
 *   chaos:P          each try fails with probability P, in a random way (status, reset,
 *                    malformed body, cut stream)
 *   context:T        reject prompts over T tokens as too long for the context
 *   retryafter:S     the Retry-After header (seconds) sent with simulated errors (default 0)
 *   native           send tool calls as OpenAI `tool_calls` instead of text blocks
 *
 * A counted fault may be limited to one turn with `@T`: `fail:503:1@2` fails only requests
 * whose transcript already holds two assistant messages.
 */
export interface Directives {
  /** Faults applied to the first N attempts of each distinct request, checked in order. */
  failFirst: { fault: string; times: number; atTurn?: number }[];
  /** A fault applied to every attempt. */
  always: "hang" | "stall" | null;
  extraLatencyMs: number;
  trickleMs?: number;
  chaos: number;
  contextLimit?: number;
  retryAfterS: number;
  native: boolean;
}

export function parseModel(model: string): { name: string; directives: Directives } {
  const [name = model, ...parts] = model.split("+");
  const directives: Directives = {
    failFirst: [],
    always: null,
    extraLatencyMs: 0,
    retryAfterS: 0,
    chaos: 0,
    native: false,
  };
  for (const spec of parts) {
    const [part = "", turn] = spec.split("@");
    const atTurn = turn === undefined ? {} : { atTurn: Number(turn) };
    const [kind, a, b] = part.split(":");
    const times = (n: string | undefined) =>
      n === undefined ? Number.POSITIVE_INFINITY : Number(n);
    if (kind === "hang" && a !== undefined)
      directives.failFirst.push({ fault: "hang", times: Number(a), ...atTurn });
    else if (kind === "hang" || kind === "stall") directives.always = kind;
    else if (kind === "native") directives.native = true;
    else if (kind === "fail") {
      directives.failFirst.push({ fault: `error_${Number(a)}`, times: times(b), ...atTurn });
    } else if (kind === "reset" || kind === "malformed" || kind === "cut") {
      directives.failFirst.push({ fault: kind, times: times(a), ...atTurn });
    } else if (kind === "latency") directives.extraLatencyMs = Number(a);
    else if (kind === "context") directives.contextLimit = Number(a);
    else if (kind === "retryafter") directives.retryAfterS = Number(a);
    else if (kind === "trickle") directives.trickleMs = Number(a);
    else if (kind === "chaos") directives.chaos = Number(a);
  }
  return { name, directives };
}
