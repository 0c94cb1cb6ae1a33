// Native tool calling through the whole pipeline, in workerd against the simulator: the tools
// reach the host with every generation, the host's tool_calls come back and are answered by
// tool messages in order, malformed arguments are answered as data, an environment that leaves
// a call unanswered gets "not executed" in its place, and the seed's refusals are 400s.
import { beforeAll, describe, expect, it } from "vitest";
import type { EpisodeView, GroupView } from "../../src/client/edgeroll-client";
import { END } from "../../src/rollout/outcomes";
import { detokenize } from "../../src/sim/chat-template";
import {
  api,
  d1,
  episodesOf,
  errorOf,
  itemAt,
  postGroup,
  SUPPORT_EXAMPLE,
  startGroup,
  waitForGroup,
} from "./helpers";
import { answersOf, type HostAnswer, lease, type TokenGroup } from "./token-helpers";

const EXAMPLE = { ...SUPPORT_EXAMPLE, id: "native-1" };

type Message = EpisodeView["messages"][number];

/** An action's tool calls (none for a message that made none). */
const callsOf = (m: { tool_calls?: readonly { id: string; function: { name: string } }[] }) =>
  m.tool_calls ?? [];

/** Every action's calls, each followed by its tool messages in the calls' order. */
function expectEveryCallAnswered(messages: readonly Message[]) {
  messages.forEach((m, i) => {
    const ids = callsOf(m).map((c) => c.id);
    if (ids.length === 0) return;
    expect(new Set(ids).size).toBe(ids.length);
    const answers = messages.slice(i + 1, i + 1 + ids.length);
    expect(answers.map((a) => [a.role, a.tool_call_id])).toEqual(ids.map((id) => ["tool", id]));
  });
}

async function transcripts(group: GroupView): Promise<Message[][]> {
  return (await episodesOf(group)).map((e) => e.messages);
}

describe("a tool-agent-native group", () => {
  const model = "sim+record";
  const sampling = { temperature: 1.5, seed: 5 };
  let group: GroupView;
  let all: Message[][];
  let answers: HostAnswer[];
  let leased: TokenGroup;
  const actions = () => all.flat().filter((m) => m.sampled);

  beforeAll(async () => {
    const id = await startGroup({
      env: "tool-agent-native",
      example: EXAMPLE,
      group_size: 8,
      run_id: "native",
      sampling: { model, ...sampling },
    });
    group = await waitForGroup(id);
    all = await transcripts(group);
    answers = (await answersOf(group, model, sampling)).flat();
    leased = itemAt((await lease("native", { include: ["messages", "tokens", "sft"] })).groups);
  });

  it("lands with every call answered by its tool message, in order", () => {
    expect(group.status).toBe("landed");
    for (const messages of all) expectEveryCallAnswered(messages);
    expect(actions().flatMap(callsOf).length).toBeGreaterThan(0);
  });

  it("answers parallel calls in order: verify first, then the list it unlocks", () => {
    expect(actions().filter((m) => callsOf(m).length > 1).length).toBeGreaterThan(0);
  });

  it("answers malformed arguments as data, saying what is wrong", () => {
    const tools = all.flat().filter((m) => m.role === "tool");
    expect(tools.some((m) => /not valid JSON/.test(m.content))).toBe(true);
  });

  it("sends the tools with every generation: the host's template rendered them", () => {
    expect(answers.length).toBe(actions().length);
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
  });

  it("records the episodes' tools by hash, the definitions once with the group", async () => {
    const rows = await d1<{ tools_hash: string }>(
      "SELECT tools_hash FROM episodes WHERE group_id = ?",
      group.group_id,
    );
    const hashes = new Set(rows.map((r) => r.tools_hash));
    expect(hashes.size).toBe(1);
    const [row] = await d1<{ tools: string }>(
      "SELECT tools FROM groups WHERE id = ?",
      group.group_id,
    );
    const definitions: { function: { name: string } }[] = JSON.parse(row?.tools ?? "{}")[
      itemAt([...hashes])
    ];
    expect(definitions.map((t) => t.function.name)).toContain("refund_order");
    expect(Object.keys(leased.tools ?? {})).toEqual([...hashes]);
    for (const episode of leased.episodes) expect(episode.tools_hash).toBe(itemAt([...hashes]));
  });

  it("leases the calls and their answers in the batch format, and in SFT rows", () => {
    const leasedMessages = leased.episodes.flatMap((e) => e.messages);
    expect(leasedMessages.some((m) => callsOf(m).length > 0)).toBe(true);
    expect(leasedMessages.some((m) => typeof m.tool_call_id === "string")).toBe(true);
    const targets = leased.episodes.flatMap((e) =>
      "sft" in e ? (e.sft?.target_messages ?? []) : [],
    );
    expect(targets.some((m) => callsOf(m).length > 0)).toBe(true);
    expect(targets.some((m) => m.role === "tool" && m.tool_call_id)).toBe(true);
  });

  it("shows each call beside the result that answered it in the transcript viewer", async () => {
    const index = all.findIndex((messages) => messages.some((m) => callsOf(m).length > 0));
    const page = await (await api(`/episodes/${itemAt(group.episodes, index).episode_id}`)).text();
    expect(page).toContain('data-testid="tool-call"');
    const answered = itemAt(all, index).find((m) => m.role === "tool");
    expect(page).toContain(`answers call ${answered?.tool_call_id}`);
  });
});

describe("native tool calling", () => {
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
      messages.forEach((m, i) => {
        if (m.role === "user" && i > 0 && callsOf(itemAt(messages, i - 1)).length > 0)
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
      expect(messages.some((m) => callsOf(m).length > 0)).toBe(true);
    }
    expect(group.episodes.map((e) => e.score)).toEqual([1, 1]);
    const refused = await postGroup({
      env: "tool-agent-native-remote",
      example: EXAMPLE,
      group_size: 2,
      credit_assignment: "per_turn",
      sampling: { model: "sim" },
    });
    expect(refused.status).toBe(400);
    expect((await errorOf(refused)).message).toMatch(/per_turn credit is rejected/);
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
      expect((await errorOf(response)).message).toMatch(rule);
    }
    expect(await d1("SELECT id FROM groups WHERE run_id = 'native-refused'")).toEqual([]);
  });
});
