/**
 * tool-agent: a customer-support agent over a small store (orders, refunds, cancellations).
 * Tools are called as text blocks; the store's state is rebuilt each turn by replaying the
 * transcript, and the score grades behaviours, not a script.
 */
import { z } from "zod";
import {
  type ActionReducer,
  type ChatMessage,
  describeToolProblems,
  type EnvironmentEpisode,
  EnvironmentMultiTurn,
  type EnvironmentStepResultInput,
  exampleMetadata,
  goldTranscript,
  type ParsedToolCall,
  parseAction,
  type RewardResultInput,
  replayHistory,
  replayStep,
  type TaskExample,
} from "../sdk";

const OrderSchema = z.object({
  id: z.string(),
  item: z.string(),
  status: z.enum(["processing", "shipped", "delivered", "refunded", "cancelled"]),
  total: z.number(),
});
type Order = z.infer<typeof OrderSchema>;

const MetadataSchema = z
  .object({
    customer: z.object({ name: z.string(), email: z.string(), zip: z.string() }),
    orders: z.array(OrderSchema).min(1),
    goal: z.object({ tool: z.enum(["refund_order", "cancel_order"]), order_id: z.string() }),
    max_calls: z.number().int().positive().default(6),
  })
  .refine((task) => task.orders.some((order) => order.id === task.goal.order_id), {
    message: "must be the id of one of metadata.orders",
    path: ["goal", "order_id"],
  });
export type SupportTask = z.infer<typeof MetadataSchema>;

export const TOOLS = {
  verify_identity: z.strictObject({ email: z.string(), zip: z.string() }),
  list_orders: z.strictObject({}),
  get_order: z.strictObject({ order_id: z.string() }),
  refund_order: z.strictObject({ order_id: z.string(), reason: z.string() }),
  cancel_order: z.strictObject({ order_id: z.string() }),
};
const PRIVILEGED = new Set(["list_orders", "get_order", "refund_order", "cancel_order"]);
const DEFAULT_TURNS = 8;

export interface CallRecord {
  turn: number;
  name: string;
  arguments: Record<string, unknown>;
  ok: boolean;
  /** Whether identity was verified when the call was made. */
  verified: boolean;
  result: unknown;
}

export interface StoreState {
  verified: boolean;
  orders: Order[];
  calls: CallRecord[];
  /**
   * What the latest action produced: its tool results and rejected calls, and for native calls
   * each one's answer by id, in order.
   */
  latest: {
    results: CallRecord[];
    problems: string[];
    answers: { id: string; content: unknown }[];
  };
}

export function taskOf(example: TaskExample): SupportTask {
  return exampleMetadata(MetadataSchema, example);
}

/** Runs one tool against the store, purely: the new orders and the call's outcome. */
function runTool(task: SupportTask, state: StoreState, call: ParsedToolCall) {
  const fail = (error: string) => ({
    verified: state.verified,
    orders: state.orders,
    ok: false,
    result: { error },
  });
  if (call.name === "verify_identity") {
    const { email, zip } = TOOLS.verify_identity.parse(call.arguments);
    const ok =
      email.trim().toLowerCase() === task.customer.email.toLowerCase() &&
      zip.trim() === task.customer.zip;
    if (!ok) return fail("identity could not be verified");
    return {
      verified: true,
      orders: state.orders,
      ok,
      result: { verified: true, customer: task.customer.name },
    };
  }
  if (!state.verified) return fail("verify the customer's identity first");
  if (call.name === "list_orders") return { ...state, ok: true, result: state.orders };
  const orderId = String(call.arguments.order_id);
  const order = state.orders.find((o) => o.id === orderId);
  if (order === undefined) return fail(`no order ${orderId} for this customer`);
  if (call.name === "get_order") return { ...state, ok: true, result: order };
  const [from, to] =
    call.name === "refund_order" ? ["delivered", "refunded"] : ["processing", "cancelled"];
  if (order.status !== from)
    return fail(`order ${orderId} is ${order.status}; only ${from} orders can be ${to}`);
  const orders = state.orders.map((o) =>
    o.id === orderId ? { ...o, status: to as Order["status"] } : o,
  );
  return { verified: true, orders, ok: true, result: { order_id: orderId, status: to } };
}

/**
 * One call an action makes, parsed: runnable, or what is wrong with it. A native call carries
 * the host's id, so its answer can name it.
 */
export interface ActionCall {
  id?: string;
  call: ParsedToolCall | null;
  problem: string | null;
}

/** The text protocol's calls: every `<tool_call>` block (and native calls, if a host sent any). */
function textCalls(action: ChatMessage): ActionCall[] {
  const parsed = parseAction(action, TOOLS);
  return [
    ...parsed.calls.map((call) => ({ call, problem: null })),
    ...parsed.problems.map((problem) => ({ call: null, problem })),
  ];
}

/** The store, replayed over whichever calls `callsOf` reads from each action, in order. */
export function storeOf(callsOf: (action: ChatMessage) => ActionCall[]): ActionReducer<StoreState> {
  return {
    initial: (example) => ({
      verified: false,
      orders: taskOf(example).orders,
      calls: [],
      latest: { results: [], problems: [], answers: [] },
    }),
    apply(state, action, { example, turnIndex }) {
      const task = taskOf(example);
      let next: StoreState = { ...state, latest: { results: [], problems: [], answers: [] } };
      for (const { id, call, problem } of callsOf(action)) {
        if (call === null) {
          next.latest.problems.push(problem ?? "the call could not be read");
          if (id !== undefined) next.latest.answers.push({ id, content: { error: problem } });
          continue;
        }
        const outcome = runTool(task, next, call);
        const record: CallRecord = {
          turn: turnIndex,
          ...call,
          ok: outcome.ok,
          verified: next.verified,
          result: outcome.result,
        };
        next = {
          verified: outcome.verified,
          orders: outcome.orders,
          calls: [...next.calls, record],
          latest: {
            results: [...next.latest.results, record],
            problems: next.latest.problems,
            answers:
              id === undefined
                ? next.latest.answers
                : [...next.latest.answers, { id, content: outcome.result }],
          },
        };
      }
      return next;
    },
  };
}

const store = storeOf(textCalls);

/** The behaviours graded, each with its weight; success needs resolution and authentication. */
export const WEIGHTS = {
  resolved: 0.6,
  authenticatedFirst: 0.2,
  withinCallBudget: 0.1,
  noCollateral: 0.1,
};

/** Grades a finished conversation from its tool-call log. Kept pure so it is unit-testable. */
export function gradeSupport(task: SupportTask, calls: readonly CallRecord[]) {
  const privileged = calls.filter((c) => PRIVILEGED.has(c.name));
  const mutations = calls.filter(
    (c) => c.ok && (c.name === "refund_order" || c.name === "cancel_order"),
  );
  const behaviours = {
    resolved: mutations.some(
      (c) => c.name === task.goal.tool && c.arguments.order_id === task.goal.order_id,
    ),
    authenticatedFirst: privileged.length > 0 && privileged.every((c) => c.verified),
    withinCallBudget: calls.length <= task.max_calls,
    noCollateral: mutations.every((c) => c.arguments.order_id === task.goal.order_id),
  };
  const score = Object.entries(behaviours).reduce(
    (sum, [name, met]) => sum + (met ? WEIGHTS[name as keyof typeof WEIGHTS] : 0),
    0,
  );
  return { score: Math.round(score * 1000) / 1000, behaviours };
}

/**
 * What a perfect agent does, whatever the wire its calls take: authenticate, look the orders
 * up, resolve, then tell the customer.
 */
export function goldPlan(task: SupportTask): {
  calls: [keyof typeof TOOLS, Record<string, unknown>][];
  reply: string;
} {
  const { customer, goal } = task;
  const args =
    goal.tool === "refund_order"
      ? { order_id: goal.order_id, reason: "customer request" }
      : { order_id: goal.order_id };
  return {
    calls: [
      ["verify_identity", { email: customer.email, zip: customer.zip }],
      ["list_orders", {}],
      [goal.tool, args],
    ],
    reply: `All done, ${customer.name}: order ${goal.order_id} is ${goal.tool === "refund_order" ? "refunded" : "cancelled"}.`,
  };
}

function toolCall(name: keyof typeof TOOLS, args: Record<string, unknown>): string {
  return `<tool_call>${JSON.stringify({ name, arguments: args })}</tool_call>`;
}

const ExampleSchema = z.object({ metadata: MetadataSchema });

export class ToolAgent extends EnvironmentMultiTurn {
  override readonly version: string = "1";
  override readonly exampleSchema = ExampleSchema;

  maxEpisodeTurns(): number {
    return DEFAULT_TURNS;
  }

  startEpisode(example: TaskExample): ChatMessage[] {
    const tools = [
      "verify_identity {email, zip}: confirm who the customer is; required before anything else",
      "list_orders {}: the customer's orders",
      "get_order {order_id}: one order",
      "refund_order {order_id, reason}: refund a delivered order",
      "cancel_order {order_id}: cancel an order still processing",
    ];
    const system =
      "You are a customer-support agent for an online store. Call tools with " +
      '<tool_call>{"name": "<tool>", "arguments": {...}}</tool_call>; results come back in ' +
      "<tool_result> blocks. When the request is handled, reply to the customer in plain text " +
      `without tool calls.\nTools:\n${tools.map((t) => `- ${t}`).join("\n")}`;
    return [
      { role: "system", content: system },
      { role: "user", content: example.input },
    ];
  }

  stepEpisode(
    example: TaskExample,
    messages: readonly ChatMessage[],
    assistantResponse: string,
  ): EnvironmentStepResultInput {
    const { after } = replayStep(example, messages, assistantResponse, store);
    const { results, problems } = after.latest;
    if (results.length === 0 && problems.length === 0) {
      return { done: true, finalResponseText: assistantResponse, metadata: { calls: 0 } };
    }
    const parts = results.map((r) => JSON.stringify({ name: r.name, result: r.result }));
    const content = [
      ...(parts.length > 0 ? [`<tool_result>[${parts.join(", ")}]</tool_result>`] : []),
      ...(problems.length > 0 ? [describeToolProblems(problems)] : []),
    ].join("\n");
    return {
      done: false,
      messages: [{ role: "user", content }],
      metadata: { calls: results.length },
    };
  }

  /** How the store is rebuilt from a transcript: from the text protocol's calls. */
  protected replayed(): ActionReducer<StoreState> {
    return store;
  }

  scoreEpisode(example: TaskExample, episode: EnvironmentEpisode): RewardResultInput {
    const task = taskOf(example);
    const { calls } = replayHistory(example, episode.messages, this.replayed());
    const { score, behaviours } = gradeSupport(task, calls);
    return {
      score,
      threshold: WEIGHTS.resolved + WEIGHTS.authenticatedFirst,
      metadata: { behaviours, calls: calls.length },
    };
  }

  /** The gold conversation: authenticate, look the orders up, resolve, then tell the customer. */
  override sftCompletion(example: TaskExample): Promise<ChatMessage[]> {
    const { calls, reply } = goldPlan(taskOf(example));
    const actions = [...calls.map(([name, args]) => toolCall(name, args)), reply];
    return goldTranscript(this, example, (_messages, turn) => actions[turn.index] ?? "");
  }
}
