// On-policy distillation (`algorithm: "opd"`) through the whole pipeline, in workerd: the
// student samples from the simulator, the simulator's perfect player scores the student's own
// tokens as the teacher, and the teacher's logprobs land beside the student's — exactly what
// the teacher host returns for those tokens. A failing teacher fails episodes, not the group;
// a teacher with another tokenizer is refused before anything is stored.
import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { beforeAll, describe, expect, it } from "vitest";
import type { GroupView, StartGroupInput } from "../../src/client/edgeroll-client";
import { configFrom } from "../../src/config";
import { teachEpisodes } from "../../src/distill/teacher-scoring";
import { END } from "../../src/rollout/outcomes";
import { GroupStorage } from "../../src/rollout/storage/group-storage";
import {
  api,
  count,
  d1,
  errorOf,
  guessExample,
  itemAt,
  postGroup,
  simulatorRequests,
  startGroup,
  waitForGroup,
} from "./helpers";
import { lease, type TokenEpisode } from "./token-helpers";

const TEACHER = "sim+teacher";

/** vLLM's `prompt_logprobs` answer, as far as these tests read it: each id's logprob by position. */
interface PromptLogprobs {
  choices: { prompt_logprobs: (Record<string, { logprob: number }> | null)[] }[];
}

/** What the teacher host says of a sequence: vLLM's prompt logprobs, asked for directly. */
async function teacherSays(ids: readonly number[], model = TEACHER): Promise<(number | null)[]> {
  const response = await fetch(`${env.INFERENCE_BASE_URL}/completions`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ model, prompt: ids, max_tokens: 1, prompt_logprobs: 0 }),
  });
  const body = await response.json<PromptLogprobs>();
  return itemAt(body.choices).prompt_logprobs.map((entry, i) =>
    entry === null ? null : (entry[String(ids[i])]?.logprob ?? null),
  );
}

const opdGroup = (run: string, extra: Partial<StartGroupInput> = {}): StartGroupInput => ({
  env: "guess-number",
  example: guessExample(run, 37),
  group_size: 1,
  run_id: run,
  algorithm: "opd",
  teacher: { model: TEACHER },
  sampling: { model: "sim", temperature: 1, seed: 19 },
  ...extra,
});

describe("on-policy distillation", () => {
  // In chat mode the student thinks aloud and the template drops it: several samples an episode.
  for (const [generation, model] of [
    ["tokens", "sim"],
    ["chat", "sim+think"],
  ] as const) {
    describe(`in ${generation} mode`, () => {
      const run = `opd-${generation}`;
      let group: GroupView;
      let episode: TokenEpisode;
      /** What the teacher host says of each of the episode's samples. */
      let teacher: (number | null)[][];

      beforeAll(async () => {
        const id = await startGroup(
          opdGroup(run, { generation, sampling: { model, temperature: 1, seed: 19 } }),
        );
        group = await waitForGroup(id);
        episode = itemAt(itemAt((await lease(run)).groups).episodes);
        teacher = await Promise.all(episode.samples.map((s) => teacherSays(s.token_ids)));
      });

      it("lands the group as distilled, with its teacher", () => {
        expect(group.status).toBe("landed");
        expect(group).toMatchObject({ algorithm: "opd", teacher_model: TEACHER, generation });
        expect(episode.token_mode).toBe("exact");
        expect("teacher_model" in episode && episode.teacher_model).toBe(TEACHER);
        expect(episode.samples.length).toBe(generation === "chat" ? episode.turns : 1);
      });

      it("lands the teacher's logprobs of exactly the student's sampled tokens", () => {
        let sampled = 0;
        for (const [s, sample] of episode.samples.entries()) {
          const expected = itemAt(teacher, s);
          sample.mask.forEach((m, i) => {
            const logprob = sample.teacher_logprobs?.[i];
            if (m === 1) {
              expect(Math.fround(logprob ?? Number.NaN)).toBe(Math.fround(expected[i] ?? 0));
              sampled++;
            } else expect(logprob).toBe(0);
          });
        }
        expect(sampled).toBeGreaterThan(0);
      });

      it("records the reverse KL over the sampled tokens, in D1 and the distillation view", async () => {
        let sum = 0;
        let sampled = 0;
        for (const sample of episode.samples)
          sample.mask.forEach((m, i) => {
            if (m !== 1) return;
            sum +=
              Math.fround(itemAt(sample.logprobs, i)) -
              Math.fround(sample.teacher_logprobs?.[i] ?? 0);
            sampled++;
          });
        const [row] = await d1<{ teacher_model: string; reverse_kl: number }>(
          "SELECT teacher_model, reverse_kl FROM episodes WHERE group_id = ?",
          group.group_id,
        );
        expect(row?.teacher_model).toBe(TEACHER);
        expect(row?.reverse_kl).toBeCloseTo(sum / sampled, 5);
        const [view] = await d1<{ reverse_kl: number }>(
          "SELECT * FROM distillation WHERE run_id = ?",
          run,
        );
        expect(view).toMatchObject({ teacher_model: TEACHER, policy_version: 0, episodes: 1 });
        expect(view?.reverse_kl).toBeCloseTo(row?.reverse_kl ?? Number.NaN, 5);
      });
    });
  }

  it("scores again only the episodes a pass cut short left without teacher logprobs", async () => {
    // A pass interrupted after episode 0's transaction: its logprobs are stored, 1's are not.
    const stub = env.ROLLOUT_GROUP.get(env.ROLLOUT_GROUP.idFromName("opd-resume"));
    const teacher = `${TEACHER}+latency:1`;
    const sequence = (first: number) => {
      const ids = [100264, 882, 198, first, 100265, 198, 100264, 78191, 198];
      return [ids, [40, 1781, 100265]] as const;
    };
    const before = await simulatorRequests(teacher);
    const scored = await runInDurableObject(stub, async (_instance, state) => {
      const storage = new GroupStorage(state.storage);
      storage.db.upgrade();
      const { tokens } = storage;
      for (const idx of [0, 1]) {
        const [prompt, completion] = sequence(1000 + idx);
        tokens.record(
          idx,
          0,
          {
            promptIds: Int32Array.from(prompt),
            completionIds: Int32Array.from(completion),
            logprobs: Float32Array.from([-0.5, -0.5, -0.5]),
            model: "sim",
          },
          { temperature: 1, topP: 1 },
        );
      }
      tokens.recordTeacher(0, new Map([[0, Float32Array.from([-7, -7, -7])]]));
      const failures = await teachEpisodes({
        model: teacher,
        tokens,
        config: configFrom(env),
        candidates: [0, 1],
        underLimit: (_idx, score) => score(),
      });
      expect(failures.size).toBe(0);
      return tokens.episodes(2).map((e) => Array.from(e.turns[0]?.teacherLogprobs ?? []));
    });
    // Episode 0 kept what it had; only episode 1 went to the teacher, once.
    expect(scored[0]).toEqual([-7, -7, -7]);
    expect(await simulatorRequests(teacher)).toBe(before + 1);
    const [prompt, completion] = sequence(1001);
    const expected = await teacherSays([...prompt, ...completion], teacher);
    expect(scored[1]).toEqual(expected.slice(prompt.length).map((v) => Math.fround(v as number)));
  });

  it("the teacher's logprobs favour the perfect player's actions", async () => {
    // At temperature 0 the student plays as the teacher would; hot, it strays.
    const klAt = async (run: string, temperature: number) => {
      const id = await startGroup(
        opdGroup(run, { group_size: 4, sampling: { model: "sim", temperature, seed: 23 } }),
      );
      await waitForGroup(id);
      const [row] = await d1<{ kl: number }>(
        "SELECT AVG(reverse_kl) AS kl FROM episodes WHERE group_id = ?",
        id,
      );
      return row?.kl ?? Number.NaN;
    };
    const cold = await klAt("opd-cold", 0);
    const hot = await klAt("opd-hot", 2);
    expect(hot).toBeGreaterThan(cold + 0.5);
  });

  it("ends episodes teacher_failed when the teacher keeps failing, and lands the group", async () => {
    const run = "opd-teacher-down";
    const id = await startGroup(
      opdGroup(run, { group_size: 2, teacher: { model: `${TEACHER}+fail:503` } }),
    );
    const group = await waitForGroup(id);
    expect(group.status).toBe("failed");
    for (const failure of group.failures) {
      expect(failure.reason).toBe(END.teacher_failed);
      expect(failure.detail).toMatch(/teacher failed after \d+ attempts: .*503/);
    }
    // The group and its transcripts are in D1, with why each episode failed.
    const episodes = await d1<{ end_reason: string; turns: number }>(
      "SELECT end_reason, turns FROM episodes WHERE group_id = ?",
      id,
    );
    expect(episodes).toHaveLength(2);
    for (const e of episodes) {
      expect(e.end_reason).toBe(END.teacher_failed);
      expect(e.turns).toBeGreaterThan(0);
    }
    expect(
      await count("SELECT COUNT(*) AS n FROM messages WHERE group_id = ?", id),
    ).toBeGreaterThan(2);
  });

  it("plots the reverse KL by policy version on the dashboard", async () => {
    const run = "opd-dashboard";
    for (const version of [0, 1]) {
      const id = await startGroup(opdGroup(run, { policy_version: version }));
      await waitForGroup(id);
    }
    const page = await (await api(`/?run=${run}`)).text();
    expect(page).toContain('data-testid="reverse-kl-chart"');
    expect(page).toContain(`${run} · ${TEACHER}`);
    // A run without distillation has no such chart.
    const id = await startGroup({
      ...opdGroup("grpo-only"),
      algorithm: "grpo",
      teacher: undefined,
    });
    await waitForGroup(id);
    expect(await (await api("/?run=grpo-only")).text()).not.toContain("reverse-kl-chart");
  });

  it("refuses a teacher with another tokenizer, saying so, and stores nothing", async () => {
    const run = "opd-foreign";
    const response = await postGroup(
      opdGroup(run, { teacher: { model: `${TEACHER}+foreign-vocab` } }),
    );
    expect(response.status).toBe(400);
    expect(await errorOf(response)).toMatchObject({
      code: "tokenizer_mismatch",
      message: expect.stringMatching(/do not share a tokenizer/),
    });
    expect(await d1("SELECT id FROM groups WHERE run_id = ?", run)).toEqual([]);
  });

  it("answers 503 when the teacher host cannot tokenize, 400 when it refuses the model", async () => {
    for (const [fault, status, code, message] of [
      ["tokenize-fail:503", 503, "tokenizer_check_unavailable", /could not check .* teacher host/],
      ["tokenize-fail:404", 400, "invalid_request", /teacher .* refused .*is the model name right/],
    ] as const) {
      const response = await postGroup(
        opdGroup("opd-teacher-tokenizer", { teacher: { model: `${TEACHER}+${fault}` } }),
      );
      expect(response.status).toBe(status);
      expect(await errorOf(response)).toMatchObject({
        code,
        message: expect.stringMatching(message),
      });
    }
    expect(await d1("SELECT id FROM groups WHERE run_id = 'opd-teacher-tokenizer'")).toEqual([]);
  });

  it("refuses what the seed rules out: per-turn credit, no teacher, a teacher without opd", async () => {
    const cases: [object, RegExp][] = [
      [{ credit_assignment: "per_turn" }, /^credit_assignment: .*per_turn credit does not apply/],
      [{ teacher: undefined }, /^teacher: required with algorithm "opd"/],
      [{ algorithm: "grpo" }, /^teacher: only with algorithm "opd"/],
      [{ tokens: "off" }, /^tokens: .*it needs tokens/],
    ];
    for (const [change, message] of cases) {
      const response = await postGroup(opdGroup("opd-refused", change));
      expect(response.status).toBe(400);
      expect(await errorOf(response)).toMatchObject({
        code: "invalid_request",
        message: expect.stringMatching(message),
      });
    }
    expect(await d1("SELECT id FROM groups WHERE run_id = 'opd-refused'")).toEqual([]);
  });
});
