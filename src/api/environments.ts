/**
 * The environments a Worker runs: their names (built in and remote), one environment's kind
 * and, for a remote one, where it is served; and a dataset's examples checked against one
 * before a job starts any group of it.
 */
import { Hono } from "hono";
import { z } from "zod";
import { environmentsOf } from "../env-workers/environments";
import {
  environmentNames,
  isRegisteredEnvironment,
  isRemoteEnvironment,
} from "../environments/registry";
import { environmentVersion } from "../environments/versions";
import { describeZodError, type TaskExample, TaskExampleSchema } from "../sdk";
import {
  type ExampleVerdict,
  environmentsView,
  environmentView,
  validationView,
} from "../views/responses";
import { ApiError } from "./errors";
import { acceptExample, unknownEnvironment } from "./example-check";
import { validated } from "./validated";

/** Examples per call: each may cost a remote environment a `/start`, and a Worker a subrequest. */
export const MAX_VALIDATE_EXAMPLES = 40;

const ValidateRequestSchema = z.strictObject({
  /** Rows as a dataset holds them: each is checked on its own, so one bad row spoils nothing. */
  examples: z.array(z.unknown()).min(1).max(MAX_VALIDATE_EXAMPLES),
  prompt_text: z.string().max(200_000).default(""),
});

/** At most this many openings at once (a remote environment's `/start` calls). */
const CONCURRENCY = 8;

async function verdict(
  env: string,
  row: unknown,
  index: number,
  promptText: string,
  remote: ReturnType<typeof environmentsOf>,
): Promise<ExampleVerdict | null> {
  const parsed = TaskExampleSchema.safeParse(row);
  const id = (row as { id?: unknown } | null)?.id;
  if (!parsed.success) {
    const details = parsed.error.issues.map((i) => ({
      path: ["example", ...i.path.map(String)].join("."),
      message: i.message,
    }));
    return {
      index,
      id: typeof id === "string" ? id : null,
      code: "invalid_request",
      message: `example: ${describeZodError(parsed.error)}`,
      details,
    };
  }
  const example: TaskExample = parsed.data;
  try {
    await acceptExample(env, example, promptText, remote);
    return null;
  } catch (error) {
    if (error instanceof ApiError && error.code === "example_rejected")
      return {
        index,
        id: example.id,
        code: error.code,
        message: error.message,
        details: error.details ?? null,
      };
    throw error;
  }
}

export const environmentRoutes = new Hono<{ Bindings: Env }>()
  .get("/environments", (c) => {
    const remote = environmentsOf(c.env);
    return c.json(environmentsView(environmentNames(remote), [...remote.targets.keys()]));
  })
  .get("/environments/:name", async (c) => {
    const name = c.req.param("name");
    const remote = environmentsOf(c.env);
    if (!isRegisteredEnvironment(name, remote))
      throw new ApiError(404, "not_found", unknownEnvironment(name, remote));
    const target = isRemoteEnvironment(name, remote) ? remote.targets.get(name) : undefined;
    // Describing an environment must not fail because a remote one is down: its version is null.
    const version = await environmentVersion(name, remote).catch(() => null);
    return c.json(environmentView(name, target?.baseUrl ?? null, version));
  })
  .post("/environments/:name/validate", validated("json", ValidateRequestSchema), async (c) => {
    const name = c.req.param("name");
    const { examples, prompt_text } = c.req.valid("json");
    const remote = environmentsOf(c.env);
    if (!isRegisteredEnvironment(name, remote))
      throw new ApiError(404, "not_found", unknownEnvironment(name, remote));
    const verdicts: (ExampleVerdict | null)[] = new Array(examples.length).fill(null);
    let next = 0;
    const worker = async () => {
      while (next < examples.length) {
        const index = next++;
        verdicts[index] = await verdict(name, examples[index], index, prompt_text, remote);
      }
    };
    await Promise.all(Array.from({ length: Math.min(CONCURRENCY, examples.length) }, worker));
    return c.json(
      validationView(
        name,
        examples.length,
        verdicts.filter((v) => v !== null),
      ),
    );
  });
