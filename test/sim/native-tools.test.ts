// Native tool calling: a request offering `tools` is answered as vLLM with the hermes parser
// answers it, and the tool-agent player plays the store from `role: "tool"` replies.
import { describe, expect, it } from "vitest";
import { detokenize, IM_END, tokenize } from "../../src/sim/chat-template";
import {
  type ChatChunk,
  type ChatCompletion,
  chunksOf,
  itemAt,
  post,
  type TextCompletion,
  type Tokenized,
  type ToolCallDelta,
  useSimulator,
  type WireToolCall,
} from "./sim-client";

const sim = useSimulator();

const tool = (name: string, properties: Record<string, object>) => ({
  type: "function",
  function: {
    name,
    description: `the store's ${name}`,
    parameters: { type: "object", properties, required: Object.keys(properties) },
  },
});
const TOOLS = [
  tool("verify_identity", { email: { type: "string" }, zip: { type: "string" } }),
  tool("list_orders", {}),
  tool("get_order", { order_id: { type: "string" } }),
  tool("refund_order", { order_id: { type: "string" }, reason: { type: "string" } }),
  tool("cancel_order", { order_id: { type: "string" } }),
];

const OPENING = [
  {
    role: "system",
    content:
      "You are a customer-support agent for an online store. Use the tools provided to handle the customer's request, then reply to them in plain text.",
  },
  {
    role: "user",
    content:
      "Hello, Ana Ruiz here (ana@example.com, ZIP 94107). My kettle arrived broken. I'd like a refund, please.",
  },
];

const ORDERS = [
  { id: "A1", item: "kettle", status: "delivered", total: 30 },
  { id: "A2", item: "lamp", status: "delivered", total: 20 },
];

const chat = async (body: object): Promise<ChatCompletion> =>
  (
    await post<ChatCompletion>(`${sim.url}/chat/completions`, {
      model: "sim",
      messages: OPENING,
      tools: TOOLS,
      tool_choice: "auto",
      return_token_ids: true,
      ...body,
    })
  ).json;

/** The first choice's calls (none for a text answer). */
const callsOf = (answer: ChatCompletion) => itemAt(answer.choices).message.tool_calls ?? [];

/** A streamed answer put back together as a client does: content, calls by index, tokens. */
async function chatStreamed(body: object) {
  const { text } = await post(`${sim.url}/chat/completions`, {
    model: "sim",
    messages: OPENING,
    tools: TOOLS,
    tool_choice: "auto",
    return_token_ids: true,
    stream: true,
    ...body,
  });
  const chunks = chunksOf<ChatChunk>(text);
  const calls: WireToolCall[] = [];
  const deltas: ToolCallDelta[] = [];
  for (const chunk of chunks)
    for (const part of chunk.choices[0]?.delta?.tool_calls ?? []) {
      deltas.push(part);
      const call = calls[part.index] ?? { id: "", type: "", function: { name: "", arguments: "" } };
      calls[part.index] = call;
      if (part.id) call.id = part.id;
      if (part.type) call.type = part.type;
      call.function.name += part.function?.name ?? "";
      call.function.arguments += part.function?.arguments ?? "";
    }
  return {
    content: chunks.map((c) => c.choices[0]?.delta?.content ?? "").join(""),
    calls,
    deltas,
    finish: chunks.map((c) => c.choices[0]?.finish_reason).find(Boolean),
    tokenIds: chunks.flatMap((c) => c.choices[0]?.token_ids ?? []),
  };
}

/** The store's replies, one `tool` message per call, in order, as the native environment sends. */
function replies(calls: readonly WireToolCall[], store: { verified: boolean }): object[] {
  return calls.map((call) => {
    let args: { email?: string; zip?: string; order_id?: string };
    try {
      args = JSON.parse(call.function.arguments);
    } catch {
      return { role: "tool", tool_call_id: call.id, content: "arguments are not valid JSON" };
    }
    const name = call.function.name;
    let result: unknown = { error: "verify the customer's identity first" };
    if (name === "verify_identity") {
      store.verified = args.email === "ana@example.com" && args.zip === "94107";
      result = store.verified ? { verified: true, customer: "Ana Ruiz" } : { error: "no match" };
    } else if (store.verified && name === "list_orders") result = ORDERS;
    else if (store.verified && name === "refund_order")
      result = { order_id: args.order_id, status: "refunded" };
    return { role: "tool", tool_call_id: call.id, content: JSON.stringify(result) };
  });
}

interface Turn {
  /** The calls' names, or the text reply. */
  action: string[] | string;
  calls: WireToolCall[];
  /** Whether this turn's prompt starts with the previous turn's prompt and completion ids. */
  extendsPrevious: boolean | null;
}

/** Plays an episode against the simulator, seeding each turn from `seed`. */
async function playEpisode(temperature: number, seed: number): Promise<Turn[]> {
  const messages: object[] = [...OPENING];
  const store = { verified: false };
  const turns: Turn[] = [];
  let before: number[] | null = null;
  for (let turn = 0; turn < 8; turn++) {
    const body = await chat({ messages, temperature, seed: seed + turn });
    const choice = itemAt(body.choices);
    const prompt = body.prompt_token_ids;
    const extendsPrevious = before === null ? null : before.every((id, i) => prompt[i] === id);
    before = [...prompt, ...choice.token_ids];
    const calls = choice.message.tool_calls ?? [];
    const action =
      calls.length > 0 ? calls.map((c) => c.function.name) : (choice.message.content ?? "");
    turns.push({ action, calls, extendsPrevious });
    if (calls.length === 0) break;
    messages.push({ role: "assistant", content: choice.message.content ?? "", tool_calls: calls });
    messages.push(...replies(calls, store));
  }
  return turns;
}

describe("a chat request offering tools", () => {
  it("gets the player's call as OpenAI tool_calls, finish_reason tool_calls", async () => {
    const choice = itemAt((await chat({ temperature: 0 })).choices);
    expect(choice.finish_reason).toBe("tool_calls");
    expect(choice.message.content).toBeNull();
    expect(choice.message.tool_calls).toEqual([
      {
        id: expect.stringMatching(/^call_[0-9a-z]+$/),
        type: "function",
        function: {
          name: "verify_identity",
          // The hermes parser writes arguments back with Python's separators.
          arguments: '{"email": "ana@example.com", "zip": "94107"}',
        },
      },
    ]);
    // The tokens are what the model generated: the call as Qwen writes it, then the end of turn.
    const generated =
      '<tool_call>\n{"name": "verify_identity", "arguments": {"email": "ana@example.com", "zip": "94107"}}\n</tool_call>';
    expect(choice.token_ids).toEqual([...tokenize(generated), IM_END]);
  });

  it("renders the tools into the system prompt as Qwen's template does, as /tokenize does", async () => {
    const body = await chat({ temperature: 0 });
    const prompt = detokenize(body.prompt_token_ids);
    expect(prompt).toMatch(/^<\|im_start\|>system\nYou are a customer-support agent/);
    expect(prompt).toContain("# Tools\n\nYou may call one or more functions");
    expect(prompt).toContain(
      '\n{"type": "function", "function": {"name": "verify_identity", "description": "the store\'s verify_identity", "parameters": {"type": "object"',
    );
    const tokenized = await post<Tokenized>(`${sim.root}/tokenize`, {
      model: "sim",
      messages: OPENING,
      tools: TOOLS,
    });
    expect(tokenized.json.tokens).toEqual(body.prompt_token_ids);
  });

  it("streams the calls as vLLM does: id and name first, arguments in pieces, the same calls", async () => {
    // Seed 9 at temperature 1 makes two calls in one action.
    const whole = itemAt((await chat({ temperature: 1, seed: 9 })).choices);
    const wholeCalls = whole.message.tool_calls ?? [];
    const streamed = await chatStreamed({ temperature: 1, seed: 9 });
    expect(wholeCalls).toHaveLength(2);
    expect(streamed.calls).toEqual(wholeCalls);
    expect(streamed).toMatchObject({ content: "", finish: "tool_calls" });
    expect(streamed.tokenIds).toEqual(whole.token_ids);
    for (const index of [0, 1]) {
      const [first, ...rest] = streamed.deltas.filter((d) => d.index === index);
      const call = itemAt(wholeCalls, index);
      expect(first).toMatchObject({ id: call.id, type: "function" });
      expect(first?.function).toEqual({ name: call.function.name });
      expect(rest.length).toBeGreaterThan(1);
      expect(rest.every((d) => d.id === undefined && d.function?.name === undefined)).toBe(true);
    }
  });

  it("cuts and stalls a stream of tool calls as it does one of text", async () => {
    const streamed = (model: string, signal?: AbortSignal) =>
      fetch(`${sim.url}/chat/completions`, {
        method: "POST",
        body: JSON.stringify({ model, messages: OPENING, tools: TOOLS, stream: true }),
        ...(signal ? { signal } : {}),
      }).then((r) => r.text());
    await expect(streamed("sim+cut")).rejects.toThrow();
    await expect(streamed("sim+stall", AbortSignal.timeout(300))).rejects.toThrow(/abort|timeout/i);
  });

  it("is reproducible with a seed", async () => {
    const first = await chat({ temperature: 1, seed: 9 });
    const again = await chat({ temperature: 1, seed: 9 });
    expect(itemAt(again.choices).message).toEqual(itemAt(first.choices).message);
    expect(itemAt(again.choices).token_ids).toEqual(itemAt(first.choices).token_ids);
  });
});

describe("the tool-agent player, calling natively", () => {
  it("plays perfectly at temperature 0: verify, list, refund the named order, then a reply", async () => {
    for (const seed of [1, 2, 3]) {
      const turns = await playEpisode(0, seed);
      expect(turns.map((t) => t.action)).toEqual([
        ["verify_identity"],
        ["list_orders"],
        ["refund_order"],
        "Done: your request has been handled.",
      ]);
      expect(JSON.parse(turns[2]?.calls[0]?.function.arguments ?? "")).toEqual({
        order_id: "A1",
        reason: "damaged on arrival",
      });
      // Each prompt extends the last one's prompt and completion: the template writes the calls
      // back exactly as the model generated them, and the replies after them.
      expect(turns.slice(1).map((t) => t.extendsPrevious)).toEqual([true, true, true]);
    }
  });

  it("reads results from tool messages by tool_call_id, however they are ordered", async () => {
    const call = (id: string, name: string) => ({
      id,
      type: "function",
      function: { name, arguments: "{}" },
    });
    const messages = [
      ...OPENING,
      {
        role: "assistant",
        content: "",
        tool_calls: [call("c1", "verify_identity"), call("c2", "list_orders")],
      },
      { role: "tool", tool_call_id: "c2", content: JSON.stringify(ORDERS) },
      { role: "tool", tool_call_id: "c1", content: '{"verified": true, "customer": "Ana Ruiz"}' },
    ];
    const calls = callsOf(await chat({ messages, temperature: 0 }));
    expect(itemAt(calls).function).toEqual({
      name: "refund_order",
      arguments: '{"order_id": "A1", "reason": "damaged on arrival"}',
    });
  });

  it("sometimes verifies and lists in one action, and the episode still resolves", async () => {
    const turns = await playEpisode(1, 9);
    expect(turns[0]?.action).toEqual(["verify_identity", "list_orders"]);
    expect(turns[1]?.extendsPrevious).toBe(true);
    expect(turns.at(-1)?.action).toBe("Done: your request has been handled.");
  });

  it("sometimes breaks off mid-call: a native call whose arguments are not JSON", async () => {
    const choice = itemAt((await chat({ temperature: 1, seed: 0 })).choices);
    expect(choice.finish_reason).toBe("tool_calls");
    const call = itemAt(choice.message.tool_calls ?? []);
    expect(call.function).toEqual({ name: "verify_identity", arguments: '{"email": "ana@' });
    expect(() => JSON.parse(call.function.arguments)).toThrow();
    // The tokens are the call as far as the model wrote it.
    expect(detokenize(choice.token_ids)).toBe(
      '<tool_call>\n{"name": "verify_identity", "arguments": {"email": "ana@<|im_end|>',
    );
    // vLLM makes such arguments `{}` when the call comes back: the prompt no longer extends it.
    const turns = await playEpisode(1, 0);
    expect(turns[0]?.calls[0]?.function.arguments).toBe('{"email": "ana@');
    expect(turns[1]?.extendsPrevious).toBe(false);
  });

  it("makes both mistakes only when it samples hot, and each in some actions", async () => {
    const firstActions = async (temperature: number) =>
      Promise.all(
        Array.from({ length: 80 }, async (_, seed) => {
          const calls = callsOf(await chat({ temperature, seed }));
          return {
            parallel: calls.length > 1,
            malformed: calls.some((c) => {
              try {
                JSON.parse(c.function.arguments);
                return false;
              } catch {
                return true;
              }
            }),
          };
        }),
      );
    const cold = await firstActions(0);
    expect(cold.some((a) => a.parallel || a.malformed)).toBe(false);
    const hot = await firstActions(1);
    expect(hot.filter((a) => a.parallel).length).toBeGreaterThan(3);
    expect(hot.filter((a) => a.malformed).length).toBeGreaterThan(1);
  });

  it("plays a native prompt sent as ids to /v1/completions the same way", async () => {
    const messages = [
      ...OPENING,
      {
        role: "assistant",
        content: "",
        tool_calls: [
          {
            id: "c1",
            type: "function",
            function: {
              name: "verify_identity",
              arguments: '{"email": "ana@example.com", "zip": "94107"}',
            },
          },
        ],
      },
      { role: "tool", tool_call_id: "c1", content: '{"verified": true, "customer": "Ana Ruiz"}' },
    ];
    const viaChat = itemAt((await chat({ messages, temperature: 0 })).choices);
    const prompt = (await chat({ messages, temperature: 0 })).prompt_token_ids;
    expect(detokenize(prompt)).toContain(
      '<|im_start|>user\n<tool_response>\n{"verified": true, "customer": "Ana Ruiz"}\n</tool_response><|im_end|>',
    );
    const viaIds = itemAt(
      (
        await post<TextCompletion>(`${sim.url}/completions`, {
          model: "sim",
          prompt,
          temperature: 0,
          max_tokens: null,
          return_token_ids: true,
        })
      ).json.choices,
    );
    expect(viaIds.token_ids).toEqual(viaChat.token_ids);
  });
});

describe("without tools", () => {
  it("plays the text protocol as before: text <tool_call> blocks, no tool_calls", async () => {
    const body = (
      await post<ChatCompletion>(`${sim.url}/chat/completions`, {
        model: "sim",
        temperature: 0,
        messages: [
          { role: "system", content: "Call tools with <tool_call>{...}</tool_call>." },
          OPENING[1],
        ],
      })
    ).json;
    expect(body.choices[0]).toMatchObject({
      finish_reason: "stop",
      message: {
        content:
          '<tool_call>{"name":"verify_identity","arguments":{"email":"ana@example.com","zip":"94107"}}</tool_call>',
      },
    });
    expect(itemAt(body.choices).message.tool_calls).toBeUndefined();
  });
});
