// A group object's token storage, in a real Durable Object's SQLite.
import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { GroupStorage } from "../../src/rollout/storage/group-storage";
import type { HostTokens } from "../../src/tokens/turn-tokens";

let n = 0;
const object = () => env.ROLLOUT_GROUP.get(env.ROLLOUT_GROUP.idFromName(`token-store-${n++}`));
const sampling = { temperature: 1, topP: 1 };
const range = (length: number, from: number) => Int32Array.from({ length }, (_, i) => from + i);
const host = (prompt: Int32Array, completion: Int32Array): HostTokens => ({
  promptIds: prompt,
  completionIds: completion,
  logprobs: Float32Array.from(completion, (_, i) => -(i % 7) / 8),
  model: "m",
});
/** The tokens table of an object's storage, as a new instance of the object would open it. */
function tokensOf(storage: DurableObjectStorage) {
  const opened = new GroupStorage(storage);
  opened.db.upgrade();
  return opened.tokens;
}
const concat = (...parts: Int32Array[]) => {
  const all = new Int32Array(parts.reduce((k, p) => k + p.length, 0));
  let at = 0;
  for (const p of parts) {
    all.set(p, at);
    at += p.length;
  }
  return all;
};

describe("the token store", () => {
  it("keeps a turn too large for one SQLite row in parts, and reads it back exactly", async () => {
    await runInDurableObject(object(), (_instance, state) => {
      const store = tokensOf(state.storage);
      // 300,000 completion tokens and logprobs: 2.4 MB, over a row's 2 MB.
      const answer = host(range(50, 1), range(300_000, 1000));
      store.record(0, 0, answer, sampling);
      const [episode] = tokensOf(state.storage).episodes(1);
      expect(episode?.turns[0]?.completionIds).toEqual(answer.completionIds);
      expect(episode?.turns[0]?.logprobs).toEqual(answer.logprobs);
      expect(episode?.turns[0]?.promptTail).toEqual(answer.promptIds);
    });
  });

  it("after a restart, computes the next prefix against what storage holds", async () => {
    const stub = object();
    const first = host(range(10, 1), range(5, 100));
    await runInDurableObject(stub, (_instance, state) => {
      tokensOf(state.storage).record(0, 0, first, sampling);
    });
    await runInDurableObject(stub, (_instance, state) => {
      // A fresh store, as a new instance of the object would have.
      const store = tokensOf(state.storage);
      const next = host(concat(first.promptIds, first.completionIds, range(3, 200)), range(4, 300));
      store.record(0, 1, next, sampling);
      const [episode] = store.episodes(1);
      expect(episode?.turns[1]).toMatchObject({ prefixLength: 15, consistent: true });
      expect(episode?.turns[1]?.promptTail).toEqual(range(3, 200));
    });
  });

  it("refuses a turn recorded twice or out of order", async () => {
    await runInDurableObject(object(), (_instance, state) => {
      const store = tokensOf(state.storage);
      store.record(0, 0, host(range(3, 1), range(2, 10)), sampling);
      expect(() => store.record(0, 0, host(range(3, 1), range(2, 10)), sampling)).toThrow(
        /turn 0 recorded after 1 turns/,
      );
      expect(() => store.record(0, 2, host(range(3, 1), range(2, 10)), sampling)).toThrow(
        /turn 2 recorded after 1 turns/,
      );
    });
  });
});
