/**
 * marathon: a benchmark and soak environment, not a task. Every action gets a reply of
 * `metadata.reply_bytes` characters, for `metadata.turns` turns; the score is the share of
 * turns completed. Long, predictable episodes make the pipeline's own costs measurable.
 */
import { z } from "zod";
import {
  type ChatMessage,
  type EnvironmentEpisode,
  EnvironmentMultiTurn,
  type EnvironmentStepResultInput,
  exampleMetadata,
  isSampledAction,
  type RewardResultInput,
  sampledTurns,
  type TaskExample,
} from "../sdk";

const MetadataSchema = z.object({
  turns: z.number().int().min(1).max(10_000).default(50),
  reply_bytes: z.number().int().min(1).max(1_000_000).default(200),
});

const FILLER = "The road goes on. ";

export class Marathon extends EnvironmentMultiTurn {
  maxEpisodeTurns(example: TaskExample): number {
    return exampleMetadata(MetadataSchema, example).turns;
  }

  startEpisode(example: TaskExample): ChatMessage[] {
    return [{ role: "user", content: example.input }];
  }

  stepEpisode(example: TaskExample, messages: readonly ChatMessage[]): EnvironmentStepResultInput {
    const { reply_bytes: bytes } = exampleMetadata(MetadataSchema, example);
    const turn = messages.filter(isSampledAction).length;
    const text = `Turn ${turn}. ${FILLER.repeat(Math.ceil(bytes / FILLER.length))}`.slice(0, bytes);
    return { done: false, messages: [{ role: "user", content: text }] };
  }

  scoreEpisode(example: TaskExample, episode: EnvironmentEpisode): RewardResultInput {
    return { score: sampledTurns(episode).length / this.maxEpisodeTurns(example), threshold: 1 };
  }
}
