/**
 * workerd prints some warnings of its own that look alarming in a test log and mean nothing
 * for edgeroll. They are listed here, each with why it is harmless, hidden from the output of
 * `vitest run`, and counted in one closing line so nothing disappears without a word.
 * EDGEROLL_WORKERD_VERBOSE=1 shows them as they come.
 */
const BENIGN: { pattern: RegExp; why: string }[] = [
  {
    // An alarm came due just as its object moved it (a group re-arming its heartbeat, or
    // deleting its storage once landed): workerd cancels the obsolete invocation and keeps the
    // time SQLite now holds (workerd src/workerd/io/actor-sqlite.c++, "NOSENTRY": not an error).
    pattern: /^NOSENTRY SQLite alarm handler canceled with requestScheduledAlarm\./,
    why: "an alarm invocation made obsolete by the object moving its alarm",
  },
];

export function hideBenignRuntimeLogs(): void {
  if (process.env.EDGEROLL_WORKERD_VERBOSE === "1") return;
  const hidden = new Map<string, number>();
  for (const stream of [process.stdout, process.stderr]) {
    const write = stream.write.bind(stream) as (chunk: unknown, ...rest: unknown[]) => boolean;
    stream.write = ((chunk: unknown, ...rest: unknown[]) => {
      const text =
        typeof chunk === "string"
          ? chunk
          : chunk instanceof Uint8Array
            ? Buffer.from(chunk).toString("utf8")
            : "";
      const match = BENIGN.find((b) => b.pattern.test(text));
      if (match === undefined) return write(chunk, ...rest);
      hidden.set(match.why, (hidden.get(match.why) ?? 0) + 1);
      const callback = rest.find((r) => typeof r === "function") as (() => void) | undefined;
      callback?.();
      return true;
    }) as typeof stream.write;
  }
  process.once("exit", () => {
    for (const [why, count] of hidden) {
      process.stderr.write(
        `(expected: workerd warned ${count}× about ${why}; hidden, see test/setup/runtime-log-filter.ts)\n`,
      );
    }
  });
}
