/**
 * Whether an environment can play an example, checked before anything runs: the example against
 * the environment's declared `exampleSchema` (its metadata's fields, and `output` where it scores
 * against one). The API refuses a group on it, the open path and `env check` run it, so an
 * example no episode could play is a 422 at the door, not a group of failed episodes.
 */
import type { EnvironmentMultiTurn } from "./environment";
import { type ExampleProblem, ExampleRejectedError } from "./errors";
import type { TaskExample } from "./types";

/** What is wrong with the example for this environment: nothing, or every field at fault. */
export function exampleProblems(env: EnvironmentMultiTurn, example: TaskExample): ExampleProblem[] {
  if (env.exampleSchema === undefined) return [];
  // A row without metadata has none: `{}`, as `exampleMetadata` reads it.
  const parsed = env.exampleSchema.safeParse({ ...example, metadata: example.metadata ?? {} });
  if (parsed.success) return [];
  return parsed.error.issues.map((issue) => ({
    path: issue.path.map(String).join("."),
    message: issue.message,
  }));
}

/** Throws `ExampleRejectedError`, naming the fields, when the environment cannot play the example. */
export function checkExample(env: EnvironmentMultiTurn, example: TaskExample): void {
  const problems = exampleProblems(env, example);
  if (problems.length > 0) throw new ExampleRejectedError(problems);
}
