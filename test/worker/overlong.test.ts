// The over-long policy (issue 32): an episode whose last action hit max_completion_tokens is
// trained on as any other (`keep`), lands with advantage 0 and an all-zero sample mask (`mask`),
// or stays in SQL and out of leases (`filter`); under the last two it takes no part in its
// group's baseline. The simulator's `overlong:P` runs some completions on past their budget,
// drawn after the play: the three policies' groups play the same seeded episodes, and differ
// only by what the policy makes of them.
import { beforeAll, describe, expect, it } from "vitest";
import type {
  EpisodePage,
  EpisodeView,
  GroupView,
  StartGroupInput,
} from "../../src/client/edgeroll-client";
import type { Overlong } from "../../src/domain/group-options";
import {
  d1,
  episodesOf,
  errorOf,
  getJson,
  guessExample,
  postGroup,
  startGroup,
  waitForGroup,
} from "./helpers";
import { lease, type TokenGroup } from "./token-helpers";

/** At temperature 2 the simulator slips by one 30 % of the time: scores vary in a group. */
const sampling = { model: "sim+overlong:0.4", temperature: 2, seed: 7, max_completion_tokens: 24 };

const arithmetic = (run: string, overlong: Overlong, extra: Partial<StartGroupInput> = {}) => ({
  env: "exact-answer",
  example: { id: `${run}-x`, input: "What is 144 / 12?", output: "12" },
  group_size: 6,
  run_id: run,
  sampling,
  overlong,
  ...extra,
});

const mean = (values: readonly number[]) => values.reduce((a, b) => a + b, 0) / values.length;
const scoreOf = (e: EpisodeView) => e.score ?? Number.NaN;

/** What a policy's group landed as: its view, its episodes, and the lease of its run. */
interface Landed {
  group: GroupView;
  episodes: EpisodeView[];
  leased: TokenGroup[];
}

async function land(body: StartGroupInput): Promise<Landed> {
  const group = await waitForGroup(await startGroup(body));
  return {
    group,
    episodes: await episodesOf(group),
    leased: (await lease(body.run_id ?? "")).groups,
  };
}

describe("the over-long policy", () => {
  const landed = {} as Record<Overlong, Landed>;
  let overlong: EpisodeView[];
  let counted: EpisodeView[];

  beforeAll(async () => {
    for (const policy of ["keep", "mask", "filter"] as const)
      landed[policy] = await land(arithmetic(`overlong-${policy}`, policy));
    overlong = landed.mask.episodes.filter((e) => e.overlong);
    counted = landed.mask.episodes.filter((e) => !e.overlong);
  });

  it("records on every episode whether its last action hit its token cap, whatever the policy", async () => {
    for (const { episodes } of Object.values(landed)) {
      expect(episodes.map((e) => e.overlong)).toEqual(landed.keep.episodes.map((e) => e.overlong));
      for (const e of episodes)
        expect(e.overlong).toBe(e.messages.findLast((m) => m.sampled)?.finish_reason === "length");
    }
    // The premise: some ran long, and the rest still have something to compare.
    expect(overlong.length).toBeGreaterThan(0);
    expect(new Set(counted.map(scoreOf)).size).toBeGreaterThan(1);
    const rows = await d1<{ run_id: string; overlong: string }>(
      "SELECT run_id, overlong FROM groups WHERE run_id LIKE 'overlong-%' ORDER BY run_id",
    );
    expect(rows).toEqual([
      { run_id: "overlong-filter", overlong: "filter" },
      { run_id: "overlong-keep", overlong: "keep" },
      { run_id: "overlong-mask", overlong: "mask" },
    ]);
    for (const [policy, { group, leased }] of Object.entries(landed)) {
      expect(group.overlong).toBe(policy);
      expect(leased[0]?.overlong).toBe(policy);
    }
  });

  it("keep: an over-long episode is one of the group, in its baseline and its batch", () => {
    const { episodes, leased } = landed.keep;
    const all = mean(episodes.map(scoreOf));
    for (const e of episodes) expect(e.advantage).toBeCloseTo(scoreOf(e) - all, 12);
    expect(leased[0]?.episodes).toHaveLength(6);
  });

  it("mask: an over-long episode lands with its score, advantage 0, and no part in the baseline", () => {
    const baseline = mean(counted.map(scoreOf));
    for (const e of overlong) {
      expect(e.score).not.toBeNull();
      expect(e.advantage).toBe(0);
    }
    for (const e of counted) expect(e.advantage).toBeCloseTo(scoreOf(e) - baseline, 12);
  });

  it("mask: its samples are served with a mask of zeros, its sampled turns with advantage 0", () => {
    const episodes = landed.mask.leased[0]?.episodes ?? [];
    expect(episodes).toHaveLength(6);
    for (const e of episodes) {
      expect(e.token_mode).toBe("exact");
      expect(e.samples.length).toBeGreaterThan(0);
      for (const sample of e.samples) {
        expect(sample.mask.includes(1)).toBe(!e.overlong);
        if (e.overlong) expect(new Set(sample.advantages)).toEqual(new Set([0]));
      }
      for (const m of e.messages.filter((m) => m.sampled))
        if (e.overlong) expect(m).toMatchObject({ advantage: 0 });
    }
  });

  it("mask: GET /v1/episodes (what an export reads) masks the same samples", async () => {
    const page = await getJson<EpisodePage>("/v1/episodes?run_id=overlong-mask&include=tokens");
    const masks = page.episodes.map((e) =>
      ("samples" in e ? (e.samples ?? []) : []).map((s) => (s.mask as number[]).includes(1)),
    );
    expect(masks).toEqual(page.episodes.map((e) => [!e.overlong]));
  });

  it("filter: an over-long episode stays in SQL with its score, out of the baseline and every lease", async () => {
    const { group, episodes, leased } = landed.filter;
    const baseline = mean(counted.map(scoreOf));
    for (const e of episodes) {
      if (e.overlong) expect(e).toMatchObject({ score: scoreOf(e), advantage: null });
      else expect(e.advantage).toBeCloseTo(scoreOf(e) - baseline, 12);
    }
    const rows = await d1<{ overlong: number; score: number | null }>(
      "SELECT overlong, score FROM episodes WHERE group_id = ? AND overlong = 1",
      group.group_id,
    );
    expect(rows).toHaveLength(overlong.length);
    expect(rows.every((r) => r.score !== null)).toBe(true);
    const served = (leased[0]?.episodes ?? []).map((e) => e.index);
    expect(served).toEqual(counted.map((e) => e.index));
    // The log shows everything; an export asks for what a lease would serve.
    const listed = async (query: string) =>
      (await getJson<EpisodePage>(`/v1/episodes?run_id=overlong-filter${query}`)).episodes.length;
    expect(await listed("")).toBe(6);
    expect(await listed("&filtered=false")).toBe(counted.length);
    expect(await listed("&filtered=true")).toBe(overlong.length);
  });

  it("mask: a group whose every episode ran long is uniform, served only when asked", async () => {
    const body = arithmetic("overlong-all", "mask", {
      sampling: { ...sampling, model: "sim+overlong" },
    });
    const group = await waitForGroup(await startGroup(body));
    expect(group.uniform).toBe(true);
    expect(group.episodes.map((e) => e.advantage)).toEqual(Array(6).fill(0));
    expect((await lease("overlong-all", { skip_uniform_groups: true })).groups).toEqual([]);
  });

  it("mask under per-turn credit: every turn of an over-long episode gets 0, the rest a baseline without it", async () => {
    const { episodes } = await land({
      env: "guess-number",
      example: guessExample("overlong-turns-x", 71),
      group_size: 6,
      run_id: "overlong-turns",
      sampling,
      credit_assignment: "per_turn",
      overlong: "mask",
    });
    const long = episodes.filter((e) => e.overlong);
    const rest = episodes.filter((e) => !e.overlong);
    expect(long.length).toBeGreaterThan(0);
    for (const e of long) expect(e.per_turn_advantages).toEqual(Array(e.turns).fill(0));
    for (const e of rest)
      (e.per_turn_rewards ?? []).forEach((r, t) => {
        const atTurn = rest.flatMap((o) => (o.turns > t ? [o.per_turn_rewards?.[t] ?? 0] : []));
        expect(e.per_turn_advantages?.[t]).toBeCloseTo(r - mean(atTurn), 12);
      });
  });

  it("refuses a policy it does not know, naming the field", async () => {
    const response = await postGroup(arithmetic("overlong-bad", "drop" as Overlong));
    expect(response.status).toBe(400);
    expect((await errorOf(response)).message).toContain("overlong");
  });
});
