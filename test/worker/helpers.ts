/**
 * Drives the Worker under test through its public HTTP API, as a client would, and reads its
 * answers as the types the client exports (src/client/edgeroll-client.ts).
 */
import { env, exports } from "cloudflare:workers";
import type {
  Batch,
  EpisodeView,
  GroupView,
  LeaseInput,
  RunPolicySet,
  StartedGroup,
  StartGroupInput,
} from "../../src/client/edgeroll-client";
import type { TaskExample } from "../../src/sdk";
import type { SimulatorStats } from "../../src/sim/host-ledger";

export const BASE = "http://edgeroll.test";

export const TOKENS = {
  all: "test-token-all-roles",
  producer: "test-token-producer",
  trainer: "test-token-trainer",
  otherTrainer: "test-token-trainer-2",
  reader: "test-token-reader",
  /** A producer with `max_inflight_groups: 1`. */
  quota: "test-token-quota",
};

/** The API's one error body (src/views/error-body.ts); `details` as the refusal gives them. */
export interface ErrorBody<Details = unknown> {
  error: { code: string; message: string; details?: Details };
}

/** The details of a refusal that names the fields it refused. */
export type FieldProblems = { path: string; message: string }[];

/** An answer's status and its JSON body, read as the type its route answers with. */
export interface Answer<T> {
  status: number;
  body: T;
}

/** Calls the Worker with the every-role token unless `init` brings its own authorization. */
export async function api(path: string, init: RequestInit = {}): Promise<Response> {
  const headers = new Headers(init.headers);
  if (!headers.has("authorization")) headers.set("authorization", `Bearer ${TOKENS.all}`);
  return exports.default.fetch(`${BASE}${path}`, { ...init, headers });
}

/** GETs `path` and reads its JSON as `T`. */
export async function getJson<T>(path: string, init: RequestInit = {}): Promise<T> {
  return (await api(path, init)).json<T>();
}

/** POSTs `body` as JSON; the answer's status and body, read as `T`. */
export async function post<T>(
  path: string,
  body: unknown = {},
  headers: Record<string, string> = {},
): Promise<Answer<T>> {
  const response = await api(path, {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body: JSON.stringify(body),
  });
  return { status: response.status, body: await response.json<T>() };
}

/** The error a refused call answered with. */
export async function errorOf<Details = unknown>(
  response: Response,
): Promise<ErrorBody<Details>["error"]> {
  return (await response.json<ErrorBody<Details>>()).error;
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

/** Sets the run's policy, as the trainer; throws unless it was taken. */
export async function setPolicy(run: string, body: object): Promise<RunPolicySet> {
  const response = await postPolicy(run, body);
  if (response.status !== 200)
    throw new Error(`policy: ${response.status} ${JSON.stringify(await response.json())}`);
  return response.json<RunPolicySet>();
}

/** Starts a group; its id. Throws unless the start was accepted. */
export async function startGroup(
  body: StartGroupInput,
  headers: Record<string, string> = {},
): Promise<string> {
  const response = await postGroup(body, headers);
  if (response.status !== 202)
    throw new Error(`POST /v1/groups: ${response.status} ${JSON.stringify(await response.json())}`);
  return (await response.json<StartedGroup>()).group_id;
}

export async function getGroup(id: string): Promise<GroupView> {
  return getJson<GroupView>(`/v1/groups/${id}`);
}

/** The last fault a live group met and will retry (landed groups have none). */
export function lastError(group: GroupView): string | null {
  return "last_error" in group ? group.last_error : null;
}

/** Polls `ready` every 50 ms until it holds, for up to `timeoutMs`. */
export async function until(
  ready: () => Promise<boolean>,
  what: string,
  timeoutMs = 20_000,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await ready())) {
    if (Date.now() > deadline) throw new Error(`never ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** The run's generations in flight, as `GET /v1/runs/:id` counts them. */
export const runInFlight = async (run: string) =>
  (await getJson<{ in_flight_generations: number | null }>(`/v1/runs/${run}`))
    .in_flight_generations;

/** Polls the group until `ready` holds of it; the group as it then is. */
export async function untilGroup(
  id: string,
  ready: (group: GroupView) => boolean,
  what: string,
): Promise<GroupView> {
  let group = await getGroup(id);
  await until(async () => {
    group = await getGroup(id);
    return ready(group);
  }, `group ${id}: ${what}`);
  return group;
}

/** Polls the group until it has landed (or failed), up to `timeoutMs`. */
export async function waitForGroup(id: string, timeoutMs = 30_000): Promise<GroupView> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const group = await getGroup(id);
    if (group.status === "landed" || group.status === "failed") return group;
    if (Date.now() > deadline)
      throw new Error(`group ${id} still ${group.status}: ${JSON.stringify(group)}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

export async function getEpisode(id: string): Promise<EpisodeView> {
  return getJson<EpisodeView>(`/v1/episodes/${id}`);
}

/** Every episode of a landed group, with its transcript. */
export function episodesOf(group: GroupView): Promise<EpisodeView[]> {
  return Promise.all(group.episodes.map((e) => getEpisode(e.episode_id)));
}

/** The item at `index` of a list the test expects to hold it; throws if it is not there. */
export function itemAt<T>(items: readonly T[], index = 0): T {
  const item = items[index];
  if (item === undefined) throw new Error(`no item ${index}: the list has ${items.length}`);
  return item;
}

/** POST /v1/batches/lease, as the every-role token. */
export function leaseBatch(request: LeaseInput): Promise<Answer<Batch>> {
  return post<Batch>("/v1/batches/lease", request);
}

/** Rows of a D1 query, each read as `Row`. */
export async function d1<Row = Record<string, unknown>>(
  query: string,
  ...params: unknown[]
): Promise<Row[]> {
  return (
    await env.DB.prepare(query)
      .bind(...params)
      .all<Row>()
  ).results;
}

/** The `n` of a `SELECT COUNT(*) AS n ...` query. */
export async function count(query: string, ...params: unknown[]): Promise<number> {
  const [row] = await d1<{ n: number }>(query, ...params);
  return row?.n ?? 0;
}

/** The simulator's counters (src/sim/host-ledger.ts). */
export async function simulatorStats(): Promise<SimulatorStats> {
  const response = await fetch(`${env.INFERENCE_BASE_URL.replace(/\/v1$/, "")}/sim/stats`);
  return response.json<SimulatorStats>();
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

/** An example of the judged-answer environment; `judgeModel` names the judge (with directives). */
export function judgedExample(
  id: string,
  question: string,
  answer: string,
  judgeModel?: string,
): TaskExample {
  return {
    id,
    input: question,
    output: answer,
    ...(judgeModel === undefined ? {} : { metadata: { judge_model: judgeModel } }),
  };
}

/** A judged-answer group of `groupSize`, played with the simulator and waited for. */
export async function judgedGroup(run: string, example: TaskExample, groupSize = 1) {
  const id = await startGroup({
    env: "judged-answer",
    example,
    group_size: groupSize,
    run_id: run,
    sampling: { model: "sim", temperature: 0 },
  });
  await waitForGroup(id);
  return id;
}
