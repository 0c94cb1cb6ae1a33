/** `edgeroll pull | ack | release`: what a trainer's shell loop does, over the HTTP API. */
import { appendFileSync } from "node:fs";
import type { LeaseInput } from "../client/edgeroll-client";
import { type ApiFlags, apiClient } from "./api-client";
import { ensureEnvironment, runExists, unknownRun } from "./known-names";
import { CliError } from "./project";

function positiveInt(flag: string, value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1)
    throw new CliError(`--${flag} must be a positive integer, got "${value}"`);
  return n;
}

export interface PullFlags extends ApiFlags {
  maxGroups?: string;
  maxEpisodes?: string;
  run?: string;
  env?: string;
  leaseSeconds?: string;
  include: string;
  tokenEncoding: string;
  includeUniform?: boolean;
  ack?: boolean;
  out?: string;
}

/** Leases one batch and writes its groups as JSON lines (appended to --out, or to stdout). */
export async function pull(flags: PullFlags): Promise<void> {
  const maxGroups = positiveInt("max-groups", flags.maxGroups);
  const maxEpisodes = positiveInt("max-episodes", flags.maxEpisodes);
  const leaseSeconds = positiveInt("lease-seconds", flags.leaseSeconds);
  if (maxGroups === undefined && maxEpisodes === undefined)
    throw new CliError("give --max-groups, --max-episodes, or both");
  const api = await apiClient(flags);
  if (flags.env) await ensureEnvironment(api, flags.env);
  const batch = await api.lease({
    ...(maxGroups === undefined ? {} : { max_groups: maxGroups }),
    ...(maxEpisodes === undefined ? {} : { max_episodes: maxEpisodes }),
    ...(flags.run ? { run_id: flags.run } : {}),
    ...(flags.env ? { env: flags.env } : {}),
    ...(leaseSeconds === undefined ? {} : { lease_seconds: leaseSeconds }),
    ...(flags.includeUniform ? { skip_uniform_groups: false } : {}),
    include: flags.include.split(",").filter(Boolean) as LeaseInput["include"],
    token_encoding: flags.tokenEncoding as LeaseInput["token_encoding"],
  });
  if (batch.batch_id === null) {
    if (flags.run && !(await runExists(api, flags.run))) throw unknownRun(flags.run);
    console.error(
      `nothing to lease: no scored group is waiting${flags.includeUniform ? "" : " (groups whose episodes all scored the same are skipped: no GRPO signal; --include-uniform takes them)"}`,
    );
    return;
  }
  const lines = batch.groups.map((g) => `${JSON.stringify(g)}\n`).join("");
  if (flags.out) appendFileSync(flags.out, lines);
  else process.stdout.write(lines);
  const episodes = batch.groups.flatMap((g) => g.episodes);
  const rewards = episodes.flatMap((e) => (e.reward === null ? [] : [e.reward]));
  const mean =
    rewards.length > 0 ? (rewards.reduce((a, b) => a + b, 0) / rewards.length).toFixed(3) : "n/a";
  console.error(
    `leased ${batch.batch_id}: ${batch.groups.length} groups, ${episodes.length} episodes, mean reward ${mean}` +
      (flags.out ? `, appended to ${flags.out}` : ""),
  );
  if (flags.ack) {
    const acked = await api.ack(batch.batch_id);
    console.error(
      `acked ${acked.acked_groups} groups${acked.lost_groups ? ` (${acked.lost_groups} lost to an expired lease)` : ""}`,
    );
  } else {
    console.error(
      `not acked: run \`edgeroll ack ${batch.batch_id}\` before ${batch.lease_expires_at}, or the groups return`,
    );
  }
}

export async function ack(batchId: string, flags: ApiFlags): Promise<void> {
  const result = await (await apiClient(flags)).ack(batchId);
  console.log(
    result.already_acked
      ? `${batchId} was already acked`
      : `acked ${result.acked_groups} groups${result.lost_groups ? `; ${result.lost_groups} had gone to another lease` : ""}`,
  );
}

export async function release(batchId: string, flags: ApiFlags): Promise<void> {
  const result = await (await apiClient(flags)).release(batchId);
  console.log(
    result.already_released
      ? `${batchId} was already released`
      : `released ${result.released_groups} groups`,
  );
}
