/** D1 tables where finished groups land: one row per group, per episode, per message. */
import { index, integer, primaryKey, real, sqliteTable, text } from "drizzle-orm/sqlite-core";
import type { BatchState, DeliveryState } from "../domain/delivery";
import type { EpisodeState, FailureReason } from "../domain/episode-outcomes";
import type {
  Advantage,
  Algorithm,
  CreditAssignment,
  Generation,
  GroupKind,
  Overlong,
} from "../domain/group-options";
import type { GroupStatus } from "../domain/group-status";
import type { ChatMessage, JsonObject, TaskExample, ToolCall, ToolDefinition } from "../sdk";
import type { TokenMode } from "../tokens/token-mode";

/**
 * Timestamps are ISO-8601 text, so SQL users can read and compare them as they are. Text columns
 * that hold an enum are typed by the zod enum the code validates with (src/domain/); the types
 * are TypeScript's only, SQLite keeps them as text.
 */
export const groups = sqliteTable(
  "groups",
  {
    id: text("id").primaryKey(),
    runId: text("run_id").notNull(),
    env: text("env").notNull(),
    /**
     * The environment's declared `version` when the group started (a built-in's class, a remote
     * one's `/info`); null for groups from before versions were recorded.
     */
    envVersion: text("env_version"),
    exampleId: text("example_id").notNull(),
    example: text("example", { mode: "json" }).$type<TaskExample>().notNull(),
    /** The version the group started at: the one asked for, else the run's (run_policies). */
    policyVersion: integer("policy_version").notNull(),
    /**
     * The policy span: the lowest and highest run version any of its turns was sampled at (each
     * turn records the run's version when its generation was sent). Null until it lands, and
     * for a group that sampled nothing. Leases filter on the lowest, else `policy_version`.
     */
    policyVersionMin: integer("policy_version_min"),
    policyVersionMax: integer("policy_version_max"),
    groupSize: integer("group_size").notNull(),
    /** `running` from its start (SQL sees it at once), then `landed` or `failed`. */
    status: text("status").$type<GroupStatus>().notNull(),
    failureReason: text("failure_reason"),
    /** The credit requested, and the one applied after any per-turn fallback. */
    creditAssignment: text("credit_assignment").$type<CreditAssignment>().notNull(),
    creditApplied: text("credit_applied"),
    advantage: text("advantage").$type<Advantage>().notNull(),
    /** `chat` (the host renders each prompt) or `tokens` (token-in generation). */
    generation: text("generation").$type<Generation>().notNull().default("chat"),
    /** `grpo`, or `opd` (on-policy distillation from `teacher_model`). */
    algorithm: text("algorithm").$type<Algorithm>().notNull().default("grpo"),
    teacherModel: text("teacher_model"),
    /**
     * `train`, or `eval`: an evaluation of its `policy_version`, never leased (the
     * `eval_results` view reads it).
     */
    kind: text("kind").$type<GroupKind>().notNull().default("train"),
    /**
     * The over-long policy: `keep`, `mask` or `filter` its episodes whose last action hit its
     * token cap (`episodes.overlong`). Groups from before the policy are `keep`, as they ran.
     */
    overlong: text("overlong").$type<Overlong>().notNull().default("keep"),
    /**
     * Native tool calling: the tool definitions its episodes offered, by their hash
     * (`episodes.tools_hash`); null for a text-only environment.
     */
    tools: text("tools", { mode: "json" }).$type<Record<string, ToolDefinition[]>>(),
    /**
     * Calls to the inference hosts that failed (no answer, an error status, a timeout), by host
     * base URL; null when none did. The `host_stats` view counts them.
     */
    hostFailures: text("host_failures", { mode: "json" }).$type<Record<string, number>>(),
    warnings: text("warnings", { mode: "json" }).$type<string[]>().notNull(),
    scoreMean: real("score_mean"),
    scoreStd: real("score_std"),
    episodesFailed: integer("episodes_failed"),
    /**
     * Every scored episode has the same score: no GRPO signal, so not served unless asked. Never
     * set for on-policy distillation, whose signal is per token.
     */
    uniform: integer("uniform", { mode: "boolean" }).notNull().default(false),
    /** The group's token object in the TOKENS bucket, and its size; null without tokens. */
    tokenObject: text("token_object"),
    tokenObjectBytes: integer("token_object_bytes"),
    /**
     * Where a landed group is on its way to a trainer: `available`, `leased`, `acked`, or
     * `parked` (delivered MAX_DELIVERIES times without an ack: poison, kept for inspection).
     */
    deliveryState: text("delivery_state").$type<DeliveryState>().notNull().default("available"),
    deliveries: integer("deliveries").notNull().default(0),
    leaseId: text("lease_id"),
    leaseExpiresAt: text("lease_expires_at"),
    ackedAt: text("acked_at"),
    sampling: text("sampling", { mode: "json" }).$type<JsonObject>().notNull(),
    maxContextTokens: integer("max_context_tokens").notNull(),
    promptText: text("prompt_text").notNull(),
    requestHash: text("request_hash").notNull(),
    idempotencyKey: text("idempotency_key"),
    createdAt: text("created_at").notNull(),
    finishedAt: text("finished_at"),
    /** The principal (token digest prefix) that started it: its token's in-flight quota. */
    startedBy: text("started_by"),
    /** Time its score calls took (every attempt): environment time in the run's bill. */
    scoreMs: integer("score_ms").notNull().default(0),
  },
  (t) => [
    index("groups_run_created").on(t.runId, t.createdAt),
    index("groups_env").on(t.env),
    index("groups_status").on(t.status),
    index("groups_created").on(t.createdAt),
    index("groups_delivery").on(t.status, t.deliveryState, t.finishedAt),
    index("groups_lease").on(t.leaseId),
    // A policy change finds the run's running groups; pacing counts its unleased ones.
    index("groups_run_status").on(t.runId, t.status, t.deliveryState),
    // A run producer's pool sampler reads one example's latest groups in its run.
    index("groups_run_example").on(t.runId, t.exampleId, t.finishedAt),
    // A start counts its token's groups in flight (an optional quota per API token).
    index("groups_started_by").on(t.startedBy, t.status),
  ],
);

export const episodes = sqliteTable(
  "episodes",
  {
    id: text("id").primaryKey(),
    groupId: text("group_id").notNull(),
    idx: integer("idx").notNull(),
    runId: text("run_id").notNull(),
    env: text("env").notNull(),
    /** Its group's `env_version`: the rules it was played and scored by. */
    envVersion: text("env_version"),
    exampleId: text("example_id").notNull(),
    policyVersion: integer("policy_version").notNull(),
    /** The episode's policy span: the lowest and highest version its turns were sampled at. */
    policyVersionMin: integer("policy_version_min"),
    policyVersionMax: integer("policy_version_max"),
    /**
     * `completed` | `truncated` | `failed`: only end states land, but the type is the wider
     * EpisodeState, which the landing's rows carry (domain/episode-outcomes.ts).
     */
    status: text("status").$type<EpisodeState>().notNull(),
    /** How it ended: `done`, `max_turns`, `context_length`, `context_budget`, or the failure. */
    endReason: text("end_reason").notNull(),
    failureReason: text("failure_reason").$type<FailureReason>(),
    failureDetail: text("failure_detail"),
    /**
     * The end it played to (`done`, `max_turns`, ...), when its grading then failed it
     * (`judge_error`, `score_error`): what a re-score restores once it has a grade.
     */
    playedEndReason: text("played_end_reason"),
    score: real("score"),
    threshold: real("threshold"),
    success: integer("success", { mode: "boolean" }),
    /**
     * Its last sampled action hit its token cap (finish reason `length`), whatever its group's
     * `overlong` policy made of it. Episodes from before it was recorded say false.
     */
    overlong: integer("overlong", { mode: "boolean" }).notNull().default(false),
    advantage: real("advantage"),
    perTurnRewards: text("per_turn_rewards", { mode: "json" }).$type<number[]>(),
    perTurnAdvantages: text("per_turn_advantages", { mode: "json" }).$type<number[]>(),
    rewardMetadata: text("reward_metadata", { mode: "json" }).$type<JsonObject>(),
    /**
     * Each step's metadata, in order, as scoring saw it (`episode.metadata.steps`): with the
     * messages, what a re-score needs to see the episode again. Null for episodes landed before.
     */
    stepMetadata: text("step_metadata", { mode: "json" }).$type<JsonObject[]>(),
    /** Sampled assistant actions. */
    turns: integer("turns").notNull(),
    promptTokens: integer("prompt_tokens"),
    completionTokens: integer("completion_tokens"),
    totalTokens: integer("total_tokens"),
    latencyMs: integer("latency_ms").notNull(),
    redispatches: integer("redispatches").notNull(),
    /**
     * Tokens its generations had produced when a pause with `interrupt` aborted them, dropped
     * (the turn started over). Counted from the ids when streamed with them, else one a chunk.
     */
    discardedTokens: integer("discarded_tokens").notNull().default(0),
    /**
     * Tokens its token-in turns had received when a pause with `interrupt` aborted them, kept
     * and continued under the version the run resumed at (their own logprobs and versions stay
     * in the samples' `logprobs` and `policy_versions`).
     */
    keptTokens: integer("kept_tokens").notNull().default(0),
    /**
     * `exact`: every sampled turn's token ids and logprobs are in the group's token object;
     * `none`: not (the host sent none, or the group asked for `tokens: "off"`).
     */
    tokenMode: text("token_mode").$type<TokenMode>().notNull().default("none"),
    /** Why the episode is not token-exact: what the host did not send, or `tokens: "off"`. */
    tokenModeReason: text("token_mode_reason"),
    /** Sampled turns whose prompt did not start with the tokens the previous turn left. */
    prefixBreaks: integer("prefix_breaks").notNull().default(0),
    /** Trainer samples the turns make by the merge-or-split rule (prefix breaks + 1). */
    sampleCount: integer("sample_count").notNull().default(0),
    /**
     * On-policy distillation: the group's teacher (it scored the tokens unless the episode
     * failed; `reverse_kl` says whether it did).
     */
    teacherModel: text("teacher_model"),
    /**
     * The mean over sampled tokens of `student_logprob - teacher_logprob`: the reverse KL
     * estimate distillation drives toward 0. Null unless the teacher scored the episode.
     */
    reverseKl: real("reverse_kl"),
    /** Native tool calling: the SHA-256 of the tools the episode offered (`groups.tools`). */
    toolsHash: text("tools_hash"),
    responseText: text("response_text").notNull(),
    createdAt: text("created_at").notNull(),
    finishedAt: text("finished_at").notNull(),
    /*
     * What it cost (the run's bill, `run_costs`): sums over its messages and judgements, and
     * what only the group object measured. `prompt_tokens` and `completion_tokens` above are the
     * sums over its sampled messages.
     */
    /** Of its prompt tokens, those its hosts served from their prefix caches. */
    cachedTokens: integer("cached_tokens").notNull().default(0),
    /** Generation calls that answered: its sampled messages. */
    generations: integer("generations").notNull().default(0),
    /** Generation attempts beyond each turn's first. */
    retries: integer("retries").notNull().default(0),
    /** Time in environment code: its opening and steps (remote ones included). */
    envMs: integer("env_ms").notNull().default(0),
    /** Tokens the teacher of on-policy distillation prefilled to score it. */
    teacherTokens: integer("teacher_tokens").notNull().default(0),
    /** Prompt and completion tokens of its judge calls (`judgements`). */
    judgeTokens: integer("judge_tokens").notNull().default(0),
    /** Its generations, teacher and judge calls at their hosts' prices (`messages.usd`...). */
    usd: real("usd").notNull().default(0),
    /** Its generation and judge calls made on a host with no price (they add $0). */
    unpricedCalls: integer("unpriced_calls").notNull().default(0),
  },
  (t) => [
    index("episodes_group").on(t.groupId),
    index("episodes_run").on(t.runId),
    index("episodes_env").on(t.env),
    index("episodes_status").on(t.status),
    index("episodes_created").on(t.createdAt),
  ],
);

export const messages = sqliteTable(
  "messages",
  {
    episodeId: text("episode_id").notNull(),
    seq: integer("seq").notNull(),
    groupId: text("group_id").notNull(),
    /** The sampled action this message is or answers; null for the opening prompt. */
    turn: integer("turn"),
    role: text("role").$type<ChatMessage["role"]>().notNull(),
    content: text("content").notNull(),
    name: text("name"),
    toolCalls: text("tool_calls", { mode: "json" }).$type<ToolCall[]>(),
    toolCallId: text("tool_call_id"),
    sampled: integer("sampled", { mode: "boolean" }).notNull(),
    promptTokens: integer("prompt_tokens"),
    completionTokens: integer("completion_tokens"),
    finishReason: text("finish_reason"),
    latencyMs: integer("latency_ms"),
    attempts: integer("attempts"),
    truncated: integer("truncated", { mode: "boolean" }),
    /** On sampled turns with tokens: the model the host says answered. */
    model: text("model"),
    /** The sum of the completion's logprobs: the log-probability of the action. */
    logprobSum: real("logprob_sum"),
    /** The prompt tokens this turn added after the previous turn's (its share of storage). */
    newPromptTokens: integer("new_prompt_tokens"),
    /** Its prompt did not start with the previous turn's prompt + completion. */
    prefixBreak: integer("prefix_break", { mode: "boolean" }),
    /** On sampled turns: the run's policy version when the generation was sent. */
    policyVersion: integer("policy_version"),
    /** On sampled turns: the base URL of the host that answered (a fleet's, src/fleet/). */
    host: text("host"),
    /**
     * On sampled turns: the prompt tokens the host served from its prefix cache
     * (`usage.prompt_tokens_details.cached_tokens`); null when the host did not say.
     */
    cachedTokens: integer("cached_tokens"),
    /** The message's own metadata, as the environment wrote it (null when none). */
    metadata: text("metadata", { mode: "json" }).$type<JsonObject>(),
    /** On sampled turns: what the call cost at its host's price; null when the host has none. */
    usd: real("usd"),
  },
  // No index on group_id: messages are read by episode (the primary key), and every index is
  // paid for on each of the many rows a landing writes.
  (t) => [primaryKey({ columns: [t.episodeId, t.seq] })],
);

/** One lease handed to a trainer: which groups, until when, and whether it was acked. */
/**
 * A rubric's grade, part by part (src/sdk/rubric.ts): one row per episode and component, the
 * episode's score being Σ weight × value. A weight of 0 is a metric: recorded, never rewarded.
 */
export const rewardComponents = sqliteTable(
  "reward_components",
  {
    episodeId: text("episode_id").notNull(),
    name: text("name").notNull(),
    groupId: text("group_id").notNull(),
    value: real("value").notNull(),
    weight: real("weight").notNull(),
  },
  (t) => [
    primaryKey({ columns: [t.episodeId, t.name] }),
    index("reward_components_group").on(t.groupId),
  ],
);

/**
 * Every call a score hook made to a judge model, failed ones included: what it was asked, what it
 * answered, the value parsed from it (null when none could be), and which attempt it was (1 for
 * the first call of a grade). `seq` orders an episode's calls across scorings and re-scorings.
 */
export const judgements = sqliteTable(
  "judgements",
  {
    episodeId: text("episode_id").notNull(),
    seq: integer("seq").notNull(),
    groupId: text("group_id").notNull(),
    component: text("component").notNull(),
    model: text("model").notNull(),
    prompt: text("prompt", { mode: "json" }).$type<ChatMessage[]>().notNull(),
    /** The judge's text, or what went wrong (`timeout after 30 s`, `HTTP 500: ...`). */
    response: text("response").notNull(),
    value: real("value"),
    reason: text("reason"),
    /** Why this attempt gave no grade: null when it did. */
    error: text("error"),
    attempt: integer("attempt").notNull(),
    latencyMs: integer("latency_ms").notNull(),
    createdAt: text("created_at").notNull(),
    /** What the judge host counted of the call (`usage`); null when it did not say. */
    promptTokens: integer("prompt_tokens"),
    cachedTokens: integer("cached_tokens"),
    completionTokens: integer("completion_tokens"),
    /** What the call cost at JUDGE_PRICE; null when the judge has no price. */
    usd: real("usd"),
  },
  (t) => [primaryKey({ columns: [t.episodeId, t.seq] }), index("judgements_group").on(t.groupId)],
);

export const batches = sqliteTable("batches", {
  id: text("id").primaryKey(),
  /** The trainer that leased it (a digest prefix of its token); only it may ack or release. */
  owner: text("owner").notNull().default("local"),
  /** `leased` | `acked` | `released`. A lease past its expiry stays `leased` here. */
  state: text("state").$type<BatchState>().notNull(),
  groupCount: integer("group_count").notNull(),
  episodeCount: integer("episode_count").notNull(),
  createdAt: text("created_at").notNull(),
  leaseExpiresAt: text("lease_expires_at").notNull(),
  settledAt: text("settled_at"),
});

export const batchGroups = sqliteTable(
  "batch_groups",
  {
    batchId: text("batch_id").notNull(),
    groupId: text("group_id").notNull(),
  },
  (t) => [
    primaryKey({ columns: [t.batchId, t.groupId] }),
    index("batch_groups_group").on(t.groupId),
  ],
);

/**
 * Asynchronous RL: each run's policy as its trainer last set it (POST /v1/runs/:id/policy). A
 * run without a row behaves as before: groups say their own `policy_version` (default 0).
 */
export const runPolicies = sqliteTable("run_policies", {
  runId: text("run_id").primaryKey(),
  /** The trainer's current policy version; it never goes down. */
  version: integer("version").notNull(),
  /** How far behind `version` a group's policy may be when it starts; null for no limit. */
  maxLag: integer("max_lag"),
  /** Weight sync in progress: new generations of the run wait. */
  paused: integer("paused", { mode: "boolean" }).notNull().default(false),
  /**
   * The pause also aborted the run's generations in flight (`interrupt: true`): each is sent
   * again once the run resumes. Set by each update; only a pause can carry it.
   */
  interrupt: integer("interrupt", { mode: "boolean" }).notNull().default(false),
  /**
   * Counts every update: a group told of two updates in either order keeps the later one, even
   * when both name the same version (a pause, then its resume).
   */
  revision: integer("revision").notNull().default(1),
  updatedAt: text("updated_at").notNull(),
  /** The principal (token digest prefix) that set it. */
  updatedBy: text("updated_by"),
});

/**
 * A run's budget (POST /v1/runs/:id/budget): once what the run spent reaches a limit, its new
 * groups are refused (src/costs/budget.ts). Null: that one is not limited.
 */
export const runBudgets = sqliteTable("run_budgets", {
  runId: text("run_id").primaryKey(),
  maxSampledTokens: integer("max_sampled_tokens"),
  maxPromptTokens: integer("max_prompt_tokens"),
  maxUsd: real("max_usd"),
  maxGroups: integer("max_groups"),
  updatedAt: text("updated_at").notNull(),
  /** The principal (token digest prefix) that set it. */
  updatedBy: text("updated_by"),
});

/**
 * Each pause of a run (a weight sync) its trainer asked for: whether it interrupted the
 * generations in flight, and when the run was first seen with none in flight. `idle_at` minus
 * `paused_at` is the sync's stall: the time the hosts waited before they could load weights.
 */
export const policySyncs = sqliteTable(
  "policy_syncs",
  {
    runId: text("run_id").notNull(),
    /** The run policy's revision that paused it. */
    revision: integer("revision").notNull(),
    interrupt: integer("interrupt", { mode: "boolean" }).notNull(),
    pausedAt: text("paused_at").notNull(),
    /** The generations the pause's answer still had in flight; null if some group was not told. */
    inFlightAtAnswer: integer("in_flight_at_answer"),
    /**
     * When the run was first seen with nothing in flight: the answer itself when it had none,
     * else the first GET /v1/runs/:id that counted 0 (the clients' waitIdle polls it).
     */
    idleAt: text("idle_at"),
  },
  (t) => [primaryKey({ columns: [t.runId, t.revision] })],
);
