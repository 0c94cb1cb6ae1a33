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
import type { TokenStore } from "../tokens/token-store";
import { teacherLogprobs } from "./teacher-client";

/** Sequences scored at once per group: a prefill each, so the teacher batches them well. */
const CONCURRENCY = 8;

export interface TeacherPass {
  /** The teacher model on the teacher host. */
  model: string;
  tokens: TokenStore;
  storage: DurableObjectStorage;
  config: Config;
  /** The episodes that may be scored (they ended without failing). */
  candidates: readonly number[];
}

function whyNot(outcome: Exclude<CallOutcome<unknown>, { kind: "ok" }>, timeoutS: number): string {
  switch (outcome.kind) {
    case "timeout":
      return `the teacher did not answer within TEACHER_TIMEOUT_S (${timeoutS} s)`;
    case "retry_later":
      return `the teacher asked to wait past its deadline: ${outcome.message}`;
    default:
      return `the teacher failed after ${outcome.attempts} attempts: ${outcome.message}`;
  }
}

/** Scores one episode; returns why it could not be, or null once its logprobs are stored. */
async function scoreEpisode(pass: TeacherPass, idx: number): Promise<string | null> {
  const { config, tokens } = pass;
  const turns = tokens.turns(idx);
  const byTurn = new Map<number, Float32Array>();
  for (const sample of episodeSamples(turns, () => 0)) {
    const outcome = await teacherLogprobs(teacherEndpoint(config), pass.model, sample.tokenIds, {
      deadlineMs: config.TEACHER_TIMEOUT_S * 1000,
      maxRetries: config.INFERENCE_MAX_RETRIES,
    });
    if (outcome.kind !== "ok") return whyNot(outcome, config.TEACHER_TIMEOUT_S);
    const [first] = sample.turns;
    sample.completionStarts.forEach((start, j) => {
      const turn = turns.find((t) => t.turn === first + j);
      if (turn === undefined) return;
      byTurn.set(turn.turn, outcome.value.slice(start, start + turn.completionIds.length));
    });
  }
  tokens.recordTeacher(pass.storage, idx, byTurn);
  return null;
}

/** Scores every candidate not scored yet; returns why each one that could not be failed. */
export async function teachEpisodes(pass: TeacherPass): Promise<Map<number, string>> {
  const waiting = pass.candidates.filter(
    (idx) =>
      pass.tokens.mode(idx) === "exact" &&
      pass.tokens.turns(idx).length > 0 &&
      !pass.tokens.teacherScored(idx),
  );
  const failures = new Map<number, string>();
  await pMap(
    waiting,
    async (idx) => {
      const problem = await scoreEpisode(pass, idx);
      if (problem !== null) failures.set(idx, problem);
    },
    { concurrency: CONCURRENCY },
  );
  return failures;
}
