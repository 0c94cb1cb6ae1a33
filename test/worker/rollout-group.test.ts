import { env } from "cloudflare:workers";
import { beforeAll, describe, expect, it } from "vitest";
import type { EpisodeView, GroupView } from "../../src/client/edgeroll-client";
import { GuessNumber, parseGuess } from "../../src/environments/guess-number";
import { END } from "../../src/rollout/outcomes";
import {
  assembleEpisode,
  type ChatMessage,
  isSampledAction,
  type TaskExample,
} from "../../src/sdk";
import {
  count,
  episodesOf,
  getEpisode,
  getGroup,
  guessExample,
  itemAt,
  lastError,
  SUPPORT_EXAMPLE,
  simulatorRequests,
  startGroup,
  until,
  waitForGroup,
} from "./helpers";
import { registerTestEnvironment } from "./test-environments";

/** Rebuilds the episode the scorer saw from a landed transcript, to grade it independently. */
function rebuild(episode: EpisodeView) {
  const messages: ChatMessage[] = episode.messages.map((m) => ({
    role: m.role,
    content: m.content,
    ...(m.sampled ? { metadata: { sampled: true } } : {}),
  }));
  const openingCount = episode.messages.filter((m) => m.turn === null).length;
  return assembleEpisode({
    messages,
    openingCount,
    responseText: episode.response_text,
    steps: [],
  });
}

describe("a guess-number rollout group", () => {
  const example = guessExample("gn-37", 37);
  let group: GroupView;
  let episodes: EpisodeView[];
  /** What guess-number itself makes of each landed transcript. */
  let rewards: Awaited<ReturnType<GuessNumber["scoreEpisode"]>>[];

  beforeAll(async () => {
    const id = await startGroup({
      env: "guess-number",
      example,
      group_size: 4,
      run_id: "test-run",
      policy_version: 3,
      sampling: { model: "sim", temperature: 1, seed: 11, max_completion_tokens: 64 },
    });
    group = await waitForGroup(id);
    episodes = await episodesOf(group);
    const guessNumber = new GuessNumber();
    rewards = await Promise.all(episodes.map((e) => guessNumber.scoreEpisode(example, rebuild(e))));
  });

  it("runs its 4 episodes to the end and lands them, in D1 too", async () => {
    expect(group.status).toBe("landed");
    expect(group.episodes).toHaveLength(4);
    for (const episode of episodes) {
      expect(episode.status).toBe("completed");
      expect(episode.policy_version).toBe(3);
    }
    expect(
      await count("SELECT COUNT(*) AS n FROM episodes WHERE group_id = ?", group.group_id),
    ).toBe(4);
  });

  it("lands every sampled turn as an assistant message with its tokens counted", () => {
    for (const episode of episodes) {
      const sampled = episode.messages.filter((m) => m.sampled);
      expect(sampled).toHaveLength(episode.turns);
      expect(sampled.every((m) => m.role === "assistant" && (m.completion_tokens ?? 0) > 0)).toBe(
        true,
      );
    }
  });

  it("lands the rewards the environment gives the landed transcripts", () => {
    for (const [i, episode] of episodes.entries()) {
      const reward = itemAt(rewards, i);
      expect(episode.score).toBe(reward.score);
      expect(episode.per_turn_rewards).toEqual(reward.metadata?.per_turn_rewards);
      expect(episode.success).toBe(reward.score >= 1);
    }
  });

  it("gives each episode its reward minus the group's mean as its advantage", () => {
    const scores = rewards.map((r) => r.score);
    const mean = scores.reduce((a, b) => a + b, 0) / scores.length;
    for (const [i, episode] of episodes.entries())
      expect(episode.advantage).toBeCloseTo(itemAt(scores, i) - mean, 12);
    expect(group.score_mean).toBeCloseTo(mean, 12);
    expect(group.credit_applied).toBe("per_episode");
  });
});

describe("per-turn credit", () => {
  it("lands each sampled turn's advantage: its reward minus the mean at that turn index", async () => {
    const id = await startGroup({
      env: "guess-number",
      example: guessExample("gn-82", 82),
      group_size: 4,
      credit_assignment: "per_turn",
      sampling: { model: "sim", temperature: 1, seed: 5, max_completion_tokens: 64 },
    });
    const group = await waitForGroup(id);
    expect(group.credit_applied).toBe("per_turn");
    expect(group.warnings).toEqual([]);
    const episodes = await episodesOf(group);
    const vectors = episodes.map((e) => e.per_turn_rewards ?? []);
    for (const [i, episode] of episodes.entries()) {
      expect(episode.per_turn_advantages).toHaveLength(episode.turns);
      for (const [t, reward] of itemAt(vectors, i).entries()) {
        const peers = vectors.filter((v) => v.length > t).map((v) => itemAt(v, t));
        const mean = peers.reduce((a, b) => a + b, 0) / peers.length;
        expect(episode.per_turn_advantages?.[t]).toBeCloseTo(reward - mean, 12);
      }
    }
  });
});

describe("generation deadlines", () => {
  it("retries a generation that hangs past its 2 s deadline once, then fails the episode", async () => {
    // Its own model name: the simulator counts requests per model across test files.
    const model = "deadline-test+hang";
    const id = await startGroup({
      env: "guess-number",
      example: guessExample("gn-hang", 50),
      group_size: 1,
      sampling: { model },
    });
    const group = await waitForGroup(id);
    expect(group.status).toBe("failed");
    expect(group.failure_reason).toBe("every episode failed: generation_timeout x1");
    expect(group.failures).toEqual([
      expect.objectContaining({
        reason: END.generation_timeout,
        detail: "two attempts ran past the 2 s deadline",
      }),
    ]);
    expect(await simulatorRequests(model)).toBe(2);
  });

  it("never lets output that arrives after the deadline reach the environment", async () => {
    const model = "sim+latency:3000";
    const id = await startGroup({
      env: "guess-number",
      example: guessExample("gn-late", 50),
      group_size: 1,
      sampling: { model },
    });
    const group = await waitForGroup(id);
    const episode = await getEpisode(itemAt(group.episodes).episode_id);
    expect(episode.failure_reason).toBe(END.generation_timeout);
    expect(episode.messages.filter((m) => m.role === "assistant")).toEqual([]);
    expect(episode.turns).toBe(0);
    expect(episode.advantage).toBeNull();
  });
});

/** Throws when the first guess is odd: some episodes of a group fail, others do not. */
class ThrowsOnOddGuesses extends GuessNumber {
  override stepEpisode(example: TaskExample, messages: readonly ChatMessage[], response: string) {
    const guess = parseGuess(response);
    const first = messages.filter(isSampledAction).length === 1;
    if (first && guess !== null && guess % 2 === 1) throw new Error(`odd guess ${guess}`);
    return super.stepEpisode(example, messages, response);
  }
}
registerTestEnvironment("throws-on-odd-first-guess", () => new ThrowsOnOddGuesses());

describe("environment failures", () => {
  it("fail only the episode whose environment threw; the rest of the group lands", async () => {
    const id = await startGroup({
      env: "throws-on-odd-first-guess",
      example: guessExample("odd", 64),
      group_size: 6,
      sampling: { model: "sim", temperature: 1, seed: 3 },
    });
    const group = await waitForGroup(id);
    expect(group.status).toBe("landed");
    const failed = group.episodes.filter((e) => e.state === "failed");
    const finished = group.episodes.filter((e) => e.state === "completed");
    expect(failed.length).toBeGreaterThan(0);
    expect(finished.length).toBeGreaterThan(0);
    expect(failed.length + finished.length).toBe(6);
    for (const episode of failed) {
      expect(episode.failure_reason).toBe(END.env_error);
      expect(episode.failure_detail).toMatch(/^Error: odd guess \d*[13579]$/);
      expect(episode.advantage).toBeNull();
    }
    for (const episode of finished) expect(episode.advantage).not.toBeNull();
  });
});

describe("native tool calling", () => {
  it("a tool-agent group whose model emits OpenAI tool_calls resolves the request", async () => {
    const example = { ...SUPPORT_EXAMPLE, id: "native" };
    const id = await startGroup({
      env: "tool-agent",
      example,
      group_size: 1,
      sampling: { model: "sim+native", temperature: 0 },
    });
    const group = await waitForGroup(id);
    expect(itemAt(group.episodes)).toMatchObject({ state: "completed", score: 1 });
    const episode = await getEpisode(itemAt(group.episodes).episode_id);
    const calls = episode.messages.flatMap((m) =>
      "tool_calls" in m ? [itemAt(m.tool_calls ?? []).function.name] : [],
    );
    expect(calls).toEqual(["verify_identity", "list_orders", "refund_order"]);
  });
});

describe("a group of one", () => {
  it("is scored but carries no advantage", async () => {
    const id = await startGroup({
      env: "exact-answer",
      example: { id: "ea-1", input: "What is 17 * 23?", output: "391" },
      group_size: 1,
      sampling: { model: "sim", temperature: 0 },
    });
    const group = await waitForGroup(id);
    expect(group.episodes).toEqual([
      expect.objectContaining({ state: "completed", turns: 1, score: 1, advantage: null }),
    ]);
  });
});

describe("the context window", () => {
  it("ends an episode truncated when the transcript can no longer fit with its completion budget", async () => {
    const id = await startGroup({
      env: "guess-number",
      example: guessExample("ctx-budget", 1),
      group_size: 1,
      max_context_tokens: 260,
      sampling: { model: "sim", temperature: 0, max_completion_tokens: 64 },
    });
    const episode = itemAt((await waitForGroup(id)).episodes);
    expect(episode).toMatchObject({ state: "truncated", end_reason: END.context_budget });
    expect(episode.turns).toBeGreaterThan(0);
    expect(episode.score).toBe(0);
  });

  it("ends an episode truncated when the host rejects the prompt as too long", async () => {
    const id = await startGroup({
      env: "guess-number",
      example: guessExample("ctx-host", 1),
      group_size: 1,
      sampling: { model: "sim+context:150", temperature: 0 },
    });
    const episode = itemAt((await waitForGroup(id)).episodes);
    expect(episode).toMatchObject({ state: "truncated", end_reason: END.context_length });
    expect(episode.turns).toBeGreaterThan(0);
  });

  it("marks a turn cut by max_completion_tokens as truncated, and still steps it", async () => {
    const id = await startGroup({
      env: "guess-number",
      example: guessExample("short", 50),
      group_size: 1,
      sampling: { model: "sim", temperature: 0, max_completion_tokens: 3 },
    });
    const group = await waitForGroup(id);
    const episode = await getEpisode(itemAt(group.episodes).episode_id);
    const first = episode.messages.findIndex((m) => m.sampled);
    expect(itemAt(episode.messages, first)).toMatchObject({
      finish_reason: "length",
      truncated: true,
      completion_tokens: 3,
    });
    expect(itemAt(episode.messages, first + 1).content).toMatch(/<guess>N<\/guess>/);
  });
});

describe("landing", () => {
  it("keeps the transcripts through a D1 outage and lands once D1 is back", async () => {
    await env.DB.exec("ALTER TABLE messages RENAME TO messages_away");
    let id: string;
    try {
      id = await startGroup({
        env: "exact-answer",
        example: { id: "outage", input: "What is 2 + 2?", output: "4" },
        group_size: 2,
        sampling: { model: "sim", temperature: 0 },
      });
      await until(
        async () => (lastError(await getGroup(id)) ?? "").startsWith("D1:"),
        "met the D1 outage",
      );
      expect((await getGroup(id)).status).toBe("scoring");
    } finally {
      await env.DB.exec("ALTER TABLE messages_away RENAME TO messages");
    }
    const group = await waitForGroup(id);
    expect(group.status).toBe("landed");
    expect(await count("SELECT COUNT(*) AS n FROM messages WHERE group_id = ?", id)).toBe(4);
  });
});
