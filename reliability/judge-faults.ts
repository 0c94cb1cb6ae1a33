/**
 * The judge suite: judged-answer groups graded by a judge (the simulator's `judge` model) that
 * hangs past JUDGE_TIMEOUT_S, answers 500, or answers prose instead of a verdict on half its
 * calls. Whatever the judge does, no episode may be scored 0 for it: a scored episode's score is
 * a verdict the judge gave (a call in `judgements` with a value), and an episode the judge never
 * graded ends `judge_error` with no score.
 */
import pMap from "p-map";
import type { LocalStack } from "../src/cli/local-stack";
import { runSql } from "../src/cli/sql";
import type { EdgerollClient } from "../src/client/edgeroll-client";
import { END } from "../src/rollout/outcomes";
import { episodesOf, integrity, landGroups } from "./harness";
import { outcomeOf, type Row } from "./suites";

/** What reliability/run.ts gives the stack: a judge call's deadline, and the score call's. */
export const JUDGE_VARS = { JUDGE_TIMEOUT_S: "2", JUDGE_MAX_ATTEMPTS: "3", SCORE_TIMEOUT_S: "10" };

interface JudgeCase {
  model: string;
  label: string;
  /** Whether every episode must end judge_error (the judge never gives a verdict). */
  neverGrades: boolean;
}

const CASES: JudgeCase[] = [
  { model: "judge+hang", label: "hangs past JUDGE_TIMEOUT_S", neverGrades: true },
  { model: "judge+fail:500", label: "answers 500", neverGrades: true },
  { model: "judge+garbage:0.5", label: "answers garbage on half its calls", neverGrades: false },
];

export async function judgeFaults(
  stack: LocalStack,
  client: EdgerollClient,
  groups: number,
): Promise<Row[]> {
  return pMap(
    CASES,
    async (c, n) => {
      const runId = `judge-${n}`;
      const requests = Array.from({ length: groups }, (_, i) => {
        const [a, b] = [3 + ((i * 7) % 40), 2 + ((i * 11) % 30)];
        return {
          env: "judged-answer",
          example: {
            id: `${runId}-${i}`,
            input: `What is ${a} * ${b}?`,
            output: String(a * b),
            metadata: { judge_model: c.model },
          },
          group_size: 4,
          run_id: runId,
          // Hot enough that some answers are wrong: a score of 0 from a verdict is a real grade.
          sampling: { model: "sim", temperature: 2, seed: 900 + i * 4, max_completion_tokens: 64 },
        };
      });
      const landed = await landGroups(client, requests);
      const episodes = await episodesOf(client, runId);
      const check = integrity(landed, episodes);
      // Each scored episode's correctness must be the value of a verdict the judge gave.
      const verdicts = runSql(
        `SELECT e.id, e.score, e.end_reason, e.failure_detail,
           (SELECT COUNT(*) FROM judgements j WHERE j.episode_id = e.id AND j.value IS NOT NULL) AS graded,
           (SELECT COUNT(*) FROM judgements j WHERE j.episode_id = e.id) AS calls,
           (SELECT value FROM reward_components c WHERE c.episode_id = e.id AND c.name = 'correctness') AS correctness,
           (SELECT value FROM judgements j WHERE j.episode_id = e.id AND j.value IS NOT NULL ORDER BY seq DESC LIMIT 1) AS verdict
         FROM episodes e WHERE e.run_id = '${runId}'`,
        { persistTo: stack.persistTo },
      );
      const unfounded = verdicts.filter(
        (r) =>
          r.score !== null &&
          (Number(r.graded) === 0 || Number(r.correctness) !== Number(r.verdict)),
      );
      const ungraded = verdicts.filter((r) => Number(r.graded) === 0);
      const misreported = ungraded.filter(
        (r) => r.end_reason !== END.judge_error || r.score !== null,
      );
      const zeros = verdicts.filter((r) => r.score === 0).length;
      const calls = verdicts.reduce((sum, r) => sum + Number(r.calls), 0);
      const problems = unfounded.length + misreported.length;
      const first = [...misreported, ...unfounded][0];
      const example = first
        ? ` (first: ${first.end_reason}: ${String(first.failure_detail).slice(0, 160)})`
        : "";
      return {
        fault: `judge: ${c.label}`,
        tried: `${groups} judged-answer groups, ${check.expected} episodes, ${calls} judge calls (${c.model})`,
        outcome: `${outcomeOf(landed, episodes)}; ${ungraded.length} never graded, ${zeros} scored 0 by a verdict; ${problems} scored without a verdict or misreported${example}`,
        expected: c.neverGrades
          ? "every episode judge_error with no score; none scored"
          : "an episode scored only by a verdict the judge gave; one whose 3 calls all failed judge_error",
        lost: check.lost,
        duplicated: check.duplicated,
        ok:
          check.lost === 0 &&
          check.duplicated === 0 &&
          problems === 0 &&
          (c.neverGrades ? ungraded.length === verdicts.length : verdicts.length > ungraded.length),
      };
    },
    { concurrency: CASES.length },
  );
}
