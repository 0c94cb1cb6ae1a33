import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { GuessNumber } from "../../src/environments/guess-number";
import { assembleEpisode, type ChatMessage } from "../../src/sdk";
import { getEpisode, getGroup, guessExample, type Json, startGroup, waitForGroup } from "./helpers";

/** Rebuilds the episode the scorer saw from a landed transcript, to grade it independently. */
function rebuild(episode: Json) {
  const messages: ChatMessage[] = episode.messages.map((m: Json) => ({
    role: m.role,
    content: m.content,
    ...(m.sampled ? { metadata: { sampled: true } } : {}),
  }));
  const openingCount = episode.messages.filter((m: Json) => m.turn === null).length;
  return assembleEpisode({
    messages,
    openingCount,
    responseText: episode.response_text,
    steps: [],
  });
}

describe("a guess-number rollout group", () => {
  it("runs 4 episodes to the end and lands them with correct rewards and advantages", async () => {
    const id = await startGroup({
      env: "guess-number",
      example: guessExample("gn-37", 37),
      group_size: 4,
      run_id: "test-run",
      policy_version: 3,
      sampling: { model: "sim", temperature: 1, seed: 11, max_completion_tokens: 64 },
    });
    const group = await waitForGroup(id);
    expect(group.status).toBe("landed");
    expect(group.episodes).toHaveLength(4);

    const env = new GuessNumber();
    const example = guessExample("gn-37", 37);
    const episodes = await Promise.all(group.episodes.map((e: Json) => getEpisode(e.episode_id)));
    const scores: number[] = [];
    for (const episode of episodes) {
      expect(episode.status).toBe("completed");
      expect(episode.policy_version).toBe(3);
      const sampled = episode.messages.filter((m: Json) => m.sampled);
      expect(sampled).toHaveLength(episode.turns);
      expect(sampled.every((m: Json) => m.role === "assistant" && m.completion_tokens > 0)).toBe(
        true,
      );
      const reward = await env.scoreEpisode(example, rebuild(episode));
      expect(episode.score).toBe(reward.score);
      expect(episode.per_turn_rewards).toEqual(reward.metadata?.per_turn_rewards);
      expect(episode.success).toBe(reward.score >= 1);
      scores.push(reward.score);
    }
    const mean = scores.reduce((a, b) => a + b, 0) / scores.length;
    for (const [i, episode] of episodes.entries()) {
      expect(episode.advantage).toBeCloseTo((scores[i] as number) - mean, 12);
    }
    expect(group.score_mean).toBeCloseTo(mean, 12);
    expect(group.credit_applied).toBe("per_episode");

    const rows = await env_sql(`SELECT status, score FROM episodes WHERE group_id = ?`, id);
    expect(rows).toHaveLength(4);
  });
});

async function env_sql(query: string, ...params: unknown[]) {
  return (
    await env.DB.prepare(query)
      .bind(...params)
      .all()
  ).results;
}
