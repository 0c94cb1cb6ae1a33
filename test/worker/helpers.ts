/** Drives the Worker under test through its public HTTP API, as a client would. */
import { env, exports } from "cloudflare:workers";

export const BASE = "http://edgeroll.test";

export const TOKENS = {
  all: "test-token-all-roles",
  producer: "test-token-producer",
  trainer: "test-token-trainer",
  otherTrainer: "test-token-trainer-2",
  reader: "test-token-reader",
};

/** Calls the Worker with the every-role token unless `init` brings its own authorization. */
export async function api(path: string, init: RequestInit = {}): Promise<Response> {
  const headers = new Headers(init.headers);
  if (!headers.has("authorization")) headers.set("authorization", `Bearer ${TOKENS.all}`);
  return exports.default.fetch(`${BASE}${path}`, { ...init, headers });
}

export async function postGroup(
  body: unknown,
  headers: Record<string, string> = {},
): Promise<Response> {
  return api("/v1/groups", {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body: JSON.stringify(body),
  });
}

/** POST /v1/runs/:id/policy, as the trainer unless another token is given. */
export function postPolicy(run: string, body: object, token = TOKENS.trainer): Promise<Response> {
  return api(`/v1/runs/${run}/policy`, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: `Bearer ${token}` },
    body: JSON.stringify(body),
  });
}

// biome-ignore lint/suspicious/noExplicitAny: test helpers read JSON loosely and assert on it.
export type Json = any;

export async function startGroup(
  body: unknown,
  headers: Record<string, string> = {},
): Promise<string> {
  const response = await postGroup(body, headers);
  const json: Json = await response.json();
  if (response.status !== 202)
    throw new Error(`POST /v1/groups: ${response.status} ${JSON.stringify(json)}`);
  return json.group_id;
}

export async function getGroup(id: string): Promise<Json> {
  return (await api(`/v1/groups/${id}`)).json();
}

/** Polls the group until it has landed (or failed), up to `timeoutMs`. */
export async function waitForGroup(id: string, timeoutMs = 30_000): Promise<Json> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const group = await getGroup(id);
    if (group.status === "landed" || group.status === "failed") return group;
    if (Date.now() > until)
      throw new Error(`group ${id} still ${group.status}: ${JSON.stringify(group)}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

export async function getEpisode(id: string): Promise<Json> {
  return (await api(`/v1/episodes/${id}`)).json();
}

/** The simulator's counters (src/sim/host-ledger.ts). */
export async function simulatorStats(): Promise<Json> {
  return (await fetch(`${env.INFERENCE_BASE_URL.replace(/\/v1$/, "")}/sim/stats`)).json();
}

/** Generations the simulator received, by model string. */
export async function simulatorRequests(model: string): Promise<number> {
  return (await simulatorStats()).byModel[model]?.requests ?? 0;
}

export const guessExample = (id: string, secret: number) => ({
  id,
  input: "I'm thinking of a whole number between 1 and 100. Find it.",
  metadata: { secret },
});

export function groupStub(id: string) {
  return env.ROLLOUT_GROUP.get(env.ROLLOUT_GROUP.idFromName(id));
}

/** The first example of the tool-agent datasets (text and native): a refund for Ana Ruiz. */
export const SUPPORT_EXAMPLE = {
  id: "ta-001",
  input:
    "Hello, Ana Ruiz here (ana.ruiz@example.com, ZIP 94107). My wireless headphones arrived broken. I'd like a refund, please.",
  metadata: {
    customer: { name: "Ana Ruiz", email: "ana.ruiz@example.com", zip: "94107" },
    orders: [
      { id: "A1010", item: "running shoes", status: "shipped", total: 21.39 },
      { id: "A1011", item: "yoga mat", status: "processing", total: 100.64 },
      { id: "A1012", item: "wireless headphones", status: "delivered", total: 71.53 },
    ],
    goal: { tool: "refund_order", order_id: "A1012" },
    max_calls: 6,
  },
};
