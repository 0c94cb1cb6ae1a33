/**
 * `edgeroll eval`: one evaluation group per dataset example at a named policy version, with
 * progress, then the version's metrics from `eval_results` (pass@k, maj@k, mean reward).
 */
import Table from "cli-table3";
import type { EvalResultRow } from "../client/edgeroll-client";
import { COMPACT } from "./progress";
import { CliError } from "./project";
import { type RunFlags, runDataset } from "./run";

export interface EvalFlags extends Omit<RunFlags, "kind"> {
  policyVersion: string;
  /** Comma-separated, e.g. "1,4,8"; absent: every k the view has. */
  k?: string;
}

/** The k to show: powers of two, as the view computes them. */
export function parseKs(value: string | undefined, groupSize: number): number[] | undefined {
  if (value === undefined) return undefined;
  const ks = value.split(",").map((part) => Number(part.trim()));
  for (const k of ks)
    if (!Number.isInteger(k) || k < 1 || (k & (k - 1)) !== 0 || k > groupSize)
      throw new CliError(
        `--k takes powers of two from 1 to the group size (${groupSize}), comma-separated; got "${value}"`,
      );
  return ks;
}

const fixed = (value: number | null) => (value === null ? "-" : value.toFixed(3));

/** The version's rows as a table, one line per k. */
export function evalTable(rows: readonly EvalResultRow[]): string {
  const table = new Table({
    head: ["k", "examples", "episodes", "pass@k", "maj@k", "avg reward", "avg success"],
    style: { head: [], border: [] },
    chars: COMPACT,
  });
  for (const r of rows)
    table.push([
      r.k,
      r.examples,
      r.episodes,
      fixed(r.pass_at_k),
      fixed(r.maj_at_k),
      fixed(r.avg_reward),
      fixed(r.avg_success),
    ]);
  return table.toString();
}

export async function evaluate(flags: EvalFlags): Promise<void> {
  const groupSize = Number(flags.groupSize);
  const ks = parseKs(flags.k, Number.isInteger(groupSize) ? groupSize : 256);
  const { client, runId } = await runDataset({ ...flags, kind: "eval" }, "eval");
  const version = Number(flags.policyVersion);
  const rows = (await client.getEvals(runId)).filter(
    (r) =>
      r.env === flags.env && r.policy_version === version && (ks === undefined || ks.includes(r.k)),
  );
  console.log(`\n${flags.env} at policy version ${version} (run ${runId}, eval_results):`);
  if (rows.length === 0) {
    console.log(
      "No measured episode: every one failed, or was sampled partly at another version (docs/architecture.md, Evaluation groups).",
    );
    return;
  }
  // One table per environment version: a run that evaluated under two sets of rules gets two.
  const byEnvVersion = new Map<string | null, EvalResultRow[]>();
  for (const r of rows)
    byEnvVersion.set(r.env_version, [...(byEnvVersion.get(r.env_version) ?? []), r]);
  for (const [envVersion, versionRows] of byEnvVersion) {
    if (byEnvVersion.size > 1) console.log(`environment version ${envVersion ?? "unrecorded"}:`);
    console.log(evalTable(versionRows));
    const unmeasured = versionRows[0]?.unmeasured_episodes ?? 0;
    if (unmeasured > 0)
      console.log(
        `${unmeasured} episodes are not counted: failed, unscored, or sampled partly at another version.`,
      );
  }
}
