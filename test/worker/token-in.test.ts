// Token-in generation (`generation: "tokens"`) through the whole pipeline, in workerd against
// the simulator's vLLM endpoints (/tokenize, /v1/completions): the prompt is built from ids and
// never re-rendered, so a template that drops earlier reasoning breaks chat mode's prefixes and
// not these; budgets, cut completions and restarts behave as in chat mode.
import { describe, expect, it } from "vitest";
import type { GroupView } from "../../src/client/edgeroll-client";
import { END } from "../../src/rollout/outcomes";
import { IM_END, tokenize } from "../../src/sim/chat-template";
import {
  d1,
  episodesOf,
  errorOf,
  getEpisode,
  guessExample,
  itemAt,
  postGroup,
  simulatorRequests,
  simulatorStats,
  startGroup,
  waitForGroup,
} from "./helpers";
import {
  answersOf,
  expectExact,
  type HostAnswer,
  type JsonSample,
  landEvictedMidEpisode,
  leaseOne,
} from "./token-helpers";

/** Each episode's messages as (role, content) pairs, in order. */
async function transcripts(group: GroupView): Promise<[string, string][][]> {
  return (await episodesOf(group)).map((e) => e.messages.map((m) => [m.role, m.content]));
}

/** Where the sampled runs of a sample end: each a sampled id followed by one that is not. */
const sampledEnds = (sample: JsonSample) =>
  sample.mask.flatMap((m, i) => (m === 1 && sample.mask[i + 1] === 0 ? [i] : []));

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
      return { group, answers, leased: await leaseOne(`tin-${generation}`) };
    };
    const chat = await run("chat", "sim+think+record");
    const tokens = await run("tokens", "sim+record+think");
    // The same actions, the same replies: the model saw the same conversation in both modes.
    expect(await transcripts(tokens.group)).toEqual(await transcripts(chat.group));
    let multiTurn = 0;
    for (const [e, episode] of tokens.leased.episodes.entries()) {
      const chatEpisode = itemAt(chat.leased.episodes, e);
      const answers = itemAt(tokens.answers, episode.index);
      expectExact(episode, answers);
      expect(episode.prefix_breaks).toBe(0);
      expect(episode.samples).toHaveLength(1);
      if (episode.turns < 2) continue;
      multiTurn++;
      // Qwen3's template drops each earlier <think> block when chat mode re-renders.
      expect(chatEpisode.prefix_breaks).toBe(chatEpisode.turns - 1);
      // Each prompt is the previous prompt, its completion, then the new messages' ids.
      for (let t = 1; t < answers.length; t++) {
        const before = itemAt(answers, t - 1);
        const prompt = itemAt(answers, t).prompt_token_ids;
        expect(startsWith(prompt, [...before.prompt_token_ids, ...before.token_ids])).toBe(true);
      }
      // One sample: the last turn's prompt and completion, exactly as the host saw them.
      const last = answers.at(-1) as HostAnswer;
      expect(itemAt(episode.samples).token_ids).toEqual([
        ...last.prompt_token_ids,
        ...last.token_ids,
      ]);
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
    const episode = await getEpisode(itemAt(group.episodes).episode_id);
    const actions = episode.messages.filter((m) => m.sampled);
    expect(actions.length).toBeGreaterThan(1);
    for (const action of actions) expect(action.finish_reason).toBe("length");
    const sample = itemAt(itemAt((await leaseOne("tin-cut")).episodes).samples);
    // After each cut completion (three sampled ids) comes the closing the model never sampled.
    const ends = sampledEnds(sample);
    expect(ends).toHaveLength(actions.length - 1);
    for (const end of ends) expect(sample.token_ids[end + 1]).toBe(IM_END);
    expect(sample.mask.filter((m) => m === 1)).toHaveLength(3 * actions.length);
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
    const episode = itemAt((await waitForGroup(id)).episodes);
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
    const { answers, leased } = await landEvictedMidEpisode("tin-evict", 43, {
      generation: "tokens",
    });
    for (const episode of leased.episodes) {
      expectExact(episode, itemAt(answers, episode.index));
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
    const episode = await getEpisode(itemAt(group.episodes).episode_id);
    const actions = episode.messages.filter((m) => m.sampled);
    expect(actions.length).toBeGreaterThan(1);
    // The environment sees the host's text, without the stop string.
    for (const action of actions) {
      expect(action.content).toMatch(/<guess>\d+$/);
      expect(action.finish_reason).toBe("stop");
    }
    const sample = itemAt(itemAt((await leaseOne("tin-stop")).episodes).samples);
    const stop = tokenize("</guess>");
    const ends = sampledEnds(sample);
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
    for (const episode of (await leaseOne("tin-tokenize-retry")).episodes)
      expectExact(episode, itemAt(answers, episode.index));
    const outcomes = (await simulatorStats()).tokenize.byModel[model]?.outcomes ?? {};
    const failed = outcomes.tokenize_error_503 ?? 0;
    // Each distinct request failed once and was asked again (the two openings are one request).
    expect(failed).toBeGreaterThan(0);
    expect(outcomes.tokenize_ok).toBeGreaterThanOrEqual(failed);
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
    expect((await errorOf(response)).message).toMatch(/generation.*tokens: "off"/);
    expect(await d1("SELECT id FROM groups WHERE run_id = 'tin-off'")).toEqual([]);
  });
});
