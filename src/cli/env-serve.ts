/**
 * `edgeroll env serve <name> --port P`: serves a TypeScript environment over the remote
 * environment protocol (docs/remote-env-protocol.md). It is the protocol's reference server
 * (the Python package's mirrors it), and what the tests put behind REMOTE_ENVS. Stateless, as
 * edgeroll's own step worker: every call carries the transcript and gets a fresh instance.
 */
import { createServer, type IncomingMessage, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import type { z } from "zod";
import {
  environmentNames,
  isRegisteredEnvironment,
  loadEnvironment,
} from "../environments/registry";
import {
  ScoreRequestSchema,
  StartRequestSchema,
  StepRequestSchema,
} from "../environments/remote/protocol";
import {
  describeZodError,
  type EnvironmentMultiTurn,
  ExampleRejectedError,
  episodeTools,
  errorMessage,
  isSampledAction,
  openEpisode,
  scoreGroup,
  stepEnvironment,
  turnBudget,
  UnknownEnvironmentError,
} from "../sdk";
import { CliError } from "./project";

export interface ServeOptions {
  port: number;
  host?: string;
  /** Required as `Authorization: Bearer` when set. */
  token?: string;
  /** The environment for each call; by default a fresh instance of the named built-in. */
  environment?: () => EnvironmentMultiTurn;
}

type Answer = { status: number; body: unknown; headers?: Record<string, string> };

const error = (status: number, code: string, message: string): Answer => ({
  status,
  body: { error: { code, message } },
});

/** Answers kept by Idempotency-Key, so a retried step gets the first answer, not a second run. */
const REMEMBERED = 4096;

export class ProtocolHandler {
  private readonly answers = new Map<string, { body: string; answer: Answer }>();

  constructor(
    private readonly name: string,
    private readonly environment: () => EnvironmentMultiTurn,
  ) {}

  async handle(method: string, path: string, body: unknown, key: string | null): Promise<Answer> {
    if (method === "GET" && path === "/info") {
      const env = this.environment();
      return {
        status: 200,
        body: {
          name: this.name,
          version: env.version,
          kind: env.kind === "single-turn" ? "single_turn" : "multi_turn",
          max_score_concurrency: env.maxScoreConcurrency,
        },
      };
    }
    if (method !== "POST") return error(405, "method_not_allowed", `no route ${method} ${path}`);
    const text = JSON.stringify(body);
    const remembered = key === null ? undefined : this.answers.get(`${path} ${key}`);
    if (remembered !== undefined) {
      if (remembered.body !== text)
        return error(
          422,
          "idempotency_key_reused",
          `Idempotency-Key ${key} was used with another body`,
        );
      return remembered.answer;
    }
    const answer = await this.route(path, body);
    if (key !== null && answer.status < 500) {
      this.answers.set(`${path} ${key}`, { body: text, answer });
      if (this.answers.size > REMEMBERED)
        this.answers.delete(this.answers.keys().next().value as string);
    }
    return answer;
  }

  private async route(path: string, body: unknown): Promise<Answer> {
    if (path === "/start") {
      return this.run(StartRequestSchema, body, async (r) => {
        const env = this.environment();
        const messages = await openEpisode(env, r.example, r.prompt_text);
        const tools = await episodeTools(env, r.example);
        // Native tool calling: the tools go with the opening, for every generation to offer.
        return { messages, max_turns: turnBudget(env, r.example), ...(tools ? { tools } : {}) };
      });
    }
    if (path === "/step") {
      return this.run(StepRequestSchema, body, async (r) => {
        const problem = replayProblem(r);
        if (problem !== null) return bad(problem);
        const step = await stepEnvironment(this.environment(), r.example, r.messages);
        return {
          done: step.done,
          messages: step.messages,
          final_response_text: step.finalResponseText ?? null,
          metadata: step.metadata,
        };
      });
    }
    if (path === "/score") {
      return this.run(ScoreRequestSchema, body, async (r) => {
        const episodes = r.episodes.map((e) => ({
          messages: e.messages,
          responseText: e.response_text,
          turns: e.turns,
          metadata: e.metadata,
        }));
        const outcomes = await scoreGroup(this.environment(), r.example, episodes);
        const failure = outcomes.find((o) => !o.ok);
        if (failure !== undefined && !failure.ok) throw new Error(failure.error);
        return {
          results: outcomes.map((o) =>
            o.ok
              ? {
                  score: o.reward.score,
                  threshold: o.reward.threshold ?? null,
                  metadata: o.reward.metadata,
                  ...(o.reward.components ? { components: o.reward.components } : {}),
                }
              : null,
          ),
        };
      });
    }
    return error(404, "not_found", `no route POST ${path}`);
  }

  private async run<S extends z.ZodType>(
    schema: S,
    body: unknown,
    work: (request: z.infer<S>) => Promise<unknown>,
  ): Promise<Answer> {
    const request = schema.safeParse(body);
    if (!request.success) return error(400, "bad_request", describeZodError(request.error));
    try {
      const value = await work(request.data);
      if (value instanceof BadRequest) return error(400, "bad_request", value.message);
      return { status: 200, body: value };
    } catch (e) {
      // The environment cannot play the example (its schema, at /start): the fields, not a 500.
      if (e instanceof ExampleRejectedError)
        return {
          status: 422,
          body: { error: { code: "example_rejected", message: e.message, details: e.problems } },
        };
      return error(500, "env_error", errorMessage(e));
    }
  }
}

class BadRequest {
  constructor(readonly message: string) {}
}
const bad = (message: string) => new BadRequest(message);

/** The replay rules: the transcript ends with the sampled action the call names, by index. */
function replayProblem(r: z.infer<typeof StepRequestSchema>): string | null {
  const action = r.messages.at(-1);
  if (action === undefined || !isSampledAction(action))
    return "messages: must end with the sampled action being stepped (metadata.sampled: true)";
  if (action.content !== r.assistant_response)
    return "assistant_response: must equal the content of the last message";
  const turn = r.messages.filter(isSampledAction).length - 1;
  if (r.turn !== turn) return `turn: ${r.turn}, but messages hold sampled action ${turn}`;
  return null;
}

async function readJson(request: IncomingMessage): Promise<unknown> {
  const chunks: Buffer[] = [];
  for await (const chunk of request) chunks.push(chunk as Buffer);
  const text = Buffer.concat(chunks).toString("utf8");
  return text === "" ? undefined : JSON.parse(text);
}

/** Starts the server; resolves with its URL once it listens. */
export async function serveEnvironment(
  name: string,
  options: ServeOptions,
): Promise<{ url: string; server: Server }> {
  const handler = new ProtocolHandler(name, options.environment ?? (() => loadEnvironment(name)));
  const server = createServer(async (request, response) => {
    let answer: Answer;
    if (options.token && request.headers.authorization !== `Bearer ${options.token}`) {
      answer = error(401, "unauthorized", "a bearer token is required (REMOTE_ENV_TOKEN)");
    } else {
      try {
        const body = await readJson(request);
        const key = request.headers["idempotency-key"];
        answer = await handler.handle(
          request.method ?? "GET",
          new URL(request.url ?? "/", "http://x").pathname,
          body,
          typeof key === "string" ? key : null,
        );
      } catch (e) {
        answer = error(400, "bad_request", `the body is not JSON: ${errorMessage(e)}`);
      }
    }
    const data = JSON.stringify(answer.body);
    response.writeHead(answer.status, { "content-type": "application/json", ...answer.headers });
    response.end(data);
  });
  await new Promise<void>((resolve) =>
    server.listen(options.port, options.host ?? "127.0.0.1", resolve),
  );
  const { port } = server.address() as AddressInfo;
  return { url: `http://${options.host ?? "127.0.0.1"}:${port}`, server };
}

/** `edgeroll env serve <name>`: serves a registered environment until interrupted. */
export async function serveCommand(
  name: string,
  options: { port: string; host: string; token?: string },
): Promise<void> {
  if (!isRegisteredEnvironment(name))
    throw new CliError(new UnknownEnvironmentError(name, environmentNames()).message);
  const { url } = await serveEnvironment(name, {
    port: Number(options.port),
    host: options.host,
    token: options.token ?? process.env.REMOTE_ENV_TOKEN,
  });
  console.log(`edgeroll env serving ${name} on ${url}`);
}
