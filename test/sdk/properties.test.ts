// Property-based tests: whatever text a model emits, parsing never throws and episodes end with
// a valid reward. Runs in workerd and Node.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { GuessNumber } from "../../src/environments/guess-number";
import { ToolAgent } from "../../src/environments/tool-agent";
import {
  parseAction,
  perTurnRewardsProblem,
  RewardResultSchema,
  runEpisode,
  sampledTurns,
} from "../../src/sdk";

const tools = { lookup: z.strictObject({ id: z.string() }), ping: z.strictObject({}) };

/** Text made of protocol fragments, which finds more edge cases than uniform noise. */
const protocolish = fc
  .array(
    fc.oneof(
      fc.constantFrom(
        "<tool_call>",
        "</tool_call>",
        "{",
        "}",
        '"name"',
        ":",
        '"lookup"',
        '"ping"',
        '"arguments"',
        ",",
        '"id"',
        "[",
        "]",
        '"x"',
        "null",
        "<guess>",
        "</guess>",
        "42",
        " ",
      ),
      fc.string({ maxLength: 8 }),
    ),
    { maxLength: 40 },
  )
  .map((parts) => parts.join(""));

describe("the action-protocol parser", () => {
  it("never throws, and returns only known tools with valid arguments", () => {
    fc.assert(
      fc.property(fc.oneof(fc.string({ maxLength: 400 }), protocolish), (text) => {
        const parsed = parseAction(text, tools);
        for (const call of parsed.calls) {
          expect(Object.keys(tools)).toContain(call.name);
          expect(tools[call.name as keyof typeof tools].safeParse(call.arguments).success).toBe(
            true,
          );
        }
        expect(parsed.problems.every((p) => typeof p === "string" && p.length > 0)).toBe(true);
      }),
      { numRuns: 2000 },
    );
  });

  it("never throws on native tool calls with arbitrary names and arguments", () => {
    fc.assert(
      fc.property(
        fc.array(fc.record({ name: fc.string({ minLength: 1 }), args: fc.string() }), {
          maxLength: 4,
        }),
        (calls) => {
          parseAction(
            {
              role: "assistant",
              content: "",
              tool_calls: calls.map((c, i) => ({
                id: String(i),
                type: "function" as const,
                function: { name: c.name, arguments: c.args },
              })),
            },
            tools,
          );
        },
      ),
      { numRuns: 500 },
    );
  });
});

describe("episodes under arbitrary model output", () => {
  const guess = { id: "p", input: "Find it.", metadata: { secret: 37 } };
  const support = {
    id: "s",
    input: "Ana (ana@example.com, ZIP 94107): refund my lamp.",
    metadata: {
      customer: { name: "Ana", email: "ana@example.com", zip: "94107" },
      orders: [{ id: "A1", item: "lamp", status: "delivered", total: 9 }],
      goal: { tool: "refund_order", order_id: "A1" },
    },
  };
  const actions = fc.array(fc.oneof(fc.string({ maxLength: 120 }), protocolish), {
    minLength: 1,
    maxLength: 8,
  });

  for (const [name, env, example] of [
    ["guess-number", new GuessNumber(), guess],
    ["tool-agent", new ToolAgent(), support],
  ] as const) {
    it(`${name}: every episode ends with a valid reward and per-turn vector`, async () => {
      await fc.assert(
        fc.asyncProperty(actions, async (played) => {
          const episode = await runEpisode(env, example, {
            policy: (_m, turn) => played[turn.index] ?? "",
          });
          const reward = RewardResultSchema.parse(await env.scoreEpisode(example, episode));
          expect(Number.isFinite(reward.score)).toBe(true);
          const perTurn = reward.metadata.per_turn_rewards;
          if (perTurn !== undefined)
            expect(perTurnRewardsProblem(perTurn, sampledTurns(episode).length)).toBeNull();
        }),
        { numRuns: 300 },
      );
    });
  }
});
