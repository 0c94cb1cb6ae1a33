/** `edgeroll sim`: runs the inference simulator as a plain Node process until interrupted. */
import { type SimFleet, startSimFleet } from "../sim/fleet";
import type { SimulatorOptions } from "../sim/server";
import { CliError } from "./project";

export interface SimFlags {
  port: string;
  host: string;
  ttftMs: string;
  msPerToken: string;
  tokensPerS?: string;
  long?: string;
  msPerPromptToken: string;
  errorRate: string;
  errorStatuses: string;
  hangRate: string;
  malformedRate: string;
  cutRate: string;
  resetRate: string;
  template: string;
  /** Commander's `--no-token-ids`. */
  tokenIds: boolean;
  hosts: string;
  kvBlocks?: string;
  sharedPrefill?: boolean;
  slow?: string;
  kill?: string;
}

function number(flag: string, value: string, max = Number.POSITIVE_INFINITY): number {
  const n = Number(value);
  if (!Number.isFinite(n) || n < 0 || n > max)
    throw new CliError(`--${flag} must be a number from 0 to ${max}, got "${value}"`);
  return n;
}

export function simOptions(flags: SimFlags): SimulatorOptions {
  if (flags.template !== "chatml" && flags.template !== "drop-reasoning")
    throw new CliError(`--template must be chatml or drop-reasoning, got "${flags.template}"`);
  if (flags.tokensPerS !== undefined && Number(flags.msPerToken) !== 0)
    throw new CliError("--tokens-per-s and --ms-per-token both set the token rate: give one");
  const tokensPerS =
    flags.tokensPerS === undefined ? null : number("tokens-per-s", flags.tokensPerS);
  if (tokensPerS === 0) throw new CliError("--tokens-per-s must be more than 0");
  const statuses = flags.errorStatuses
    .split(",")
    .map((s) => number("error-statuses", s.trim(), 599));
  return {
    port: number("port", flags.port, 65535),
    host: flags.host,
    latency: {
      ttftMs: number("ttft-ms", flags.ttftMs),
      msPerToken:
        tokensPerS === null ? number("ms-per-token", flags.msPerToken) : 1000 / tokensPerS,
      msPerPromptToken: number("ms-per-prompt-token", flags.msPerPromptToken),
    },
    faults: {
      errorRate: number("error-rate", flags.errorRate, 1),
      errorStatuses: statuses,
      hangRate: number("hang-rate", flags.hangRate, 1),
      malformedRate: number("malformed-rate", flags.malformedRate, 1),
      cutRate: number("cut-rate", flags.cutRate, 1),
      resetRate: number("reset-rate", flags.resetRate, 1),
    },
    template: flags.template,
    tokenIds: flags.tokenIds,
    ...(flags.kvBlocks === undefined ? {} : { kvBlocks: number("kv-blocks", flags.kvBlocks) }),
    sharedPrefill: flags.sharedPrefill === true,
    ...(flags.long === undefined ? {} : { longTokens: Math.round(number("long", flags.long)) }),
  };
}

/** `--slow i:factor`. */
export function slowFlag(value: string, hosts: number): { host: number; factor: number } {
  const m = /^(\d+):(\d+(?:\.\d+)?)$/.exec(value);
  const host = Number(m?.[1]);
  if (!m || host >= hosts)
    throw new CliError(
      `--slow must be <host>:<factor> with a host from 0 to ${hosts - 1}, got "${value}"`,
    );
  return { host, factor: Number(m[2]) };
}

/** `--kill i@s[-t]`. */
export function killFlag(
  value: string,
  hosts: number,
): { host: number; atS: number; backAtS: number | null } {
  const m = /^(\d+)@(\d+(?:\.\d+)?)(?:-(\d+(?:\.\d+)?))?$/.exec(value);
  const host = Number(m?.[1]);
  if (!m || host >= hosts || (m[3] !== undefined && Number(m[3]) <= Number(m[2])))
    throw new CliError(
      `--kill must be <host>@<seconds>[-<seconds back>] with a host from 0 to ${hosts - 1} and back after down, got "${value}"`,
    );
  return { host, atS: Number(m[2]), backAtS: m[3] === undefined ? null : Number(m[3]) };
}

export async function sim(flags: SimFlags): Promise<void> {
  const options = simOptions(flags);
  const count = number("hosts", flags.hosts, 256);
  if (count < 1 || !Number.isInteger(count))
    throw new CliError("--hosts must be a whole number from 1");
  const slow = flags.slow === undefined ? null : slowFlag(flags.slow, count);
  const kill = flags.kill === undefined ? null : killFlag(flags.kill, count);
  let fleet: SimFleet;
  try {
    fleet = await startSimFleet(count, options);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "EADDRINUSE") {
      throw new CliError(
        `port ${options.port} is busy: stop what uses it or pass --port <another>`,
      );
    }
    throw error;
  }
  const [first] = fleet.hosts;
  if (count === 1 && first)
    console.log(
      `edgeroll inference simulator listening on ${first.url} (OpenAI-compatible; Ctrl-C stops it)`,
    );
  else
    console.log(
      `edgeroll inference simulator: a fleet of ${count} hosts (Ctrl-C stops them)\n  INFERENCE_BASE_URL=${fleet.baseUrl}`,
    );
  if (slow) fleet.hosts[slow.host]?.setSlow(slow.factor);
  const timers: ReturnType<typeof setTimeout>[] = [];
  if (kill) {
    const target = fleet.hosts[kill.host];
    timers.push(
      setTimeout(() => {
        console.log(`host ${kill.host} (${target?.url}) stopped`);
        void target?.kill();
      }, kill.atS * 1000),
    );
    if (kill.backAtS !== null)
      timers.push(
        setTimeout(() => {
          void target?.revive().then(() => console.log(`host ${kill.host} (${target?.url}) back`));
        }, kill.backAtS * 1000),
      );
  }
  await new Promise<void>((resolve) => {
    for (const signal of ["SIGINT", "SIGTERM"] as const) process.once(signal, () => resolve());
  });
  for (const timer of timers) clearTimeout(timer);
  await fleet.close();
}
