/** guess-number, the starter environment: find a secret integer in [1, 100] from higher/lower hints. */
import { z } from "zod";
import {
  type ChatMessage,
  type EnvironmentEpisode,
  EnvironmentMultiTurn,
  type EnvironmentStepResultInput,
  exampleMetadata,
  goldTranscript,
  isSampledAction,
  type RewardResultInput,
  sampledTurns,
  type TaskExample,
} from "../sdk";

export const LOWEST = 1;
export const HIGHEST = 100;
export const DEFAULT_TURNS = 7;

export const GuessMetadataSchema = z.object({
  secret: z.number().int().min(LOWEST).max(HIGHEST),
  max_turns: z.number().int().positive().optional(),
});

const GUESS = /<guess>\s*(-?\d+)\s*<\/guess>/g;

/** The last `<guess>N</guess>` of an action when N is in range; null for anything else. */
export function parseGuess(action: string): number | null {
  const last = [...action.matchAll(GUESS)].at(-1);
  if (last === undefined) return null;
  const guess = Number(last[1]);
  return guess >= LOWEST && guess <= HIGHEST ? guess : null;
}

export type Hint = "higher" | "lower" | "correct";

export function hintFor(guess: number, secret: number): Hint {
  if (guess === secret) return "correct";
  return guess < secret ? "higher" : "lower";
}

/**
 * Per-turn rewards: 1.0 for the solving guess, 0.2 for a guess consistent with every earlier
 * hint (strictly inside the interval they leave open), 0.0 otherwise or for no valid guess.
 */
export function gradeGuesses(guesses: readonly (number | null)[], secret: number): number[] {
  let above = LOWEST - 1;
  let below = HIGHEST + 1;
  return guesses.map((guess) => {
    if (guess === null) return 0;
    const reward = guess === secret ? 1 : guess > above && guess < below ? 0.2 : 0;
    if (guess < secret) above = Math.max(above, guess);
    if (guess > secret) below = Math.min(below, guess);
    return reward;
  });
}

function plural(n: number, word: string): string {
  return `${n} ${word}${n === 1 ? "" : "es"}`;
}

const ExampleSchema = z.object({ metadata: GuessMetadataSchema });

export class GuessNumber extends EnvironmentMultiTurn {
  override readonly version: string = "1";
  override readonly exampleSchema: z.ZodType = ExampleSchema;

  secretOf(example: TaskExample): number {
    return exampleMetadata(GuessMetadataSchema, example).secret;
  }

  maxEpisodeTurns(example: TaskExample): number {
    return exampleMetadata(GuessMetadataSchema, example).max_turns ?? DEFAULT_TURNS;
  }

  startEpisode(example: TaskExample): ChatMessage[] {
    const rules =
      `Reply with one guess per turn as <guess>N</guess>. After each guess you learn whether ` +
      `the secret is higher or lower. You have ${plural(this.maxEpisodeTurns(example), "guess")}.`;
    return [{ role: "user", content: `${example.input}\n\n${rules}` }];
  }

  stepEpisode(
    example: TaskExample,
    messages: readonly ChatMessage[],
    assistantResponse: string,
  ): EnvironmentStepResultInput {
    const secret = this.secretOf(example);
    const left = this.maxEpisodeTurns(example) - messages.filter(isSampledAction).length;
    const guess = parseGuess(assistantResponse);
    const reply = (content: string, done = false): EnvironmentStepResultInput => ({
      done,
      messages: [{ role: "user", content }],
      metadata: { guess },
    });
    if (guess === null) {
      return reply(
        `Reply with your guess as <guess>N</guess>, N a whole number from ${LOWEST} to ${HIGHEST}. ` +
          `${plural(left, "guess")} left.`,
      );
    }
    const hint = hintFor(guess, secret);
    if (hint === "correct") return reply(`${guess} is correct!`, true);
    const direction =
      hint === "higher" ? "too low: the secret is higher" : "too high: the secret is lower";
    return reply(`${guess} is ${direction}. ${plural(left, "guess")} left.`);
  }

  scoreEpisode(example: TaskExample, episode: EnvironmentEpisode): RewardResultInput {
    const guesses = sampledTurns(episode).map((turn) => parseGuess(turn.content));
    const perTurn = gradeGuesses(guesses, this.secretOf(example));
    const solvedAt = perTurn.indexOf(1);
    return {
      score: solvedAt === -1 ? 0 : 1,
      threshold: 1,
      metadata: { per_turn_rewards: perTurn, solved_at_turn: solvedAt === -1 ? null : solvedAt },
    };
  }

  /** The gold transcript: a binary search, with the replies this environment gives. */
  override sftCompletion(example: TaskExample): Promise<ChatMessage[]> {
    const secret = this.secretOf(example);
    let [low, high] = [LOWEST, HIGHEST];
    return goldTranscript(this, example, () => {
      const guess = Math.floor((low + high) / 2);
      if (guess < secret) low = guess + 1;
      if (guess > secret) high = guess - 1;
      return `<guess>${guess}</guess>`;
    });
  }
}
