// The group object reads its tables into memory once and then trusts what it wrote (a new group
// is not read back at all; each transition of a table is one statement that sets only the
// columns it names). A restarted instance reads storage: it must find exactly what the instance
// that wrote it holds, after every kind of transition.
import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { expect, it } from "vitest";
import { END } from "../../src/rollout/outcomes";
import { GroupStorage } from "../../src/rollout/storage/group-storage";
import { sampledMessage } from "../../src/sdk";
import { guessGroupSpec, ACTION_STATS as STATS } from "./storage-fixtures";

/** What an instance holds in memory of everything the transitions touch. */
function held(store: GroupStorage) {
  return {
    group: store.group.get(),
    episodes: store.episodes.all(),
    generations: [0, 1, 2].map((idx) => store.generations.get(idx)),
    timers: store.timers.next(),
    policy: store.policy.known(),
    turnVersion: store.policy.turnVersion(0, 1),
    sequence: [...store.tokens.sequence(0)],
    mode: [0, 1, 2].map((idx) => store.tokens.mode(idx)),
  };
}

it("a restarted instance reads what the writing instance holds, after every transition", async () => {
  const spec = await guessGroupSpec("mirrors", 3);
  const stub = env.ROLLOUT_GROUP.get(env.ROLLOUT_GROUP.idFromName(spec.groupId));
  await runInDurableObject(stub, (_instance, state) => {
    const store = new GroupStorage(state.storage);
    const rereadMatches = (when: string) =>
      expect(held(new GroupStorage(state.storage)), when).toEqual(held(store));

    store.create(spec);
    rereadMatches("created");
    store.policy.apply({ version: 3, maxLag: 2, paused: false, interrupt: false, revision: 1 });
    store.group.markRegistered();
    for (const idx of [0, 1, 2])
      store.recordOpening(idx, [{ role: "user", content: `Guess ${idx}.` }], 4, null);
    rereadMatches("opened");

    // Episode 0: two exact turns, a redispatch and a timeout between them.
    store.generations.markSent(0, 1_000);
    store.policy.recordSend(0, 0, 3);
    store.recordRedispatch(0);
    store.generations.markSent(0, 2_000);
    store.generations.timedOut(0, 2);
    store.generations.markSent(0, 3_000);
    const host = (prompt: number[], completion: number[]) => ({
      promptIds: Int32Array.from(prompt),
      completionIds: Int32Array.from(completion),
      logprobs: Float32Array.from(completion, () => -0.5),
      model: "sim",
    });
    const sampling = { temperature: 1, topP: 1 };
    store.recordAction(0, sampledMessage({ content: "<guess>5</guess>" }), STATS, {
      kind: "exact",
      host: host([1, 2, 3], [4, 5]),
      sampling,
    });
    store.recordStep(
      0,
      { messages: [{ role: "user", content: "Higher." }], metadata: { n: 1 }, done: false },
      "5",
    );
    rereadMatches("episode 0 stepped");
    store.generations.markSent(0, 4_000);
    store.policy.recordSend(0, 1, 4);
    store.recordAction(0, sampledMessage({ content: "<guess>7</guess>" }), STATS, {
      kind: "exact",
      host: host([1, 2, 3, 4, 5, 6], [7]),
      sampling,
    });
    // The reply ends it: the step's write and the end's write change one row in one transaction.
    store.recordStep(
      0,
      { messages: [{ role: "user", content: "Correct." }], metadata: {}, done: true },
      "7",
    );
    rereadMatches("episode 0 ended");

    // Episode 1: parked by the host, then it loses its tokens; episode 2 fails.
    store.generations.markSent(1, 5_000);
    store.parkGeneration(1, 9_000, 3);
    rereadMatches("episode 1 parked");
    store.generations.markSent(1, 10_000);
    store.generations.unsend(1);
    store.generations.markSent(1, 11_000);
    store.recordAction(1, sampledMessage({ content: "50" }), STATS, {
      kind: "inexact",
      reason: "no ids",
    });
    store.recordStep(
      1,
      { messages: [{ role: "user", content: "Lower." }], metadata: {}, done: true },
      "50",
    );
    store.finish(2, { state: "failed", reason: END.inference_unavailable, detail: "502 twice" });
    rereadMatches("every episode ended");

    store.group.setPhase("scoring");
    store.group.countAttempt("score", "env down");
    for (const idx of [0, 1, 2])
      store.recordReward(idx, { score: idx === 0 ? 1 : 0, metadata: {} });
    store.recordCredit(
      [0, 1, 2].map((idx) => ({
        idx,
        advantage: idx === 0 ? 1 : -0.5,
        perTurnRewards: [0.2, 1],
        perTurnAdvantages: null,
      })),
      "per_episode",
      ["one warning"],
    );
    store.group.countAttempt("land", null);
    rereadMatches("credited");

    const episodes = store.episodes.all();
    expect(episodes.map((e) => [e.state, e.endReason, e.failureReason])).toEqual([
      ["completed", END.done, null],
      ["completed", END.done, null],
      ["failed", END.inference_unavailable, END.inference_unavailable],
    ]);
    expect(episodes[0]).toMatchObject({ turns: 2, redispatches: 1, responseText: "7" });
    expect(store.group.get()).toMatchObject({
      phase: "landing",
      registered: true,
      scoreAttempts: 1,
      landAttempts: 1,
      lastError: null,
      warnings: ["one warning"],
    });
  });
});
