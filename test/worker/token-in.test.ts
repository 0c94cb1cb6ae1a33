// Token-in generation (`generation: "tokens"`) through the whole pipeline, in workerd against
// the simulator's vLLM endpoints (/tokenize, /v1/completions): the prompt is built from ids and
// never re-rendered, so a template that drops earlier reasoning breaks chat mode's prefixes and
// not these; budgets, cut completions and restarts behave as in chat mode.
import { describe, expect, it } from "vitest";
import { END } from "../../src/rollout/outcomes";
import { IM_END, tokenize } from "../../src/sim/chat-template";
import {
  getEpisode,
  guessExample,
  type Json,
  postGroup,
  simulatorRequests,
  simulatorStats,
  startGroup,
  waitForGroup,
} from "./helpers";
import {
  answersOf,
  d1,
  evictWhileParked,
  expectExact,
  type HostAnswer,
  lease,
} from "./token-helpers";

/** Each episode's messages as (role, content) pairs, in order. */
async function transcripts(group: Json): Promise<string[][][]> {
  return Promise.all(
    group.episodes.map(async (e: Json) =>
      (await getEpisode(e.episode_id)).messages.map((m: Json) => [m.role, m.content]),
    ),
  );
}

const startsWith = (ids: readonly number[], prefix: readonly number[]) =>
  prefix.every((id, i) => ids[i] === id);

describe("token-in generation", () => {
  it("records no prefix break where chat mode records one each turn, playing the same game", async () => {
    const sampling = { temperature: 1, seed: 77 };
    const run = async (generation: "chat" | "tokens", model: string) => {
      const id = await startGroup({
        env: "guess-number",
        example: guessExample(`tin-${generation}`, 91),
        group_size: 3,
        run_id: `tin-${generation}`,
        generation,
        sampling: { model, ...sampling },
      });
      const group = await waitForGroup(id);
      expect(group.status).toBe("landed");
      // Two spellings of the same directives: the simulator records answers by model string.
      const answers = await answersOf(group, model, sampling);
      return { group, answers, leased: (await lease(`tin-${generation}`)).groups[0] };
    };
    const chat = await run("chat", "sim+think+record");
    const tokens = await run("tokens", "sim+record+think");
    // The same actions, the same replies: the model saw the same conversation in both modes.
    expect(await transcripts(tokens.group)).toEqual(await transcripts(chat.group));
    let multiTurn = 0;
    for (const [e, episode] of tokens.leased.episodes.entries()) {
      const chatEpisode = chat.leased.episodes[e];
      const answers = tokens.answers[episode.index] as HostAnswer[];
      expectExact(episode, answers);
      expect(episode.prefix_breaks).toBe(0);
      expect(episode.samples).toHaveLength(1);
      if (episode.turns < 2) continue;
      multiTurn++;
      // Qwen3's template drops each earlier <think> block when chat mode re-renders.
      expect(chatEpisode.prefix_breaks).toBe(chatEpisode.turns - 1);
      // Each prompt is the previous prompt, its completion, then the new messages' ids.
      for (let t = 1; t < answers.length; t++) {
        const before = answers[t - 1] as HostAnswer;
        const prompt = (answers[t] as HostAnswer).prompt_token_ids;
        expect(startsWith(prompt, [...before.prompt_token_ids, ...before.token_ids])).toBe(true);
      }
      // One sample: the last turn's prompt and completion, exactly as the host saw them.
      const last = answers.at(-1) as HostAnswer;
      expect(episode.samples[0].token_ids).toEqual([...last.prompt_token_ids, ...last.token_ids]);
    }
    expect(multiTurn).toBeGreaterThan(0);
  });

  it("closes a completion cut at max_completion_tokens with the template's end of turn", async () => {
    const id = await startGroup({
      env: "guess-number",
      example: guessExample("tin-cut", 64),
      group_size: 1,
      run_id: "tin-cut",
      generation: "tokens",
      sampling: { model: "sim", temperature: 0, seed: 4, max_completion_tokens: 3 },
    });
    const group = await waitForGroup(id);
    expect(group.status).toBe("landed");
    const episode = await getEpisode(group.episodes[0].episode_id);
    const actions = episode.messages.filter((m: Json) => m.sampled);
    expect(actions.length).toBeGreaterThan(1);
    for (const action of actions) expect(action.finish_reason).toBe("length");
    const [leased] = (await lease("tin-cut")).groups[0].episodes;
    const [sample] = leased.samples;
    // After each cut completion (three sampled ids) comes the closing the model never sampled.
    const ends = sample.mask.flatMap((m: number, i: number) =>
      m === 1 && sample.mask[i + 1] === 0 ? [i] : [],
    );
    expect(ends).toHaveLength(actions.length - 1);
    for (const end of ends) expect(sample.token_ids[end + 1]).toBe(IM_END);
    expect(sample.mask.filter((m: number) => m === 1)).toHaveLength(3 * actions.length);
  });

  it("ends an episode context_budget with the exact count before asking the host", async () => {
    const model = "sim+latency:1";
    const id = await startGroup({
      env: "guess-number",
      example: guessExample("tin-budget", 64),
      group_size: 1,
      run_id: "tin-budget",
      generation: "tokens",
      max_context_tokens: 200,
      sampling: { model, temperature: 1, seed: 9, max_completion_tokens: 64 },
    });
    const group = await waitForGroup(id);
    const [episode] = group.episodes;
    expect(episode.state).toBe("truncated");
    expect(episode.end_reason).toBe(END.context_budget);
    // One generation per recorded turn: the one that would not fit was never sent.
    expect(episode.turns).toBeGreaterThan(0);
    expect(await simulatorRequests(model)).toBe(episode.turns);
    expect(episode.failure_detail).toMatch(
      /^\d+ prompt tokens \+ max_completion_tokens 64 > max_context_tokens 200$/,
    );
  });

  it("loses no token and breaks no prefix when the object is evicted mid-episode", async () => {
    const model = "sim+fail:503:1@2+retryafter:1.5+record";
    const sampling = { temperature: 1, seed: 43 };
    const id = await startGroup({
      env: "guess-number",
      example: guessExample("tin-evict", 88),
      group_size: 2,
      run_id: "tin-evict",
      generation: "tokens",
      sampling: { model, ...sampling },
    });
    await evictWhileParked(id);
    const group = await waitForGroup(id);
    expect(group.status).toBe("landed");
    const answers = await answersOf(group, model, sampling);
    const [leased] = (await lease("tin-evict")).groups;
    for (const episode of leased.episodes) {
      expectExact(episode, answers[episode.index] as HostAnswer[]);
      expect(episode.prefix_breaks).toBe(0);
    }
  });

  it("keeps a stop string's sampled ids and closes the turn after them", async () => {
    const id = await startGroup({
      env: "guess-number",
      example: guessExample("tin-stop", 64),
      group_size: 1,
      run_id: "tin-stop",
      generation: "tokens",
      sampling: { model: "sim", temperature: 0, seed: 4, stop: ["</guess>"] },
    });
    const group = await waitForGroup(id);
    const episode = await getEpisode(group.episodes[0].episode_id);
    const actions = episode.messages.filter((m: Json) => m.sampled);
    expect(actions.length).toBeGreaterThan(1);
    // The environment sees the host's text, without the stop string.
    for (const action of actions) {
      expect(action.content).toMatch(/<guess>\d+$/);
      expect(action.finish_reason).toBe("stop");
    }
    const [sample] = (await lease("tin-stop")).groups[0].episodes[0].samples;
    const stop = tokenize("</guess>");
    const ends = sample.mask.flatMap((m: number, i: number) =>
      m === 1 && sample.mask[i + 1] === 0 ? [i] : [],
    );
    expect(ends).toHaveLength(actions.length - 1);
    for (const end of ends) {
      // The sampled ids end with the stop string's; the closing the model never sampled follows.
      expect(sample.token_ids.slice(end + 1 - stop.length, end + 1)).toEqual(stop);
      expect(sample.token_ids[end + 1]).toBe(IM_END);
    }
  });

  it("retries a tokenizer that fails, within the generation's retries", async () => {
    const model = "sim+record+tokenize-fail:503:1";
    const sampling = { temperature: 1, seed: 12 };
    const id = await startGroup({
      env: "guess-number",
      example: guessExample("tin-tokenize-retry", 30),
      group_size: 2,
      run_id: "tin-tokenize-retry",
      generation: "tokens",
      sampling: { model, ...sampling },
    });
    const group = await waitForGroup(id);
    expect(group.status).toBe("landed");
    const answers = await answersOf(group, model, sampling);
    for (const episode of (await lease("tin-tokenize-retry")).groups[0].episodes)
      expectExact(episode, answers[episode.index] as HostAnswer[]);
    const outcomes = (await simulatorStats()).tokenize.byModel[model].outcomes;
    // Each distinct request failed once and was asked again (the two openings are one request).
    expect(outcomes.tokenize_error_503).toBeGreaterThan(0);
    expect(outcomes.tokenize_ok).toBeGreaterThanOrEqual(outcomes.tokenize_error_503);
  });

  it("fails episodes inference_rejected against a host without /tokenize, naming it", async () => {
    const id = await startGroup({
      env: "guess-number",
      example: guessExample("tin-no-tokenize", 30),
      group_size: 1,
      run_id: "tin-no-tokenize",
      generation: "tokens",
      sampling: { model: "sim+tokenize-fail:404" },
    });
    const group = await waitForGroup(id);
    expect(group.failures).toEqual([
      expect.objectContaining({
        reason: END.inference_rejected,
        detail: expect.stringMatching(
          /^inference host \(\/tokenize\) answered 404: .*does not exist/,
        ),
      }),
    ]);
  });

  it("retries a generation that hangs past its deadline once, then fails the episode", async () => {
    const model = "token-in-deadline+hang";
    const id = await startGroup({
      env: "guess-number",
      example: guessExample("tin-hang", 50),
      group_size: 1,
      run_id: "tin-hang",
      generation: "tokens",
      sampling: { model },
    });
    const group = await waitForGroup(id);
    expect(group.failures).toEqual([
      expect.objectContaining({
        reason: END.generation_timeout,
        detail: "two attempts ran past the 2 s deadline",
      }),
    ]);
    expect(await simulatorRequests(model)).toBe(2);
  });

  it("is refused with tokens: off, naming the field, and stores nothing", async () => {
    const response = await postGroup({
      env: "guess-number",
      example: guessExample("tin-off", 5),
      group_size: 1,
      run_id: "tin-off",
      generation: "tokens",
      tokens: "off",
      sampling: { model: "sim" },
    });
    expect(response.status).toBe(400);
    const body: Json = await response.json();
    expect(body.error.message).toMatch(/generation.*tokens: "off"/);
    const rows = await d1("SELECT id FROM groups WHERE run_id = 'tin-off'");
    expect(rows).toEqual([]);
  });
});
