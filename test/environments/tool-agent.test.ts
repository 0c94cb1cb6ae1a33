import { describe, expect, it } from "vitest";
import { ToolAgent } from "../../src/environments/tool-agent";
import { runEpisode, type TaskExample } from "../../src/sdk";

const env = new ToolAgent();
const example: TaskExample = {
  id: "t",
  input: "Hi, Ana here (ana@example.com, ZIP 94107). My headphones arrived broken, refund please.",
  metadata: {
    customer: { name: "Ana", email: "ana@example.com", zip: "94107" },
    orders: [
      { id: "A1", item: "headphones", status: "delivered", total: 70 },
      { id: "A2", item: "kettle", status: "delivered", total: 20 },
      { id: "A3", item: "lamp", status: "processing", total: 30 },
    ],
    goal: { tool: "refund_order", order_id: "A1" },
    max_calls: 4,
  },
};

const call = (name: string, args: object = {}) =>
  `<tool_call>${JSON.stringify({ name, arguments: args })}</tool_call>`;
const verify = call("verify_identity", { email: "ana@example.com", zip: "94107" });
const refund = (id: string) => call("refund_order", { order_id: id, reason: "broken" });

async function play(...actions: string[]) {
  const episode = await runEpisode(env, example, {
    policy: (_m, turn) => actions[turn.index] ?? "Bye.",
  });
  return { episode, reward: await env.scoreEpisode(example, episode) };
}

describe("tool-agent", () => {
  it("resolves the request after authenticating: full score, success", async () => {
    const { episode, reward } = await play(verify, call("list_orders"), refund("A1"), "Refunded!");
    expect(reward).toMatchObject({ score: 1, threshold: 0.8 });
    expect(episode.responseText).toBe("Refunded!");
    expect(episode.messages.at(-1)?.content).toBe("Refunded!");
  });

  it("refuses privileged calls before authentication and grades the ordering", async () => {
    const { episode, reward } = await play(refund("A1"), verify, refund("A1"), "Done.");
    expect(episode.messages[3]?.content).toMatch(/verify the customer's identity first/);
    expect(reward.score).toBeCloseTo(0.8, 9); // resolved, within budget, no collateral; not auth-first
    expect(reward.metadata?.behaviours).toMatchObject({
      resolved: true,
      authenticatedFirst: false,
    });
  });

  it("rebuilds the store from the transcript: an order refunded earlier stays refunded", async () => {
    const { episode } = await play(verify, refund("A1"), refund("A1"), "ok");
    expect(episode.messages[7]?.content).toMatch(/order A1 is refunded; only delivered orders/);
  });

  it("penalises side effects on the wrong order and calls beyond the budget", async () => {
    const { reward } = await play(
      verify,
      refund("A2"),
      call("list_orders"),
      call("get_order", { order_id: "A1" }),
      refund("A1"),
      "Done.",
    );
    expect(reward.metadata?.behaviours).toEqual({
      resolved: true,
      authenticatedFirst: true,
      withinCallBudget: false,
      noCollateral: false,
    });
    expect(reward.score).toBeCloseTo(0.8, 9);
  });

  it("answers malformed and unknown tool calls with what went wrong, and goes on", async () => {
    const { episode, reward } = await play(
      "<tool_call>{oops</tool_call>",
      call("delete_everything"),
      call("verify_identity", { email: "ana@example.com" }),
      "Sorry, I cannot help.",
    );
    const replies = episode.turns.filter((t) => t.role === "user").map((t) => t.content);
    expect(replies[0]).toMatch(/not valid JSON/);
    expect(replies[1]).toMatch(/unknown tool "delete_everything"/);
    expect(replies[2]).toMatch(/zip/);
    expect(reward.score).toBeCloseTo(0.2, 9); // within budget, no collateral
  });

  it("fails identity checks with the wrong ZIP", async () => {
    const { episode } = await play(
      call("verify_identity", { email: "ana@example.com", zip: "1" }),
      "x",
    );
    expect(episode.messages[3]?.content).toMatch(/identity could not be verified/);
  });

  it("gives the same reply to the same transcript, however often it is replayed", async () => {
    const { episode } = await play(verify, refund("A1"), "Done.");
    const upToSecondAction = episode.messages.slice(0, 5);
    const a = env.stepEpisode(example, upToSecondAction, refund("A1"));
    const b = env.stepEpisode(example, structuredClone(upToSecondAction), refund("A1"));
    expect(a).toEqual(b);
  });
});
