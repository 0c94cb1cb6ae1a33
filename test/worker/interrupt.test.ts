// A weight sync that does not wait for generations (issue 30): a pause with `interrupt: true`
// aborts the run's generations in flight at once, and no other run's; each is sent again once
// the run resumes, and the run's groups land as if nothing had happened.
import { evictDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import type { StartGroupInput } from "../../src/client/edgeroll-client";
import {
  d1,
  errorOf,
  groupStub,
  guessExample,
  postPolicy,
  runInFlight,
  setPolicy,
  simulatorRequests,
  startGroup,
  until,
  waitForGroup,
} from "./helpers";

/** About 1.2 s a generation: long enough to be caught in flight, inside the tests' 2-s deadline. */
const slow = (tag: string) => `sim+tag:${tag}+trickle:100`;

const group = (run: string, model: string): StartGroupInput => ({
  env: "guess-number",
  example: guessExample(`${run}-g`, 37),
  group_size: 2,
  run_id: run,
  sampling: { model, temperature: 0 },
});

describe("a pause with interrupt", () => {
  it("aborts every generation of its run in flight, and none of another run's", async () => {
    const [a, b] = [`int-a-${crypto.randomUUID()}`, `int-b-${crypto.randomUUID()}`];
    const [modelA, modelB] = [slow(a), slow(b)];
    await setPolicy(a, { version: 0 });
    await setPolicy(b, { version: 0 });
    const groupA = await startGroup(group(a, modelA));
    const groupB = await startGroup(group(b, modelB));
    // Both groups' first generations are streaming.
    await until(
      async () => (await runInFlight(a)) === 2 && (await runInFlight(b)) === 2,
      "4 in flight",
    );
    // A few of run a's tokens have streamed (one every 100 ms).
    await new Promise((r) => setTimeout(r, 500));
    const sentA = await simulatorRequests(modelA);

    const interrupted = await postPolicy(a, { version: 1, paused: true, interrupt: true });
    expect(interrupted.status).toBe(200);
    expect(await interrupted.json()).toMatchObject({
      paused: true,
      interrupt: true,
      groups_running: 1,
      groups_notified: 1,
      in_flight_generations: 0,
    });
    expect(await runInFlight(a)).toBe(0);
    // The other run's generations go on.
    expect(await runInFlight(b)).toBe(2);

    // Held while paused: nothing of run a is sent again until it resumes.
    await new Promise((r) => setTimeout(r, 500));
    expect(await simulatorRequests(modelA)).toBe(sentA);
    await setPolicy(a, { version: 1, paused: false });

    const [landedA, landedB] = await Promise.all([waitForGroup(groupA), waitForGroup(groupB)]);
    for (const landed of [landedA, landedB]) {
      expect(landed.status).toBe("landed");
      expect(landed.episodes.map((e) => e.state)).toEqual(["completed", "completed"]);
    }
    const turns = (g: typeof landedA) => g.episodes.reduce((n, e) => n + e.turns, 0);
    // Each of run a's two aborted generations was sent once more; run b sent one per turn.
    expect(await simulatorRequests(modelA)).toBe(turns(landedA) + 2);
    expect(await simulatorRequests(modelB)).toBe(turns(landedB));
    // The resent turns went out under the version the run resumed at.
    expect(landedA.policy_version_max).toBe(1);
    // What the aborted generations had produced is counted, in D1, per episode.
    const discarded = async (groupId: string) =>
      (
        await d1<{ discarded_tokens: number }>(
          "SELECT discarded_tokens FROM episodes WHERE group_id = ? ORDER BY idx",
          groupId,
        )
      ).map((r) => r.discarded_tokens);
    for (const tokens of await discarded(groupA)) {
      expect(tokens).toBeGreaterThan(0);
      expect(tokens).toBeLessThan(12);
    }
    expect(await discarded(groupB)).toEqual([0, 0]);
  });

  it("changes nothing for a group whose object is evicted between the interrupt and the resume", async () => {
    const run = `int-evict-${crypto.randomUUID()}`;
    const model = slow(run);
    await setPolicy(run, { version: 0 });
    const id = await startGroup(group(run, model));
    await until(async () => (await runInFlight(run)) === 2, "2 in flight");
    await setPolicy(run, { version: 1, paused: true, interrupt: true });
    const sent = await simulatorRequests(model);
    await evictDurableObject(groupStub(id));
    // The new instance starts paused (its copy of the policy) and sends nothing.
    await new Promise((r) => setTimeout(r, 300));
    expect(await simulatorRequests(model)).toBe(sent);
    await setPolicy(run, { version: 1, paused: false });
    const landed = await waitForGroup(id);
    expect(landed.status).toBe("landed");
    expect(landed.episodes.map((e) => [e.state, e.redispatches])).toEqual([
      ["completed", 0],
      ["completed", 0],
    ]);
    const turns = landed.episodes.reduce((n, e) => n + e.turns, 0);
    expect(await simulatorRequests(model)).toBe(turns + 2);
  });

  it("records each sync's stall: a hold's lasts until its generations end, an interrupt's until its aborts are sent", async () => {
    const [held, cut] = [`int-hold-${crypto.randomUUID()}`, `int-cut-${crypto.randomUUID()}`];
    for (const run of [held, cut]) {
      await setPolicy(run, { version: 0 });
      await startGroup(group(run, slow(run)));
    }
    await until(
      async () => (await runInFlight(held)) === 2 && (await runInFlight(cut)) === 2,
      "4 in flight",
    );
    await new Promise((r) => setTimeout(r, 300));
    const hold = await setPolicy(held, { version: 1, paused: true });
    const interrupt = await setPolicy(cut, { version: 1, paused: true, interrupt: true });
    // The hold answers with its generations still streaming; the interrupt with none.
    expect([hold.in_flight_generations, interrupt.in_flight_generations]).toEqual([2, 0]);
    const sync = async (run: string) =>
      (
        await d1<{ interrupt: number; in_flight_at_answer: number; idle_at: string | null }>(
          "SELECT interrupt, in_flight_at_answer, idle_at FROM policy_syncs WHERE run_id = ?",
          run,
        )
      )[0];
    expect(await sync(held)).toMatchObject({ interrupt: 0, in_flight_at_answer: 2, idle_at: null });
    expect(await sync(cut)).toMatchObject({ interrupt: 1, in_flight_at_answer: 0 });
    expect((await sync(cut))?.idle_at).not.toBeNull();
    // The trainer waits for idle (what waitIdle does): the hold's stall ends when its
    // generations do, seen by the GET that counts 0.
    await until(async () => (await runInFlight(held)) === 0, "the held run idle");
    expect((await sync(held))?.idle_at).not.toBeNull();
    const [heldStall, cutStall] = await Promise.all(
      [held, cut].map(async (run) => {
        const [row] = await d1<{ syncs: number; interrupted: number; stall_ms_max: number }>(
          "SELECT syncs, interrupted, stall_ms_max FROM run_syncs WHERE run_id = ?",
          run,
        );
        return row;
      }),
    );
    expect(heldStall).toMatchObject({ syncs: 1, interrupted: 0 });
    expect(cutStall).toMatchObject({ syncs: 1, interrupted: 1 });
    expect(cutStall?.stall_ms_max).toBeLessThan(heldStall?.stall_ms_max ?? 0);
    for (const run of [held, cut]) await setPolicy(run, { version: 1, paused: false });
  });

  it("is refused without a pause, naming the field", async () => {
    const response = await postPolicy(`int-refused-${crypto.randomUUID()}`, {
      version: 1,
      interrupt: true,
    });
    expect(response.status).toBe(400);
    expect((await errorOf(response)).message).toMatch(/interrupt: only with paused: true/);
  });
});
