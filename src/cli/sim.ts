/** `edgeroll sim`: runs the inference simulator as a plain Node process until interrupted. */
import { type SimulatorOptions, startSimulator } from "../sim/server";
import { CliError } from "./project";

export interface SimFlags {
  port: string;
  host: string;
  ttftMs: string;
  msPerToken: string;
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
  const statuses = flags.errorStatuses
    .split(",")
    .map((s) => number("error-statuses", s.trim(), 599));
  return {
    port: number("port", flags.port, 65535),
    host: flags.host,
    latency: {
      ttftMs: number("ttft-ms", flags.ttftMs),
      msPerToken: number("ms-per-token", flags.msPerToken),
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
  };
}

export async function sim(flags: SimFlags): Promise<void> {
  const options = simOptions(flags);
  let simulator: Awaited<ReturnType<typeof startSimulator>>;
  try {
    simulator = await startSimulator(options);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "EADDRINUSE") {
      throw new CliError(
        `port ${options.port} is busy: stop what uses it or pass --port <another>`,
      );
    }
    throw error;
  }
  console.log(
    `edgeroll inference simulator listening on ${simulator.url} (OpenAI-compatible; Ctrl-C stops it)`,
  );
  await new Promise<void>((resolve) => {
    for (const signal of ["SIGINT", "SIGTERM"] as const) process.once(signal, () => resolve());
  });
  await simulator.close();
}
