/**
 * Offline validation of an environment, with no model: the rules `edgeroll env check` reports.
 * Every row is checked against the environment's `exampleSchema` first (a row outside it is a
 * dataset problem, as the API would refuse it with a 422). The gold target (`sftCompletion`) is replayed as the policy, garbage actions probe the
 * parser, and every step is run twice on the same transcript to prove replay determinism.
 */
import { perTurnRewardsProblem } from "./credit";
import { EnvironmentMultiTurn } from "./environment";
import { openEpisode, scoreGroup, turnBudget } from "./episode";
import { runEpisode } from "./episode-loop";
import { EnvironmentContractError, ExampleRejectedError, errorMessage, SftError } from "./errors";
import { type Judge, NO_JUDGE } from "./judge";
import { buildSftRow } from "./sft";
import { parseTargetMessages } from "./sft-target";
import { isSampledAction, type PolicyAction, sampledTurns } from "./transcript";
import type {
  ChatMessage,
  EnvironmentEpisode,
  EnvironmentStepResultInput,
  RewardResultInput,
  TaskExample,
} from "./types";

export const CHECKS = {
  dataset: "dataset rows valid",
  opening: "opening messages well-formed",
  budget: "turn budget valid",
  stepShape: "step results well-formed",
  stepDeterminism: "steps deterministic under replay",
  malformedActions: "malformed actions handled",
  goldReplay: "gold transcript replays",
  rewardsFinite: "rewards finite",
  scoreDeterminism: "scoring deterministic",
  perTurn: "per_turn_rewards valid",
  goldReward: "gold answers earn reward",
  sft: "SFT rows build",
} as const;

type CheckName = (typeof CHECKS)[keyof typeof CHECKS];

export interface CheckResult {
  name: CheckName;
  ok: boolean;
  /** Not run, for a reason `detail` gives (counts as passed). */
  skipped: boolean;
  /** A one-line summary: counts on success, the first problem on failure. */
  detail: string;
  failures: string[];
}

export interface CheckReport {
  ok: boolean;
  checks: CheckResult[];
}

/** Actions a weak model emits; a well-behaved environment answers them instead of throwing. */
export const MALFORMED_ACTIONS = [
  "",
  "I am not sure what to do.",
  "<tool_call>{not json</tool_call>",
  '<tool_call>{"name": "no_such_tool", "arguments": {}}</tool_call>',
  "<tool_call>",
] as const;

function canonical(value: unknown): string {
  return JSON.stringify(value, (_key, v) =>
    typeof v === "number" && !Number.isFinite(v) ? String(v) : v,
  );
}

function clip(text: string, max = 160): string {
  return text.length > max ? `${text.slice(0, max)}…` : text;
}

/** Runs every step twice on copies of the same transcript and records any difference. */
class DeterminismProbe extends EnvironmentMultiTurn {
  readonly mismatches: string[] = [];
  steps = 0;
  exampleId = "";

  constructor(private readonly inner: EnvironmentMultiTurn) {
    super();
    this.maxScoreConcurrency = inner.maxScoreConcurrency;
  }

  startEpisode(example: TaskExample, promptText: string) {
    return this.inner.startEpisode(example, promptText);
  }

  maxEpisodeTurns(example: TaskExample) {
    return this.inner.maxEpisodeTurns(example);
  }

  async stepEpisode(
    example: TaskExample,
    messages: readonly ChatMessage[],
    response: string,
  ): Promise<EnvironmentStepResultInput> {
    this.steps++;
    const first = await this.inner.stepEpisode(example, structuredClone(messages), response);
    const second = await this.inner.stepEpisode(example, structuredClone(messages), response);
    const [a, b] = [canonical(first), canonical(second)];
    if (a !== b) {
      const turn = messages.filter(isSampledAction).length - 1;
      this.mismatches.push(
        `example ${this.exampleId}, turn ${turn}: stepEpisode gave different results for the same transcript (${clip(a, 80)} vs ${clip(b, 80)})`,
      );
    }
    return first;
  }

  scoreEpisode(example: TaskExample, episode: EnvironmentEpisode): Promise<RewardResultInput> {
    return Promise.resolve(this.inner.scoreEpisode(example, episode));
  }
}

class Findings {
  private readonly failures = new Map<CheckName, string[]>();
  private readonly notes = new Map<CheckName, string>();
  private readonly skips = new Set<CheckName>();

  fail(check: CheckName, problem: string): void {
    const list = this.failures.get(check) ?? [];
    list.push(problem);
    this.failures.set(check, list);
  }

  note(check: CheckName, detail: string): void {
    this.notes.set(check, detail);
  }

  skip(check: CheckName, why: string): void {
    this.skips.add(check);
    this.notes.set(check, `skipped: ${why}`);
  }

  report(): CheckReport {
    const checks = Object.values(CHECKS).map((name): CheckResult => {
      const failures = this.failures.get(name) ?? [];
      const detail =
        failures.length > 0 ? clip(failures[0] as string) : (this.notes.get(name) ?? "ok");
      const skipped = failures.length === 0 && this.skips.has(name);
      return { name, ok: failures.length === 0, skipped, detail, failures };
    });
    return { ok: checks.every((c) => c.ok), checks };
  }
}

export interface CheckOptions {
  promptText?: string;
  /** Problems found while reading the dataset, reported under "dataset rows valid". */
  datasetProblems?: readonly string[];
  /**
   * Why the environment has no gold answers but its rows' `output` (a remote one: the protocol
   * has no sftCompletion). Rows without one then skip the gold-answer check instead of failing.
   */
  goldOnlyFromRows?: string;
  /** The judge a judged environment's score hooks ask; none, and a judged grade fails. */
  judge?: Judge;
}

/** The assistant actions of the gold target, or null when the example has none. */
async function goldActions(
  env: EnvironmentMultiTurn,
  example: TaskExample,
): Promise<PolicyAction[] | null> {
  try {
    const target = parseTargetMessages(example, await env.sftCompletion(example));
    // A native tool-calling environment's gold turns are calls: they are replayed as such.
    const actions = target
      .filter((m) => m.role === "assistant")
      .map((m) => ({ content: m.content, ...(m.tool_calls ? { toolCalls: m.tool_calls } : {}) }));
    return actions.length > 0 ? actions : null;
  } catch (error) {
    if (error instanceof SftError) return null;
    throw error;
  }
}

export async function checkEnvironment(
  env: EnvironmentMultiTurn,
  examples: readonly TaskExample[],
  options: CheckOptions = {},
): Promise<CheckReport> {
  const findings = new Findings();
  const promptText = options.promptText ?? "";
  const probe = new DeterminismProbe(env);
  for (const problem of options.datasetProblems ?? []) findings.fail(CHECKS.dataset, problem);
  if (examples.length === 0) findings.fail(CHECKS.dataset, "the dataset has no examples");
  const schema = env.exampleSchema === undefined ? ", no example schema declared" : "";
  findings.note(CHECKS.dataset, `${examples.length} examples${schema}`);

  const goldScores: number[] = [];
  let goldSuccesses = 0;
  let perTurnVectors = 0;
  let withoutGold = 0;
  let completionOnly = 0;
  let opened = 0;
  let goldReplayed = 0;
  let probed = 0;
  let scored = 0;
  let rows = 0;

  for (const example of examples) {
    probe.exampleId = example.id;
    const where = `example ${example.id}`;
    try {
      await openEpisode(env, example, promptText);
      opened++;
    } catch (error) {
      // The row is outside the environment's example schema (or a remote /start said so).
      if (error instanceof ExampleRejectedError)
        findings.fail(CHECKS.dataset, `${where}: ${error.message}`);
      else findings.fail(CHECKS.opening, `${where}: ${errorMessage(error)}`);
      continue;
    }
    try {
      turnBudget(env, example);
    } catch (error) {
      findings.fail(CHECKS.budget, `${where}: ${errorMessage(error)}`);
      continue;
    }

    const episodes: EnvironmentEpisode[] = [];
    let gold: PolicyAction[] | null = null;
    try {
      gold = await goldActions(env, example);
    } catch (error) {
      findings.fail(CHECKS.goldReplay, `${where}: sftCompletion threw ${errorMessage(error)}`);
    }
    if (gold === null) withoutGold++;
    else {
      const actions = gold;
      try {
        episodes.push(
          await runEpisode(probe, example, {
            promptText,
            policy: (_messages, turn) => actions[turn.index] ?? { content: "" },
            maxTurns: actions.length,
          }),
        );
        goldReplayed++;
      } catch (error) {
        const check =
          error instanceof EnvironmentContractError ? CHECKS.stepShape : CHECKS.goldReplay;
        findings.fail(check, `${where}, gold replay: ${errorMessage(error)}`);
        gold = null;
      }
    }

    try {
      episodes.push(
        await runEpisode(probe, example, {
          promptText,
          policy: (_messages, turn) =>
            MALFORMED_ACTIONS[turn.index % MALFORMED_ACTIONS.length] ?? "",
          maxTurns: MALFORMED_ACTIONS.length,
        }),
      );
      probed++;
    } catch (error) {
      const check =
        error instanceof EnvironmentContractError ? CHECKS.stepShape : CHECKS.malformedActions;
      findings.fail(check, `${where}, malformed actions: ${errorMessage(error)}`);
    }

    const contexts = episodes.map(() => ({ judge: options.judge ?? NO_JUDGE }));
    const first = await scoreGroup(env, example, episodes, contexts);
    const again = await scoreGroup(env, example, episodes, contexts);
    for (const [i, outcome] of first.entries()) {
      const label = i === 0 && gold !== null ? "gold episode" : "malformed-action episode";
      if (!outcome.ok) {
        findings.fail(CHECKS.rewardsFinite, `${where}, ${label}: ${outcome.error}`);
        continue;
      }
      scored++;
      if (canonical(outcome) !== canonical(again[i])) {
        findings.fail(
          CHECKS.scoreDeterminism,
          `${where}, ${label}: two scorings of the same episode differed`,
        );
      }
      const perTurn = outcome.reward.metadata.per_turn_rewards;
      if (perTurn !== undefined) {
        perTurnVectors++;
        const turns = sampledTurns(episodes[i] as EnvironmentEpisode).length;
        const problem = perTurnRewardsProblem(perTurn, turns);
        if (problem) findings.fail(CHECKS.perTurn, `${where}, ${label}: ${problem}`);
      }
      if (label === "gold episode") {
        const { score, threshold } = outcome.reward;
        goldScores.push(score);
        // A gold answer must succeed: reach its threshold, or score above zero without one.
        if (threshold === undefined ? score > 0 : score >= threshold) goldSuccesses++;
        else {
          const bar = threshold === undefined ? "" : ` (threshold ${threshold})`;
          findings.fail(CHECKS.goldReward, `${where}: the gold answer scored ${score}${bar}`);
        }
      }
    }

    if (gold !== null) {
      try {
        const row = await buildSftRow(env, example, promptText);
        rows++;
        if (row.masking === "completion_only") completionOnly++;
      } catch (error) {
        findings.fail(CHECKS.sft, `${where}: ${errorMessage(error)}`);
      }
    }
  }

  for (const mismatch of probe.mismatches) findings.fail(CHECKS.stepDeterminism, mismatch);
  findings.note(CHECKS.opening, `${opened} examples`);
  findings.note(CHECKS.budget, `${opened} examples`);
  findings.note(CHECKS.stepShape, `${probe.steps} steps`);
  findings.note(CHECKS.stepDeterminism, `${probe.steps} steps, each run twice`);
  findings.note(CHECKS.malformedActions, `${probed} episodes of malformed actions`);
  findings.note(CHECKS.goldReplay, `${goldReplayed} gold transcripts replayed`);
  findings.note(CHECKS.rewardsFinite, `${scored} rewards`);
  findings.note(CHECKS.scoreDeterminism, `${scored} episodes, each scored twice`);
  findings.note(CHECKS.perTurn, perTurnVectors > 0 ? `${perTurnVectors} vectors` : "not provided");
  const fallbacks =
    completionOnly > 0 ? `, ${completionOnly} completion-only (unparseable target)` : "";
  findings.note(CHECKS.sft, `${rows} rows${fallbacks}`);
  if (goldScores.length === 0 && options.goldOnlyFromRows !== undefined) {
    findings.skip(CHECKS.goldReward, `no row has an output, ${options.goldOnlyFromRows}`);
  } else if (goldScores.length === 0) {
    findings.fail(
      CHECKS.goldReward,
      "no example has a gold answer: give rows an output or override sftCompletion",
    );
  } else {
    const mean = goldScores.reduce((a, b) => a + b, 0) / goldScores.length;
    const skipped = withoutGold > 0 ? `, ${withoutGold} without gold` : "";
    findings.note(
      CHECKS.goldReward,
      `mean gold score ${mean.toFixed(2)}, ${goldSuccesses}/${goldScores.length} successful${skipped}`,
    );
  }
  return findings.report();
}
