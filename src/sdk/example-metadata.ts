/**
 * An example's `metadata`, parsed with the environment's schema. A problem names the field as
 * the dataset row spells it (`metadata.secret`), not as the schema sees it (`secret`).
 */
import { z } from "zod";
import type { TaskExample } from "./types";

export function exampleMetadata<T extends z.ZodType>(
  schema: T,
  example: Pick<TaskExample, "metadata">,
): z.infer<T> {
  const parsed = schema.safeParse(example.metadata ?? {});
  if (parsed.success) return parsed.data;
  throw new z.ZodError(
    parsed.error.issues.map((issue) => ({ ...issue, path: ["metadata", ...issue.path] })),
  );
}
