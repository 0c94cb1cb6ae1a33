/**
 * Rubrics: a score made of named components, each a function of the example and the episode with
 * a weight. The episode's score is the weighted sum; a weight of 0 makes a component a metric,
 * recorded with the others (D1's `reward_components`) and never rewarded. A judged component
 * asks the judge (judge.ts) and takes its verdict's score.
 */
import { type JudgeRequest, NO_JUDGE, type ScoreContext } from "./judge";
import type {
  ChatMessage,
  EnvironmentEpisode,
  MaybePromise,
  RewardResultInput,
  TaskExample,
} from "./types";

export interface RubricComponent {
  /** Letters, digits, `_`, `-` and `.`; distinct within a rubric. */
  name: string;
  /** Its share of the score; 0 records it as a metric only. */
  weight: number;
  value(
    example: TaskExample,
    episode: EnvironmentEpisode,
    context: ScoreContext,
  ): MaybePromise<number>;
}

export interface RubricOptions {
  /** Success is `score >= threshold`; none leaves success unknown. */
  threshold?: number;
}

const NAME = /^[A-Za-z0-9_.-]{1,64}$/;

export class Rubric {
  constructor(
    readonly components: readonly RubricComponent[],
    private readonly options: RubricOptions = {},
  ) {
    if (components.length === 0) throw new Error("a rubric needs at least one component");
    const names = new Set<string>();
    for (const c of components) {
      if (!NAME.test(c.name))
        throw new Error(`rubric component "${c.name}": letters, digits, _ - . only, at most 64`);
      if (names.has(c.name)) throw new Error(`rubric component "${c.name}" is named twice`);
      if (!Number.isFinite(c.weight)) throw new Error(`rubric component "${c.name}": weight`);
      names.add(c.name);
    }
  }

  /**
   * Every component's value (all at once: judged ones wait on a host), and the weighted sum as
   * the score. A component that throws fails the grade: a JudgeError ends the episode
   * `judge_error`, anything else `score_error`.
   */
  async score(
    example: TaskExample,
    episode: EnvironmentEpisode,
    context: ScoreContext = { judge: NO_JUDGE },
  ): Promise<RewardResultInput> {
    const values = await Promise.all(
      this.components.map(async (c) => {
        const value = await c.value(example, episode, context);
        if (typeof value !== "number" || !Number.isFinite(value))
          throw new Error(`rubric component "${c.name}" gave ${String(value)}, not a number`);
        return value;
      }),
    );
    const components = this.components.map((c, i) => ({
      name: c.name,
      value: values[i] as number,
      weight: c.weight,
    }));
    return {
      score: weightedSum(components),
      ...(this.options.threshold === undefined ? {} : { threshold: this.options.threshold }),
      components,
    };
  }
}

/** Σ weight × value: a rubric's score. */
export function weightedSum(components: readonly { value: number; weight: number }[]): number {
  return components.reduce((sum, c) => sum + c.weight * c.value, 0);
}

/**
 * A component graded by the judge: `messages` builds what it is asked (it must ask for the JSON
 * verdict `{"score": <0..1>, "reason": "..."}`), and the verdict's score is the value.
 */
export function judgedComponent(spec: {
  name: string;
  weight: number;
  messages: (example: TaskExample, episode: EnvironmentEpisode) => ChatMessage[];
  /** The judge model for this component (per example, say); none: the configured one. */
  model?: (example: TaskExample) => JudgeRequest["model"];
}): RubricComponent {
  return {
    name: spec.name,
    weight: spec.weight,
    async value(example, episode, context) {
      const model = spec.model?.(example);
      const verdict = await context.judge.grade({
        component: spec.name,
        messages: spec.messages(example, episode),
        ...(model === undefined ? {} : { model }),
      });
      return verdict.score;
    },
  };
}
