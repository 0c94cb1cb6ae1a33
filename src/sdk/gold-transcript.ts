/** Builds an SFT target by playing a scripted policy through the environment's own steps. */
import type { EnvironmentMultiTurn } from "./environment";
import { type Policy, runEpisode } from "./episode-loop";
import type { ChatMessage, TaskExample } from "./types";

/**
 * The messages after the opening prompt when `policy` plays `example`: the actions and the
 * replies the environment really gives, so SFT never teaches an observation it would not make.
 */
export async function goldTranscript(
  env: EnvironmentMultiTurn,
  example: TaskExample,
  policy: Policy,
): Promise<ChatMessage[]> {
  const episode = await runEpisode(env, example, { policy });
  const after = episode.messages.slice(episode.messages.length - episode.turns.length);
  return after.map(({ metadata: _marks, ...message }) => message);
}
