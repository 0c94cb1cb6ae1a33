/**
 * On-policy distillation's teacher pass: once every episode has ended, each token-exact episode
 * that did not fail is scored by the teacher — every trainer sample it makes, sent as a token-id
 * prompt — and the teacher's logprob of each sampled token is stored beside the student's. An
 * episode the teacher keeps failing on is reported, and the group object ends it
 * `teacher_failed`; the others land as usual.
 * Idempotent across restarts: an episode's logprobs are written in one transaction, and only
 * episodes without them are scored again.
 */
import pMap from "p-map";
import { type Config, teacherEndpoint } from "../config";
import type { CallOutcome } from "../inference/retries";
import { episodeSamples } from "../tokens/samples";
import type { TokenMode } from "../tokens/token-mode";
import type { TurnTokens } from "../tokens/turn-tokens";
import { teacherLogprobs } from "./teacher-client";

/** Sequences scored at once per group: a prefill each, so the teacher batches them well. */
const CONCURRENCY = 8;

/** What the teacher pass reads and writes of a group's tokens (the group object's tokens table). */
export interface TeacherTokens {
  /** An episode's recorded turns, in order. */
  turns(idx: number): TurnTokens[];
  /** Stores the teacher's logprobs of an episode's turns, in one write. */
  recordTeacher(idx: number, byTurn: Map<number, Float32Array>): void;
  /** Whether the teacher has scored every recorded turn of the episode. */
  teacherScored(idx: number): boolean;
  /** Whether every sampled turn of the episode has its tokens. */
  mode(idx: number): TokenMode;
}

export interface TeacherPass {
  /** The teacher model on the teacher host. */
  model: string;
  tokens: TeacherTokens;
  config: Config;
  /** The episodes that may be scored (they ended without failing). */
  candidates: readonly number[];
  /**
   * Runs one episode's scoring under the in-flight limit toward the host, when the teacher is
   * the inference host itself (its prefills compete with the generations).
   */
  underLimit: <T>(idx: number, score: () => Promise<T>) => Promise<T>;
}

function whyNot(outcome: Exclude<CallOutcome<unknown>, { kind: "ok" }>, timeoutS: number): string {
  switch (outcome.kind) {
    case "timeout":
      return `the teacher did not answer within TEACHER_TIMEOUT_S (${timeoutS} s)`;
    default:
      return `the teacher failed after ${outcome.attempts} attempts: ${outcome.message}`;
  }
}

/** Scores one episode; returns why it could not be, or null once its logprobs are stored. */
async function scoreEpisode(pass: TeacherPass, idx: number): Promise<string | null> {
  const { config, tokens } = pass;
  const turns = tokens.turns(idx);
  if (turns.length === 0) return null; // nothing sampled: nothing to score
  const byTurn = new Map<number, Float32Array>();
  for (const sample of episodeSamples(turns, () => 0)) {
    const outcome = await teacherLogprobs(
      teacherEndpoint(config),
      pass.model,
      { ids: sample.tokenIds, wanted: sample.mask },
      { deadlineMs: config.TEACHER_TIMEOUT_S * 1000, maxRetries: config.INFERENCE_MAX_RETRIES },
    );
    if (outcome.kind !== "ok") return whyNot(outcome, config.TEACHER_TIMEOUT_S);
    for (const { turn, start, length } of sample.completions)
      byTurn.set(turn, outcome.value.slice(start, start + length));
  }
  // Every recorded turn is in some sample: a miss would leave the episode unscored for good.
  if (byTurn.size !== turns.length)
    throw new Error(`episode ${idx}: the teacher scored ${byTurn.size} of ${turns.length} turns`);
  tokens.recordTeacher(idx, byTurn);
  return null;
}

/** Scores every candidate not scored yet; returns why each one that could not be failed. */
export async function teachEpisodes(pass: TeacherPass): Promise<Map<number, string>> {
  // Each episode's arrays are read once, when it is scored.
  const waiting = pass.candidates.filter(
    (idx) => pass.tokens.mode(idx) === "exact" && !pass.tokens.teacherScored(idx),
  );
  const failures = new Map<number, string>();
  await pMap(
    waiting,
    async (idx) => {
      const problem = await pass.underLimit(idx, () => scoreEpisode(pass, idx));
      if (problem !== null) failures.set(idx, problem);
    },
    { concurrency: CONCURRENCY },
  );
  return failures;
}
