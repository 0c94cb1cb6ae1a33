/**
 * chaos: guess-number with faults on demand, for the reliability suites. `metadata.chaos` says
 * which fault (`throw`, `hang` or `garbage` in stepEpisode at `turn`; `score_throw` or
 * `score_nan` in scoring) and for what share of episodes. Which episodes misbehave is decided
 * by a hash of their first action, so it is deterministic for a given transcript.
 */
import { z } from "zod";
import {
  type ChatMessage,
  type EnvironmentEpisode,
  type EnvironmentStepResultInput,
  exampleMetadata,
  isSampledAction,
  type RewardResultInput,
  sampledTurns,
  type TaskExample,
} from "../sdk";
import { GuessNumber } from "./guess-number";

const ChaosSchema = z.object({
  fault: z.enum(["throw", "hang", "garbage", "score_throw", "score_nan"]),
  share: z.number().min(0).max(1).default(0.5),
  turn: z.number().int().min(0).default(1),
});
export type ChaosPlan = z.infer<typeof ChaosSchema>;

function chaosOf(example: TaskExample): ChaosPlan {
  return exampleMetadata(z.object({ chaos: ChaosSchema }), example).chaos;
}

/** Whether the episode whose first action is `action` is one of the misbehaving share. */
export function strikes(action: string | undefined, share: number): boolean {
  let h = 2166136261;
  for (const ch of action ?? "") h = Math.imul(h ^ ch.charCodeAt(0), 16777619);
  return ((h >>> 0) % 1000) / 1000 < share;
}

export class Chaos extends GuessNumber {
  override stepEpisode(
    example: TaskExample,
    messages: readonly ChatMessage[],
    assistantResponse: string,
  ): EnvironmentStepResultInput {
    const chaos = chaosOf(example);
    const actions = messages.filter(isSampledAction);
    if (actions.length - 1 === chaos.turn && strikes(actions[0]?.content, chaos.share)) {
      if (chaos.fault === "throw") throw new Error(`chaos: step threw at turn ${chaos.turn}`);
      if (chaos.fault === "hang") return new Promise<never>(() => {}) as never;
      if (chaos.fault === "garbage")
        return { done: false, messages: [{ role: "narrator", content: 7 }] } as never;
    }
    return super.stepEpisode(example, messages, assistantResponse);
  }

  override scoreEpisode(example: TaskExample, episode: EnvironmentEpisode): RewardResultInput {
    const chaos = chaosOf(example);
    if (strikes(sampledTurns(episode)[0]?.content, chaos.share)) {
      if (chaos.fault === "score_throw") throw new Error("chaos: scoring threw");
      if (chaos.fault === "score_nan") return { score: Number.NaN, threshold: 1 };
    }
    return super.scoreEpisode(example, episode);
  }
}
