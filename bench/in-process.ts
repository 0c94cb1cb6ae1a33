/**
 * The reference: the SDK's episode loop in one Node process, calling the simulator directly
 * with the same inference client, environment, seeds and requests as the pipeline — everything
 * edgeroll adds (HTTP trigger, Durable Object, step and score workers, D1) left out.
 */
import pMap from "p-map";
import type { StartGroupInput } from "../src/client/edgeroll-client";
import { loadEnvironment } from "../src/environments/registry";
import { generate } from "../src/inference/client";
import { generationSeed, SamplingSchema } from "../src/rollout/group-spec";
import { type EnvironmentEpisode, runEpisode, scoreGroup } from "../src/sdk";

export interface LoopRun {
  turns: number;
  seconds: number;
}

export async function inProcessLoop(
  simUrl: string,
  groups: readonly StartGroupInput[],
  stream: boolean,
): Promise<LoopRun> {
  const started = Date.now();
  const turns = await pMap(
    groups,
    async (group) => {
      const env = loadEnvironment(group.env);
      const sampling = SamplingSchema.parse(group.sampling);
      const episodes: EnvironmentEpisode[] = await Promise.all(
        Array.from({ length: group.group_size }, (_, idx) =>
          runEpisode(env, group.example, {
            promptText: group.prompt_text ?? "",
            policy: async (messages, turn) => {
              const outcome = await generate(
                { baseUrl: simUrl },
                {
                  sampling,
                  messages,
                  seed: generationSeed(sampling, idx, turn.index),
                  stream,
                  // Asked for as the group asks for them: the loop reads the same bodies.
                  tokens: (group.tokens ?? "auto") !== "off",
                },
                { deadlineMs: 600_000, maxRetries: 4 },
              );
              if (outcome.kind !== "ok") throw new Error(`generation failed: ${outcome.kind}`);
              return {
                content: outcome.completion.content,
                toolCalls: outcome.completion.toolCalls,
              };
            },
          }),
        ),
      );
      await scoreGroup(env, group.example, episodes);
      return episodes.reduce(
        (n, e) => n + e.turns.filter((t) => t.metadata.sampled === true).length,
        0,
      );
    },
    { concurrency: groups.length },
  );
  return { turns: turns.reduce((a, b) => a + b, 0), seconds: (Date.now() - started) / 1000 };
}
