// Native tool calling through the whole pipeline, in workerd against the simulator: the tools
// reach the host with every generation, the host's tool_calls come back and are answered by
// tool messages in order, malformed arguments are answered as data, an environment that leaves
// a call unanswered gets "not executed" in its place, and the seed's refusals are 400s.
import { describe, expect, it } from "vitest";
import { END } from "../../src/rollout/outcomes";
import { detokenize } from "../../src/sim/chat-template";
import {
  api,
  getEpisode,
  type Json,
  postGroup,
  SUPPORT_EXAMPLE,
  startGroup,
  waitForGroup,
} from "./helpers";
import { answersOf, d1, lease } from "./token-helpers";

const EXAMPLE = { ...SUPPORT_EXAMPLE, id: "native-1" };

/** Every action's calls, each followed by its tool messages in the calls' order. */
function expectEveryCallAnswered(messages: Json[]) {
  messages.forEach((m, i) => {
    if (!m.tool_calls) return;
    const ids = m.tool_calls.map((c: Json) => c.id);
    expect(new Set(ids).size).toBe(ids.length);
    const answers = messages.slice(i + 1, i + 1 + ids.length);
    expect(answers.map((a) => [a.role, a.tool_call_id])).toEqual(
      ids.map((id: string) => ["tool", id]),
    );
  });
}

async function transcripts(group: Json): Promise<Json[][]> {
  return Promise.all(
    group.episodes.map(async (e: Json) => (await getEpisode(e.episode_id)).messages),
  );
}

describe("native tool calling", () => {
  it("lands tool-agent-native with every call answered by its tool message, in order", async () => {
    const model = "sim+record";
    const sampling = { temperature: 1.5, seed: 5 };
    const id = await startGroup({
      env: "tool-agent-native",
      example: EXAMPLE,
      group_size: 8,
      run_id: "native",
      sampling: { model, ...sampling },
    });
    const group = await waitForGroup(id);
    expect(group.status).toBe("landed");
    const all = await transcripts(group);
    for (const messages of all) expectEveryCallAnswered(messages);
    const actions = all.flat().filter((m) => m.sampled);
    const calls = actions.flatMap((m) => m.tool_calls ?? []);
    expect(calls.length).toBeGreaterThan(0);
    // Parallel calls, answered in order: verify first, then the list it unlocks.
    const parallel = actions.filter((m) => (m.tool_calls?.length ?? 0) > 1);
    expect(parallel.length).toBeGreaterThan(0);
    // Malformed arguments reach the environment as data, and its answer says what is wrong.
    const tools = all.flat().filter((m) => m.role === "tool");
    expect(tools.some((m) => /not valid JSON/.test(m.content))).toBe(true);
    // The tools reached the host with every generation: its template rendered them.
    const answers = (await answersOf(group, model, sampling)).flat();
    expect(answers.length).toBe(actions.length);
    for (const answer of answers) {
      const prompt = detokenize(answer.prompt_token_ids);
      for (const name of [
        "verify_identity",
        "list_orders",
        "get_order",
        "refund_order",
        "cancel_order",
      ])
        expect(prompt).toContain(`"name": "${name}"`);
    }
    // The episodes' tools are recorded by hash, the definitions once with the group.
    const rows = await d1("SELECT tools_hash FROM episodes WHERE group_id = ?", id);
    const hashes = new Set(rows.map((r) => r.tools_hash));
    expect(hashes.size).toBe(1);
    const [row] = await d1("SELECT tools FROM groups WHERE id = ?", id);
    const definitions = JSON.parse(row.tools)[[...hashes][0] as string];
    expect(definitions.map((t: Json) => t.function.name)).toContain("refund_order");
    // Trainers get the calls and their answers in the batch format, and in SFT rows.
    const [leased] = (await lease("native", { include: ["messages", "tokens", "sft"] })).groups;
    expect(Object.keys(leased.tools)).toEqual([...hashes]);
    for (const episode of leased.episodes) expect(episode.tools_hash).toBe([...hashes][0]);
    const leasedMessages = leased.episodes.flatMap((e: Json) => e.messages);
    expect(leasedMessages.some((m: Json) => m.tool_calls?.length > 0)).toBe(true);
    expect(leasedMessages.some((m: Json) => typeof m.tool_call_id === "string")).toBe(true);
    const targets = leased.episodes.flatMap((e: Json) => e.sft?.target_messages ?? []);
    expect(targets.some((m: Json) => m.tool_calls?.length > 0)).toBe(true);
    expect(targets.some((m: Json) => m.role === "tool" && m.tool_call_id)).toBe(true);
    // The transcript viewer shows each call beside the result that answered it.
    const episode = group.episodes.find((_e: Json, i: number) =>
      all[i]?.some((m: Json) => m.tool_calls?.length > 0),
    );
    const page = await (await api(`/episodes/${episode.episode_id}`)).text();
    expect(page).toContain('data-testid="tool-call"');
    const answered = (all[group.episodes.indexOf(episode)] ?? []).find(
      (m: Json) => m.role === "tool",
    );
    expect(page).toContain(`answers call ${answered.tool_call_id}`);
  });

  it("answers a call the environment left unanswered with 'not executed'", async () => {
    const id = await startGroup({
      env: "silent-tools",
      example: EXAMPLE,
      group_size: 4,
      run_id: "native-silent",
      sampling: { model: "sim", temperature: 1.5, seed: 9 },
    });
    const group = await waitForGroup(id);
    const all = await transcripts(group);
    for (const messages of all) expectEveryCallAnswered(messages);
    const tools = all.flat().filter((m) => m.role === "tool");
    expect(tools.some((m) => /^not executed: the environment did not answer/.test(m.content))).toBe(
      true,
    );
    // The environment's own user message comes after the tool messages, as hosts require.
    for (const messages of all)
      messages.forEach((m: Json, i: number) => {
        if (m.role === "user" && i > 0 && messages[i - 1].tool_calls)
          throw new Error("a user message between a call and its answer");
      });
  });

  it("ends an episode env_error when the environment answers a call that was never made", async () => {
    const id = await startGroup({
      env: "silent-tools",
      example: { ...EXAMPLE, metadata: { ...EXAMPLE.metadata, stray: true } },
      group_size: 1,
      run_id: "native-stray",
      sampling: { model: "sim", temperature: 0 },
    });
    const group = await waitForGroup(id);
    expect(group.failures).toEqual([
      expect.objectContaining({
        reason: END.env_error,
        detail: expect.stringMatching(
          /answers "call_that_never_was", which is no call of the action/,
        ),
      }),
    ]);
  });

  it("takes a remote environment's tools from its /start answer, and keeps the same rules", async () => {
    const id = await startGroup({
      env: "tool-agent-native-remote",
      example: EXAMPLE,
      group_size: 2,
      run_id: "native-remote",
      sampling: { model: "sim", temperature: 0 },
    });
    const group = await waitForGroup(id);
    expect(group.status).toBe("landed");
    const all = await transcripts(group);
    for (const messages of all) {
      expectEveryCallAnswered(messages);
      expect(messages.some((m: Json) => m.tool_calls?.length > 0)).toBe(true);
    }
    expect(group.episodes.map((e: Json) => e.score)).toEqual([1, 1]);
    const refused = await postGroup({
      env: "tool-agent-native-remote",
      example: EXAMPLE,
      group_size: 2,
      credit_assignment: "per_turn",
      sampling: { model: "sim" },
    });
    expect(refused.status).toBe(400);
    expect((await refused.json<Json>()).error.message).toMatch(/per_turn credit is rejected/);
  });

  it("refuses per_turn credit, opd and token-in for a native tool-calling environment", async () => {
    for (const [change, rule] of [
      [
        { credit_assignment: "per_turn" },
        /^credit_assignment: per_turn credit is rejected for native tool-calling environments/,
      ],
      [
        { algorithm: "opd", teacher: { model: "sim+teacher" } },
        /^algorithm: native tool-calling environments are GRPO-only/,
      ],
      [
        { generation: "tokens" },
        /^generation: the host parses tool calls only on the chat endpoint/,
      ],
    ] as const) {
      const response = await postGroup({
        env: "tool-agent-native",
        example: EXAMPLE,
        group_size: 2,
        run_id: "native-refused",
        sampling: { model: "sim" },
        ...change,
      });
      expect(response.status).toBe(400);
      expect((await response.json<Json>()).error.message).toMatch(rule);
    }
    expect(await d1("SELECT id FROM groups WHERE run_id = 'native-refused'")).toEqual([]);
  });
});
