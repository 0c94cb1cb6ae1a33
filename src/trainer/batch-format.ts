/**
 * A leased batch as a trainer receives it: whole groups (less the over-long episodes a group
 * filters), each episode with its reward, advantages, status and transcript, the sampled
 * assistant turns marked. Reads page through D1 a slice of groups at a time, each query binding
 * one JSON parameter, so a batch of any size stays inside D1's parameter, statement and
 * per-invocation limits.
 */
import { asc, sql } from "drizzle-orm";
import { drizzle } from "drizzle-orm/d1";
import type { EpisodeRecord, GroupRecord, MessageRecord } from "../db/queries";
import { episodes, groups, messages } from "../db/schema";
import type { Overlong } from "../domain/group-options";
import { overlongTreatment } from "../domain/overlong";
import { type ChatMessage, errorMessage, transcriptSftRow } from "../sdk";
import type { TokenEncoding } from "../tokens/sample-encoding";
import type { INCLUDE } from "./lease-request";
import {
  episodeTokens,
  type GroupTokens,
  type GroupTurns,
  readTokenObjects,
} from "./token-samples";

type Include = (typeof INCLUDE)[number];

/** Groups per read: about a thousand episodes' messages per query at typical group sizes. */
const GROUPS_PER_PAGE = 100;

/** The message columns a trainer receives; reading only these keeps a lease's result small. */
const TRAINER_MESSAGE_COLUMNS = {
  episodeId: messages.episodeId,
  turn: messages.turn,
  role: messages.role,
  content: messages.content,
  name: messages.name,
  toolCalls: messages.toolCalls,
  toolCallId: messages.toolCallId,
  sampled: messages.sampled,
  finishReason: messages.finishReason,
  completionTokens: messages.completionTokens,
  policyVersion: messages.policyVersion,
};

type TrainerMessage = Pick<MessageRecord, keyof typeof TRAINER_MESSAGE_COLUMNS>;

/** A landed message in OpenAI's wire shape (what a trainer reads, and a re-score grades). */
export function wireMessage(m: TrainerMessage): ChatMessage {
  return {
    role: m.role,
    content: m.content,
    ...(m.name === null ? {} : { name: m.name }),
    ...(m.toolCalls === null ? {} : { tool_calls: m.toolCalls }),
    ...(m.toolCallId === null ? {} : { tool_call_id: m.toolCallId }),
  };
}

/** Under per-turn credit a sampled turn's advantage is its own; otherwise the episode's. */
function turnCredit(episode: EpisodeRecord, turn: number) {
  return {
    reward: episode.perTurnRewards?.[turn] ?? null,
    advantage: episode.perTurnAdvantages?.[turn] ?? episode.advantage,
  };
}

/** Rejection-sampling SFT: a successful episode's own transcript as the target. */
function sftRow(episode: EpisodeRecord, transcript: readonly TrainerMessage[]) {
  if (episode.success !== true) return { sft: null };
  try {
    const prompt = transcript.filter((m) => m.turn === null).map(wireMessage);
    const target = transcript.filter((m) => m.turn !== null).map(wireMessage);
    const row = transcriptSftRow(episode.exampleId, prompt, target);
    return {
      sft: {
        prompt_messages: row.promptMessages,
        target_messages: row.targetMessages,
        mask: row.mask,
        text: row.text,
        spans: row.spans,
        masking: row.masking,
      },
    };
  } catch (error) {
    return { sft: null, sft_error: errorMessage(error) };
  }
}

/** What an episode's token samples are built from: its group's token object and policy. */
export interface EpisodeTokenSource {
  group: GroupTokens | undefined;
  encoding: TokenEncoding;
  /** The group's over-long policy: under `mask`, an over-long episode's samples train nothing. */
  overlong: Overlong;
}

export function episodeForTrainer(
  episode: EpisodeRecord,
  transcript: readonly TrainerMessage[],
  include: readonly Include[],
  tokens: EpisodeTokenSource | null = null,
) {
  const perTurn = include.includes("per_turn");
  return {
    episode_id: episode.id,
    index: episode.idx,
    status: episode.status,
    end_reason: episode.endReason,
    failure_reason: episode.failureReason,
    reward: episode.score,
    threshold: episode.threshold,
    success: episode.success,
    overlong: episode.overlong,
    advantage: episode.advantage,
    ...(perTurn
      ? { per_turn_rewards: episode.perTurnRewards, per_turn_advantages: episode.perTurnAdvantages }
      : {}),
    turns: episode.turns,
    prompt_tokens: episode.promptTokens,
    completion_tokens: episode.completionTokens,
    total_tokens: episode.totalTokens,
    latency_ms: episode.latencyMs,
    policy_version: episode.policyVersion,
    // The policy span: the versions its sampled turns were sent at (null if it sampled none).
    policy_version_min: episode.policyVersionMin,
    policy_version_max: episode.policyVersionMax,
    // Native tool calling: which of the group's `tools` its prompts rendered.
    ...(episode.toolsHash === null ? {} : { tools_hash: episode.toolsHash }),
    ...(include.includes("messages")
      ? {
          messages: transcript.map((m) => ({
            ...wireMessage(m),
            sampled: m.sampled,
            turn: m.turn,
            ...(m.sampled && m.turn !== null && episode.status !== "failed"
              ? turnCredit(episode, m.turn)
              : {}),
            ...(m.sampled
              ? {
                  finish_reason: m.finishReason,
                  completion_tokens: m.completionTokens,
                  policy_version: m.policyVersion,
                }
              : {}),
          })),
        }
      : {}),
    ...(include.includes("sft") ? sftRow(episode, transcript) : {}),
    ...(tokens
      ? episodeTokens(
          episode,
          tokens.group,
          tokens.encoding,
          overlongTreatment(tokens.overlong, episode.overlong) === "mask",
        )
      : {}),
  };
}

export function groupForTrainer(
  group: GroupRecord,
  groupEpisodes: readonly EpisodeRecord[],
  transcripts: ReadonlyMap<string, TrainerMessage[]>,
  include: readonly Include[],
  tokens: { turns: GroupTurns; encoding: TokenEncoding } | null = null,
) {
  return {
    group_id: group.id,
    run_id: group.runId,
    env: group.env,
    // The environment's rules the group was played by (null: landed before versions were kept).
    env_version: group.envVersion,
    policy_version: group.policyVersion,
    policy_version_min: group.policyVersionMin,
    policy_version_max: group.policyVersionMax,
    example: group.example,
    credit_assignment: group.creditApplied,
    advantage_mode: group.advantage,
    overlong: group.overlong,
    uniform: group.uniform,
    deliveries: group.deliveries,
    score_mean: group.scoreMean,
    score_std: group.scoreStd,
    warnings: group.warnings,
    // Native tool calling: the definitions the episodes offered, by `tools_hash`.
    ...(group.tools === null ? {} : { tools: group.tools }),
    // Over-long episodes the group filters stay in SQL and out of every batch.
    episodes: groupEpisodes
      .filter((e) => overlongTreatment(group.overlong, e.overlong) !== "filter")
      .map((e) =>
        episodeForTrainer(
          e,
          transcripts.get(e.id) ?? [],
          include,
          tokens && {
            group: tokens.turns.get(group.id),
            encoding: tokens.encoding,
            overlong: group.overlong,
          },
        ),
      ),
  };
}

const inIds = (column: typeof groups.id | typeof episodes.groupId, ids: readonly string[]) =>
  sql`${column} IN (SELECT value FROM json_each(${JSON.stringify(ids)}))`;

/** Reads the claimed groups, in claim order, with what the trainer asked to include. */
export async function readBatchGroups(
  db: D1Database,
  groupIds: readonly string[],
  include: readonly Include[],
  tokens: { bucket: R2Bucket; encoding: TokenEncoding } | null = null,
) {
  const d1 = drizzle(db);
  const out = [];
  for (let i = 0; i < groupIds.length; i += GROUPS_PER_PAGE) {
    const page = groupIds.slice(i, i + GROUPS_PER_PAGE);
    const needMessages = include.includes("messages") || include.includes("sft");
    const [groupRows, episodeRows, messageRows] = await Promise.all([
      d1.select().from(groups).where(inIds(groups.id, page)).all(),
      d1
        .select()
        .from(episodes)
        .where(inIds(episodes.groupId, page))
        .orderBy(asc(episodes.groupId), asc(episodes.idx))
        .all(),
      needMessages
        ? d1
            .select(TRAINER_MESSAGE_COLUMNS)
            .from(messages)
            // Through the episodes, so SQLite walks the messages' primary key, not a scan.
            .where(
              sql`${messages.episodeId} IN (SELECT id FROM episodes WHERE group_id IN (SELECT value FROM json_each(${JSON.stringify(page)})))`,
            )
            .orderBy(asc(messages.episodeId), asc(messages.seq))
            .all()
        : Promise.resolve([] as TrainerMessage[]),
    ]);
    const transcripts = new Map<string, TrainerMessage[]>();
    for (const m of messageRows) {
      const list = transcripts.get(m.episodeId) ?? [];
      list.push(m);
      transcripts.set(m.episodeId, list);
    }
    const turns =
      tokens && include.includes("tokens")
        ? await readTokenObjects(tokens.bucket, groupRows)
        : null;
    const byId = new Map(groupRows.map((g) => [g.id, g]));
    for (const id of page) {
      const group = byId.get(id);
      if (group)
        out.push(
          groupForTrainer(
            group,
            episodeRows.filter((e) => e.groupId === id),
            transcripts,
            include,
            turns && tokens && { turns, encoding: tokens.encoding },
          ),
        );
    }
  }
  return out;
}
