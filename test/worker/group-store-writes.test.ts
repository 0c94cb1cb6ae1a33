// A turn's writes are all or nothing: a write the database refuses leaves the episode exactly
// as it was, so a driver that fails there, or a restart, never sees half a turn.
import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { expect, it } from "vitest";
import { GroupStorage } from "../../src/rollout/storage/group-storage";
import { type ChatMessage, sampledMessage } from "../../src/sdk";
import { guessGroupSpec, ACTION_STATS as STATS } from "./storage-fixtures";

const NO_TOKENS = { kind: "off" } as const;

/** A fresh object holding one group of one episode that has opened and sent its generation. */
async function withOpenedEpisode(
  body: (store: GroupStorage, storage: DurableObjectStorage) => void,
): Promise<void> {
  const spec = await guessGroupSpec("writes", 1);
  const stub = env.ROLLOUT_GROUP.get(env.ROLLOUT_GROUP.idFromName(spec.groupId));
  await runInDurableObject(stub, (_instance, state) => {
    const store = new GroupStorage(state.storage);
    store.create(spec);
    store.recordOpening(0, [{ role: "user", content: "Guess." }], 5, null);
    store.generations.markSent(0, Date.now() + 60_000);
    body(store, state.storage);
  });
}

/** Puts a row where the next message will go, so the database refuses that insert. */
function occupySeq(storage: DurableObjectStorage, seq: number): void {
  storage.sql.exec(
    "INSERT INTO messages (idx, seq, turn, sampled, message) VALUES (0, ?, NULL, 0, '{}')",
    seq,
  );
}

const seqs = (storage: DurableObjectStorage) =>
  storage.sql
    .exec("SELECT seq FROM messages WHERE idx = 0 ORDER BY seq")
    .toArray()
    .map((r) => r.seq);

it("a refused action leaves the episode generating, its generation still sent", async () => {
  await withOpenedEpisode((store, storage) => {
    occupySeq(storage, 1);
    expect(() =>
      store.recordAction(0, sampledMessage({ content: "5" }), STATS, NO_TOKENS),
    ).toThrow();
    const reread = new GroupStorage(storage);
    expect(reread.episodes.get(0)).toMatchObject({ state: "generating", turns: 0 });
    expect(reread.generations.get(0)?.state).toBe("sent");
    expect(seqs(storage)).toEqual([0, 1]);
  });
});

it("a refused reply leaves the episode stepping, with no step recorded", async () => {
  await withOpenedEpisode((store, storage) => {
    store.recordAction(0, sampledMessage({ content: "5" }), STATS, NO_TOKENS);
    occupySeq(storage, 2);
    const reply: ChatMessage = { role: "user", content: "Higher." };
    expect(() =>
      store.recordStep(0, { messages: [reply], metadata: {}, done: false }, "5"),
    ).toThrow();
    const reread = new GroupStorage(storage);
    expect(reread.episodes.get(0)).toMatchObject({ state: "stepping", turns: 1 });
    expect(reread.transcripts.stepsByEpisode().get(0)).toBeUndefined();
    expect(seqs(storage)).toEqual([0, 1, 2]);
  });
});

it("a reply of several messages is written whole or not at all", async () => {
  await withOpenedEpisode((store, storage) => {
    store.recordAction(0, sampledMessage({ content: "5" }), STATS, NO_TOKENS);
    occupySeq(storage, 3); // the second of the two replies
    const replies: ChatMessage[] = [
      { role: "tool", content: "higher", tool_call_id: "c1" },
      { role: "user", content: "Again." },
    ];
    expect(() =>
      store.recordStep(0, { messages: replies, metadata: {}, done: false }, "5"),
    ).toThrow();
    const reread = new GroupStorage(storage);
    expect(reread.episodes.get(0)).toMatchObject({ state: "stepping", turns: 1 });
    expect(seqs(storage)).toEqual([0, 1, 3]);
  });
});

it("the group's messages, read once for scoring and landing, are read again after a write", async () => {
  await withOpenedEpisode((store) => {
    const contents = () =>
      (store.transcripts.messagesByEpisode().get(0) ?? []).map((m) => m.message.content);
    expect(contents()).toEqual(["Guess."]);
    expect(store.transcripts.messagesByEpisode()).toBe(store.transcripts.messagesByEpisode());
    store.recordAction(0, sampledMessage({ content: "5" }), STATS, NO_TOKENS);
    expect(contents()).toEqual(["Guess.", "5"]);
  });
});
