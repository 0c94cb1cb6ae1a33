/**
 * `edgeroll export`: a run's landed episodes as JSON lines — scored episodes (`rl`), SFT rows
 * from the successful ones (`sft`: rejection sampling), or token-exact samples (`tokens`) in
 * edgeroll's shape, TRL's or Atropos's (token-formats.ts).
 */
import { appendFileSync, writeFileSync } from "node:fs";
import type { EpisodePage } from "../client/edgeroll-client";
import { type ApiFlags, apiClient } from "./api-client";
import { ensureEnvironment, runExists, unknownRun } from "./known-names";
import { CliError } from "./project";
import {
  atroposGroup,
  type SampledEpisode,
  samplesRows,
  TOKEN_FORMATS,
  type TokenFormat,
  trlRows,
} from "./token-formats";

export interface ExportFlags extends ApiFlags {
  run: string;
  env?: string;
  kind: string;
  format: string;
  out?: string;
}

const KINDS = ["rl", "sft", "tokens"] as const;
type Kind = (typeof KINDS)[number];
type Episode = EpisodePage["episodes"][number];

function formatOf(kind: Kind, format: string): "jsonl" | TokenFormat {
  if (kind !== "tokens") {
    if (format !== "jsonl")
      throw new CliError(`--format ${format} is for --kind tokens; use jsonl`);
    return "jsonl";
  }
  if (format === "jsonl") return "samples";
  if (!TOKEN_FORMATS.includes(format as TokenFormat))
    throw new CliError(`--format must be one of ${TOKEN_FORMATS.join(", ")}, got "${format}"`);
  return format as TokenFormat;
}

function sftLine(e: Episode): string[] {
  const sft = (e as { sft?: Record<string, unknown> | null }).sft;
  if (!sft) return [];
  return [
    JSON.stringify({
      episode_id: e.episode_id,
      example_id: e.example_id,
      env: e.env,
      reward: e.reward,
      ...sft,
    }),
  ];
}

function sampled(e: Episode): SampledEpisode {
  return { ...e, samples: (e as { samples?: SampledEpisode["samples"] }).samples ?? [] };
}

export async function exportRun(flags: ExportFlags): Promise<void> {
  if (!KINDS.includes(flags.kind as Kind))
    throw new CliError(`--kind must be one of ${KINDS.join(", ")}, got "${flags.kind}"`);
  const kind = flags.kind as Kind;
  const format = formatOf(kind, flags.format);
  const api = await apiClient(flags);
  if (flags.env) await ensureEnvironment(api, flags.env);
  if (!(await runExists(api, flags.run))) throw unknownRun(flags.run);
  const write = (lines: string[]) => {
    if (lines.length === 0) return;
    const text = `${lines.join("\n")}\n`;
    if (flags.out) appendFileSync(flags.out, text);
    else process.stdout.write(text);
  };
  if (flags.out) writeFileSync(flags.out, "");
  const include = { rl: ["messages", "per_turn"], sft: ["sft"], tokens: ["tokens"] }[kind];
  /** Atropos wants whole rollout groups: episodes wait here until the run is read. */
  const groups = new Map<string, SampledEpisode[]>();
  let cursor: string | undefined;
  let rows = 0;
  do {
    const page = await api.listEpisodes({
      run_id: flags.run,
      // Evaluations measure and never train: their held-out episodes stay out of training data.
      kind: "train",
      // Neither do the over-long episodes a run filters: an export holds what a lease serves.
      filtered: false,
      ...(flags.env ? { env: flags.env } : {}),
      ...(kind === "sft" ? { success: true } : {}),
      include,
      limit: 200,
      ...(cursor ? { cursor } : {}),
    });
    const lines = page.episodes.flatMap((e): string[] => {
      if (format === "jsonl") return kind === "rl" ? [JSON.stringify(e)] : sftLine(e);
      const episode = sampled(e);
      if (format === "atropos") {
        groups.set(episode.group_id, [...(groups.get(episode.group_id) ?? []), episode]);
        return [];
      }
      return (format === "trl" ? trlRows(episode) : samplesRows(episode)).map((r) =>
        JSON.stringify(r),
      );
    });
    write(lines);
    rows += lines.length;
    cursor = page.next_cursor ?? undefined;
  } while (cursor !== undefined);
  if (format === "atropos") {
    const lines = [...groups.values()].flatMap((g) => {
      const group = atroposGroup(g);
      return group ? [JSON.stringify(group)] : [];
    });
    write(lines);
    rows += lines.length;
  }
  const what = {
    rl: "episodes",
    sft: "SFT rows",
    tokens: format === "atropos" ? "Atropos groups" : `${format} rows`,
  }[kind];
  console.error(
    `exported ${rows} ${what} of run ${flags.run}${flags.out ? ` to ${flags.out}` : ""}`,
  );
}
