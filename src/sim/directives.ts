/**
 * Per-request fault directives, written after the model name: `sim+fail:503:2+latency:300`.
 *
 *   hang             never answer
 *   stall            send headers and a first chunk, then nothing (streaming)
 *   fail:S[:N]       answer status S (the first N tries of each distinct request; default all)
 *   reset[:N]        drop the connection
 *   malformed[:N]    answer a body that does not parse
 *   cut[:N]          cut the stream half-way
 *   latency:MS       answer MS later
 *   context:T        reject prompts over T tokens as too long for the context
 */
export interface Directives {
  /** Faults applied to the first N attempts of each distinct request, checked in order. */
  failFirst: [fault: string, times: number][];
  /** A fault applied to every attempt. */
  always: "hang" | "stall" | null;
  extraLatencyMs: number;
  contextLimit?: number;
}

export function parseModel(model: string): { name: string; directives: Directives } {
  const [name = model, ...parts] = model.split("+");
  const directives: Directives = { failFirst: [], always: null, extraLatencyMs: 0 };
  for (const part of parts) {
    const [kind, a, b] = part.split(":");
    const times = (n: string | undefined) =>
      n === undefined ? Number.POSITIVE_INFINITY : Number(n);
    if (kind === "hang" || kind === "stall") directives.always = kind;
    else if (kind === "fail") directives.failFirst.push([`error_${Number(a)}`, times(b)]);
    else if (kind === "reset" || kind === "malformed" || kind === "cut")
      directives.failFirst.push([kind, times(a)]);
    else if (kind === "latency") directives.extraLatencyMs = Number(a);
    else if (kind === "context") directives.contextLimit = Number(a);
  }
  return { name, directives };
}
