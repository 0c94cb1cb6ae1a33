/**
 * A typed client for the edgeroll HTTP API: what trainers, the CLI and the tests use. Runs
 * anywhere `fetch` does (Node >= 18, browsers, Workers).
 */
import type { z } from "zod";
import type { BudgetRequestSchema } from "../costs/budget";
import type { DatasetList, DatasetView, PushedDataset } from "../datasets/dataset-wire";
import type { EvalResultRow } from "../db/queries";
import type { EndState } from "../domain/episode-outcomes";
import type { HostsView, HostUpdate } from "../fleet/hosts-wire";
import type { PolicyRequestSchema } from "../policy/policy-wire";
import type { ProducerRequestSchema } from "../producer/producer-request";
import type { ProducerView } from "../producer/producer-view";
import type { StartGroupRequestSchema } from "../rollout/group-spec";
import type { LeaseRequestSchema } from "../trainer/lease-request";
import { backoffDelayMs, sleep } from "../utils/backoff";
import type { BudgetView } from "../views/cost-view";
import type { EpisodeView } from "../views/episode-view";
import type { ErrorBody } from "../views/error-body";
import type { GroupView } from "../views/group-view";
import type { policySetView, policyView } from "../views/policy-view";
import type {
  AckResult,
  Batch,
  EnvironmentInfo,
  EnvironmentList,
  EpisodePage,
  ExampleValidation,
  ReleaseResult,
  RescoreResult,
  RunProgress,
  StartedGroup,
} from "../views/responses";

// The answers' types come from the functions that build them on the Worker, the requests'
// from the schemas that validate them there.
export type {
  DatasetList,
  DatasetView,
  PushedDataset,
  PushResult,
} from "../datasets/dataset-wire";
export type { EvalResultRow } from "../db/queries";
export type { EndState } from "../domain/episode-outcomes";
export type { ProducerView } from "../producer/producer-view";
export type { BudgetView, CostsView, SpendView } from "../views/cost-view";
export type { EpisodeView } from "../views/episode-view";
export type { ErrorCode } from "../views/error-body";
export type { GroupView } from "../views/group-view";
export type {
  AckResult,
  Batch,
  EnvironmentInfo,
  EnvironmentList,
  EpisodeListItem,
  EpisodePage,
  ExampleValidation,
  ExampleVerdict,
  ReleaseResult,
  RescoreResult,
  RunProgress,
  StartedGroup,
  TrainerEpisode,
  TrainerGroup,
} from "../views/responses";

/** What `setBudget` sends: any of the limits; null removes one, one not named stays. */
export type RunBudgetUpdate = z.input<typeof BudgetRequestSchema>;

/** What `setPolicy` sends: the version, and optionally the lag limit and a pause. */
export type RunPolicyUpdate = z.input<typeof PolicyRequestSchema>;
export type RunPolicyView = ReturnType<typeof policyView>;
/**
 * `setPolicy`'s answer: the policy, the run's running groups, and how many of them were told of
 * it at once (the rest follow within a heartbeat).
 */
export type RunPolicySet = ReturnType<typeof policySetView>;

export type StartGroupInput = z.input<typeof StartGroupRequestSchema>;
/** A run producer's request: its own fields, and those its groups share. */
export type ProducerInput = z.input<typeof ProducerRequestSchema> &
  Omit<StartGroupInput, "example" | "run_id">;
export type LeaseInput = z.input<typeof LeaseRequestSchema>;

/** An answer with the API's error shape; carries the method, URL and the stable `code`. */
export class EdgerollError extends Error {
  override name = "EdgerollError";
  constructor(
    readonly method: string,
    readonly url: string,
    readonly status: number,
    readonly code: string,
    /** The API's own message, which names the problem. */
    readonly apiMessage: string,
    readonly details?: unknown,
  ) {
    super(`${method} ${url} -> ${status} ${code}: ${apiMessage}`);
  }
}

/** Nothing answered: the Worker is down, or the URL is wrong. Carries the method and URL. */
export class EdgerollConnectionError extends Error {
  override name = "EdgerollConnectionError";
  constructor(
    readonly method: string,
    readonly url: string,
    cause: unknown,
  ) {
    super(`${method} ${url}: ${connectionProblem(cause)}`, { cause });
  }
}

/** `fetch failed` says nothing; the reason is in its cause (ECONNREFUSED, ENOTFOUND, ...). */
function connectionProblem(error: unknown): string {
  const cause = (error as { cause?: { code?: string; message?: string } } | null)?.cause;
  if (cause?.code) return `${cause.code}${cause.message ? ` (${cause.message})` : ""}`;
  if (cause?.message) return cause.message;
  return error instanceof Error ? error.message : String(error);
}

/** EDGEROLL_TOKEN from the environment, where there is one (Node, Deno, Bun). */
function tokenFromEnvironment(): string | undefined {
  const env = (globalThis as { process?: { env?: Record<string, string | undefined> } }).process
    ?.env;
  return env?.EDGEROLL_TOKEN || undefined;
}

/** What `evaluate` runs: one evaluation group per example, every one at `policyVersion`. */
export interface EvaluateInput {
  env: string;
  examples: readonly StartGroupInput["example"][];
  groupSize: number;
  /** The version measured; its rows of `eval_results` are what `evaluate` returns. */
  policyVersion: number;
  runId: string;
  sampling: StartGroupInput["sampling"];
  /** Only these k (default: every k the view has, 1, 2, 4, ... up to the group size). */
  k?: readonly number[];
  /** Groups in flight at once (default 8). */
  concurrency?: number;
  /** Any other group field: prompt_text, max_context_tokens, tokens, ... */
  request?: Omit<
    StartGroupInput,
    "env" | "example" | "group_size" | "run_id" | "kind" | "policy_version" | "sampling"
  >;
  /** Called as each group lands. */
  onGroup?: (group: GroupView) => void;
}

/**
 * An evaluation group's idempotency key: run, environment, version, example and group size, so
 * a rerun resumes the groups it started and another version's evaluation starts its own.
 */
export function evalIdempotencyKey(
  input: Pick<EvaluateInput, "runId" | "env" | "policyVersion" | "groupSize">,
  exampleId: string,
): string {
  return `edgeroll-eval:${input.runId}:${input.env}:v${input.policyVersion}:${exampleId}:${input.groupSize}`.slice(
    0,
    255,
  );
}

export interface ClientOptions {
  /** Where the Worker answers, e.g. http://127.0.0.1:8787 or https://edgeroll.example.workers.dev */
  baseUrl: string;
  /**
   * Bearer token, when the deployment requires one. Left out, EDGEROLL_TOKEN is used when set;
   * null sends none. In Node, `discoverToken` (edgeroll/local-token) also finds a local stack's.
   */
  token?: string | null;
  fetch?: typeof fetch;
  /** Tries for requests that are safe to repeat (GETs, keyed starts); default 3. */
  attempts?: number;
}

/** Repeatable requests retry after 0.4 s, 0.8 s, ... up to 5 s. */
const retryDelayMs = (attempt: number) => backoffDelayMs(attempt, { baseMs: 400, maxMs: 5000 });

/**
 * Reads until `done` says so, every `intervalMs`; past `timeoutMs` (ten minutes by default),
 * throws what `stillWaiting` says of the last read.
 */
async function pollUntil<T>(
  read: () => Promise<T>,
  done: (value: T) => boolean,
  stillWaiting: (value: T) => string,
  options: { intervalMs: number; timeoutMs?: number },
): Promise<T> {
  const deadline = Date.now() + (options.timeoutMs ?? 600_000);
  for (;;) {
    const value = await read();
    if (done(value)) return value;
    if (Date.now() > deadline) throw new Error(stillWaiting(value));
    await sleep(options.intervalMs);
  }
}

export class EdgerollClient {
  private readonly baseUrl: string;
  private readonly fetch: typeof fetch;
  private readonly attempts: number;
  private readonly token: string | undefined;

  constructor(options: ClientOptions) {
    this.baseUrl = options.baseUrl.replace(/\/+$/, "");
    this.token =
      options.token === undefined ? tokenFromEnvironment() : (options.token ?? undefined);
    this.fetch = options.fetch ?? globalThis.fetch.bind(globalThis);
    this.attempts = options.attempts ?? 3;
  }

  private request<T>(
    method: "GET" | "POST" | "DELETE",
    path: string,
    body?: unknown,
    headers: Record<string, string> = {},
    repeatable = method === "GET",
  ): Promise<T> {
    return this.send(
      path,
      {
        method,
        headers: body === undefined ? headers : { "content-type": "application/json", ...headers },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      },
      repeatable,
    );
  }

  /** One call with the token, retried when `repeatable`; the JSON answer, or the API's error. */
  private async send<T>(path: string, request: RequestInit, repeatable: boolean): Promise<T> {
    const url = `${this.baseUrl}${path}`;
    const method = request.method ?? "GET";
    const init: RequestInit = {
      ...request,
      headers: {
        ...(this.token ? { authorization: `Bearer ${this.token}` } : {}),
        ...(request.headers as Record<string, string>),
      },
    };
    for (let attempt = 1; ; attempt++) {
      let response: Response;
      try {
        response = await this.fetch(url, init);
      } catch (error) {
        if (!repeatable || attempt >= this.attempts)
          throw new EdgerollConnectionError(method, url, error);
        await sleep(retryDelayMs(attempt));
        continue;
      }
      if (response.status >= 500 && repeatable && attempt < this.attempts) {
        await sleep(retryDelayMs(attempt));
        continue;
      }
      // A 429 that says when to come back (a token's quota of groups in flight) passes by
      // waiting; one that does not (a run's budget spent) does not, and is thrown.
      const retryAfterS = Number(response.headers.get("retry-after") ?? Number.NaN);
      if (
        response.status === 429 &&
        Number.isFinite(retryAfterS) &&
        repeatable &&
        attempt < this.attempts
      ) {
        await sleep(Math.min(retryAfterS, 60) * 1000);
        continue;
      }
      // Any JSON answer: the API's error body when it is not ok.
      const json = (await response.json().catch(() => null)) as Partial<ErrorBody> | null;
      if (!response.ok) {
        const error = json?.error;
        throw new EdgerollError(
          method,
          url,
          response.status,
          error?.code ?? "http_error",
          error?.message ?? response.statusText,
          error?.details,
        );
      }
      return json as T;
    }
  }

  /** Every environment a group may name, and which of them are served remotely. */
  listEnvironments(): Promise<EnvironmentList> {
    return this.request("GET", "/v1/environments");
  }

  /** One environment: built in, or remote and where it is served (the producer role). */
  getEnvironment(name: string): Promise<EnvironmentInfo> {
    return this.request("GET", `/v1/environments/${encodeURIComponent(name)}`);
  }

  /**
   * Asks whether the environment can play each of these rows, as POST /v1/groups would, before
   * a job starts any of them; nothing is stored. At most 40 rows a call. Repeatable, so retried.
   */
  validateExamples(
    env: string,
    examples: readonly unknown[],
    promptText = "",
  ): Promise<ExampleValidation> {
    return this.request(
      "POST",
      `/v1/environments/${encodeURIComponent(env)}/validate`,
      { examples, prompt_text: promptText },
      {},
      true,
    );
  }

  /** Starts a group. With an idempotency key the call is safe to retry, and is retried. */
  startGroup(
    request: StartGroupInput,
    options: { idempotencyKey?: string } = {},
  ): Promise<StartedGroup> {
    const key = options.idempotencyKey;
    return this.request(
      "POST",
      "/v1/groups",
      request,
      key ? { "idempotency-key": key } : {},
      key !== undefined,
    );
  }

  getGroup(groupId: string): Promise<GroupView> {
    return this.request("GET", `/v1/groups/${encodeURIComponent(groupId)}`);
  }

  /** Polls until the group has landed or failed. */
  async waitForGroup(
    groupId: string,
    options: { timeoutMs?: number; intervalMs?: number } = {},
  ): Promise<GroupView> {
    return pollUntil(
      () => this.getGroup(groupId),
      (group) => group.status === "landed" || group.status === "failed",
      (group) => `group ${groupId} is still ${group.status}`,
      { ...options, intervalMs: options.intervalMs ?? 500 },
    );
  }

  /**
   * Groups of a run by status, its policy, and its pacing (groups in flight and landed but not
   * yet leased, by version): cheaper than polling each group, though each call asks every
   * running group object for its spend and generations in flight (its cost grows with them).
   */
  getRun(runId: string): Promise<RunProgress> {
    return this.request("GET", `/v1/runs/${encodeURIComponent(runId)}`);
  }

  /**
   * Asynchronous RL: tells edgeroll the policy the trainer trains now (the trainer role). Groups
   * of the run that name no `policy_version` take it, and every turn sent from the answer on
   * records it; with `max_lag`, groups that fall further behind are refused or cancelled;
   * `paused` holds the run's new generations (a weight sync) until it is set false again, and
   * with `interrupt: true` aborts those in flight too (each is sent again after the resume).
   */
  setPolicy(runId: string, policy: RunPolicyUpdate): Promise<RunPolicySet> {
    return this.request("POST", `/v1/runs/${encodeURIComponent(runId)}/policy`, policy);
  }

  /**
   * Sets limits on what the run may spend (the trainer role), before or during the run: once its
   * spend (landed and in flight) reaches one, its new groups are refused (`budget_exhausted`, a
   * 429) and its producer waits; raising the limit lets them through again.
   */
  setBudget(runId: string, limits: RunBudgetUpdate): Promise<BudgetView> {
    return this.request("POST", `/v1/runs/${encodeURIComponent(runId)}/budget`, limits);
  }

  /** The run's budget against what it has spent (limits all null when none was set). */
  getBudget(runId: string): Promise<BudgetView> {
    return this.request("GET", `/v1/runs/${encodeURIComponent(runId)}/budget`);
  }

  /**
   * Waits until the run has no generation in flight (`in_flight_generations` of GET
   * /v1/runs/:id is 0; null, some group not asked, is not 0): after a pause, edgeroll sends the
   * run's hosts nothing more until it resumes. Throws after `timeoutMs`.
   */
  async waitIdle(
    runId: string,
    options: { intervalMs?: number; timeoutMs?: number } = {},
  ): Promise<void> {
    await pollUntil(
      () => this.getRun(runId),
      (run) => run.in_flight_generations === 0,
      (run) => `run "${runId}" still has ${run.in_flight_generations} generations in flight`,
      { ...options, intervalMs: options.intervalMs ?? 200 },
    );
  }

  /**
   * Makes the run produce itself, server side, from a dataset uploaded to edgeroll: a group per
   * example and epoch as room frees, resampling uniform groups with `dynamic_sampling`. The same
   * request again while it runs answers its progress, so the call is retried.
   */
  startProducer(runId: string, request: ProducerInput): Promise<ProducerView> {
    return this.request(
      "POST",
      `/v1/runs/${encodeURIComponent(runId)}/producer`,
      request,
      {},
      true,
    );
  }

  /** Where the run's producer has got to: its state, each epoch's examples done, its groups. */
  getProducer(runId: string): Promise<ProducerView> {
    return this.request("GET", `/v1/runs/${encodeURIComponent(runId)}/producer`);
  }

  /** Stops the run's producer: its groups in flight land, no new one starts. */
  stopProducer(runId: string): Promise<ProducerView> {
    return this.request(
      "DELETE",
      `/v1/runs/${encodeURIComponent(runId)}/producer`,
      undefined,
      {},
      true,
    );
  }

  /** Polls the run's producer until it is done or stopped; `onProgress` sees every poll. */
  waitForProducer(
    runId: string,
    options: {
      onProgress?: (view: ProducerView) => void;
      intervalMs?: number;
      timeoutMs?: number;
    } = {},
  ): Promise<ProducerView> {
    return pollUntil(
      async () => {
        const view = await this.getProducer(runId);
        options.onProgress?.(view);
        return view;
      },
      (view) => view.state !== "running",
      (view) =>
        `run "${runId}"'s producer is still running (${view.groups_started} groups started)`,
      { ...options, intervalMs: options.intervalMs ?? 500 },
    );
  }

  /**
   * The run's evaluation metrics, the rows of the `eval_results` view: per environment, policy
   * version and k, pass@k, maj@k and the mean reward (docs/querying.md).
   */
  getEvals(runId: string): Promise<EvalResultRow[]> {
    return this.request("GET", `/v1/runs/${encodeURIComponent(runId)}/evals`);
  }

  /**
   * Evaluates one policy version: starts an evaluation group (`kind: "eval"`) per example, waits
   * for all of them, and returns them with the version's metrics. Training goes on meanwhile:
   * evaluations are never leased, and the fleet keeps them a share of every host.
   */
  async evaluate(input: EvaluateInput): Promise<{ groups: GroupView[]; results: EvalResultRow[] }> {
    const groups: GroupView[] = new Array(input.examples.length);
    let next = 0;
    const worker = async () => {
      while (next < input.examples.length) {
        const at = next++;
        const example = input.examples[at] as StartGroupInput["example"];
        const started = await this.startGroup(
          {
            ...input.request,
            env: input.env,
            example,
            group_size: input.groupSize,
            run_id: input.runId,
            kind: "eval",
            policy_version: input.policyVersion,
            sampling: input.sampling,
          },
          { idempotencyKey: evalIdempotencyKey(input, example.id) },
        );
        const group = await this.waitForGroup(started.group_id, { intervalMs: 250 });
        groups[at] = group;
        input.onGroup?.(group);
      }
    };
    const workers = Math.max(1, Math.min(input.concurrency ?? 8, input.examples.length));
    await Promise.all(Array.from({ length: workers }, worker));
    const results = (await this.getEvals(input.runId)).filter(
      (row) =>
        row.env === input.env &&
        row.policy_version === input.policyVersion &&
        (input.k === undefined || input.k.includes(row.k)),
    );
    return { groups, results };
  }

  getPolicy(runId: string): Promise<RunPolicyView> {
    return this.request("GET", `/v1/runs/${encodeURIComponent(runId)}/policy`);
  }

  /** The inference fleet: each host's state, episodes in flight, cap and declared version. */
  listHosts(): Promise<HostsView> {
    return this.request("GET", "/v1/hosts");
  }

  /**
   * Pauses or resumes one host, or records the policy version it serves now (the trainer role):
   * a rolling weight sync, host by host, while the rest of the fleet generates.
   */
  setHost(update: HostUpdate): Promise<{ host: HostsView["hosts"][number] }> {
    return this.request("POST", "/v1/hosts", update);
  }

  /**
   * Pushes a JSONL dataset under `name` (the trainer role): the file's bytes as they are, whole
   * or as a stream, which is sent as it is read. The Worker checks every line and stores nothing
   * if one is bad (`invalid_dataset`, naming the first ten). The same bytes again are a no-op
   * (`result: "unchanged"`); other bytes under a taken name are a 409 `dataset_conflict` unless
   * `replace`. Not retried: a stream cannot be sent twice.
   */
  pushDataset(
    name: string,
    file: ReadableStream<Uint8Array> | Uint8Array | Blob | string,
    options: { replace?: boolean } = {},
  ): Promise<PushedDataset> {
    const query = options.replace ? "?replace=true" : "";
    const body = file instanceof Uint8Array ? new Blob([file as Uint8Array<ArrayBuffer>]) : file;
    return this.send(
      `/v1/datasets/${encodeURIComponent(name)}${query}`,
      {
        method: "POST",
        headers: { "content-type": "application/x-ndjson" },
        body,
        // Node's fetch sends a stream body only when told it may before the answer begins.
        ...(body instanceof ReadableStream ? { duplex: "half" } : {}),
      },
      false,
    );
  }

  /** Every dataset pushed: name, bytes, examples, sha256 and when it was pushed. */
  async listDatasets(): Promise<DatasetView[]> {
    return (await this.request<DatasetList>("GET", "/v1/datasets")).datasets;
  }

  getEpisode(episodeId: string): Promise<EpisodeView> {
    return this.request("GET", `/v1/episodes/${encodeURIComponent(episodeId)}`);
  }

  listEpisodes(filter: {
    run_id?: string;
    env?: string;
    status?: EndState;
    success?: boolean;
    /** Only training groups' episodes (`train`), or only evaluations' (`eval`). */
    kind?: "train" | "eval";
    /**
     * `false`: leave out the over-long episodes a group's `overlong: "filter"` keeps out of
     * leases; `true`: only those.
     */
    filtered?: boolean;
    include?: string[];
    limit?: number;
    cursor?: string;
  }): Promise<EpisodePage> {
    const query = new URLSearchParams();
    for (const [key, value] of Object.entries(filter)) {
      if (value !== undefined)
        query.set(key, Array.isArray(value) ? value.join(",") : String(value));
    }
    return this.request("GET", `/v1/episodes?${query}`);
  }

  lease(request: LeaseInput): Promise<Batch> {
    return this.request("POST", "/v1/batches/lease", request);
  }

  /** Acks are idempotent, so they are retried. */
  ack(batchId: string): Promise<AckResult> {
    return this.request("POST", `/v1/batches/${encodeURIComponent(batchId)}/ack`, {}, {}, true);
  }

  release(batchId: string): Promise<ReleaseResult> {
    return this.request("POST", `/v1/batches/${encodeURIComponent(batchId)}/release`, {}, {}, true);
  }

  /**
   * Grades a landed group's `judge_error` episodes again (every episode that played to an end,
   * with `all`), once the judge is back; not retried here, as each try asks the judge again.
   */
  rescore(groupId: string, options: { all?: boolean } = {}): Promise<RescoreResult> {
    return this.request("POST", `/v1/groups/${encodeURIComponent(groupId)}/rescore`, options);
  }
}
