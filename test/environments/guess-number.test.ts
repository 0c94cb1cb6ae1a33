import { describe, expect, it } from "vitest";
import {
  DEFAULT_TURNS,
  GuessNumber,
  gradeGuesses,
  hintFor,
  parseGuess,
} from "../../src/environments/guess-number";
import { runEpisode, sampledTurns, type TaskExample } from "../../src/sdk";

const env = new GuessNumber();
const example: TaskExample = { id: "g", input: "Find it.", metadata: { secret: 37 } };

/** Plays the given guesses in order, as raw actions. */
const play = (...actions: string[]) =>
  runEpisode(env, example, { policy: (_m, turn) => actions[turn.index] ?? "<guess>1</guess>" });

describe("guess-number", () => {
  it("answers higher, lower and correct, and ends on correct", async () => {
    const episode = await play("<guess>50</guess>", "<guess>20</guess>", "<guess>37</guess>");
    const replies = episode.turns.filter((t) => t.role === "user").map((t) => t.content);
    expect(replies[0]).toMatch(/\blower\b/);
    expect(replies[0]).not.toMatch(/higher|correct/);
    expect(replies[1]).toMatch(/\bhigher\b/);
    expect(replies[1]).not.toMatch(/lower|correct/);
    expect(replies[2]).toMatch(/\bcorrect\b/);
    expect(sampledTurns(episode)).toHaveLength(3);
  });

  it("reminds the format on an action without a valid guess, and that still uses a turn", async () => {
    const episode = await play("I think 37", "<guess>500</guess>", "<guess>37</guess>");
    const replies = episode.turns.filter((t) => t.role === "user").map((t) => t.content);
    expect(replies[0]).toMatch(/<guess>N<\/guess>/);
    expect(replies[0]).toMatch(/6 guesses left/);
    expect(replies[1]).toMatch(/5 guesses left/);
    expect((await env.scoreEpisode(example, episode)).metadata?.per_turn_rewards).toEqual([
      0, 0, 1,
    ]);
  });

  it("gives 7 turns by default, or the example's max_turns", async () => {
    expect(DEFAULT_TURNS).toBe(7);
    const episode = await runEpisode(env, example, { policy: () => "<guess>1</guess>" });
    expect(sampledTurns(episode)).toHaveLength(7);
    expect(env.maxEpisodeTurns({ ...example, metadata: { secret: 3, max_turns: 3 } })).toBe(3);
  });

  it("scores 1.0 when solved and 0.0 otherwise, threshold 1.0", async () => {
    expect(await env.scoreEpisode(example, await play("<guess>37</guess>"))).toMatchObject({
      score: 1,
      threshold: 1,
    });
    const missed = await runEpisode(env, example, { policy: () => "<guess>99</guess>" });
    expect(await env.scoreEpisode(example, missed)).toMatchObject({ score: 0, threshold: 1 });
  });

  it("rewards turns: 1.0 solving, 0.2 consistent with every earlier hint, else 0.0", () => {
    // secret 37: 50 (first guess, consistent) -> lower; 60 contradicts; 20 consistent -> higher;
    // 10 contradicts; invalid; 37 solves.
    expect(gradeGuesses([50, 60, 20, 10, null, 37], 37)).toEqual([0.2, 0, 0.2, 0, 0, 1]);
    expect(gradeGuesses([50, 50], 37)).toEqual([0.2, 0]); // a repeat is ruled out by its own hint
  });

  it("reads the last <guess> of an action and rejects out-of-range numbers", () => {
    expect(parseGuess("maybe <guess>10</guess>, no: <guess> 12 </guess>")).toBe(12);
    expect(parseGuess("<guess>0</guess>")).toBeNull();
    expect(parseGuess("<guess>101</guess>")).toBeNull();
    expect(parseGuess("<guess>4.5</guess>")).toBeNull();
    expect(hintFor(3, 5)).toBe("higher");
  });

  it("gold transcripts are binary searches that always solve within the budget", async () => {
    for (let secret = 1; secret <= 100; secret++) {
      const target = await env.sftCompletion({ ...example, metadata: { secret } });
      const guesses = target.filter((m) => m.role === "assistant");
      expect(guesses.length).toBeLessThanOrEqual(DEFAULT_TURNS);
      expect(target.at(-1)?.content).toMatch(/correct/);
    }
  });

  it("refuses an example without a valid secret", () => {
    expect(() => env.secretOf({ id: "x", input: "", metadata: { secret: 0 } })).toThrow(/secret/);
  });
});
