// `edgeroll run` has a flag for every field of a group request (StartGroupRequestSchema), and
// docs/clients.md lists every flag it has: adding a field to the API, or a flag to the CLI,
// fails here until the other side (and the page) has it too.
import { readFileSync } from "node:fs";
import { resolve } from "node:path";
import type { Command } from "commander";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { buildProgram } from "../../src/cli/program";
import { groupRequest, type RunFlags } from "../../src/cli/run";
import { StartGroupRequestSchema } from "../../src/rollout/group-spec";

/** Where a flag is not the field's name in kebab case. */
const NAMED_OTHERWISE: Record<string, string> = {
  run_id: "--run",
  example: "--dataset",
  "teacher.model": "--teacher",
  "sampling.model": "--model",
};
/** Flags of the job, not of a group: how many at once, how far ahead, where, as whom. */
const JOB_FLAGS = ["--concurrency", "--max-ahead", "--limit", "--url", "--token"];
/** Flags of a run produced on the Worker (`--server`): the producer's fields, not a group's. */
const SERVER_FLAGS = [
  "--server",
  "--epochs",
  "--shuffle-seed",
  "--max-resamples",
  "--sampler",
  "--skip-solved-after",
  "--skip-unsolved-after",
  "--retry-after",
  "--dataset-name",
];

/** The request's leaf fields: `sampling.top_p`, `teacher.model`, `env`; `example` is one. */
function fields(object: z.ZodObject, prefix = ""): string[] {
  return Object.entries(object.shape).flatMap(([key, field]) => {
    const inner = field instanceof z.ZodOptional ? field.unwrap() : field;
    if (key === "example" || !(inner instanceof z.ZodObject)) return [`${prefix}${key}`];
    return fields(inner, `${prefix}${key}.`);
  });
}

function flagFor(field: string): string {
  const leaf = field.split(".").at(-1) as string;
  return NAMED_OTHERWISE[field] ?? `--${leaf.replaceAll("_", "-")}`;
}

function runCommand(): Command {
  const run = buildProgram().commands.find((c) => c.name() === "run");
  if (!run) throw new Error("no run command");
  return run;
}

const requestFields = fields(StartGroupRequestSchema.in);
const runFlags = runCommand().options.map((o) => o.long as string);

describe("edgeroll run's flags and the API's group request fields", () => {
  it("reads the request's fields from its schema", () => {
    expect(requestFields).toContain("sampling.top_p");
    expect(requestFields).toContain("advantage");
    expect(requestFields).toContain("teacher.model");
  });

  it("has a flag for every field the API takes", () => {
    const missing = requestFields.filter((f) => !runFlags.includes(flagFor(f)));
    expect(missing, "fields with no `run` flag").toEqual([]);
  });

  it("has no flag that is neither a field nor the job's own", () => {
    const fieldFlags = new Set(requestFields.map(flagFor));
    const extra = runFlags.filter(
      (f) => !fieldFlags.has(f) && !JOB_FLAGS.includes(f) && !SERVER_FLAGS.includes(f),
    );
    expect(extra, "flags that set nothing the API takes").toEqual([]);
  });

  it("sends each flag's field, where the API names it", () => {
    const flags: RunFlags = {
      env: "guess-number",
      dataset: "d.jsonl",
      groupSize: "4",
      concurrency: "8",
      url: "http://127.0.0.1:8787",
      promptText: "Be brief.",
      model: "sim",
      temperature: "0.7",
      topP: "0.9",
      stop: ["</guess>", "\n\n"],
      maxCompletionTokens: "64",
      maxContextTokens: "4096",
      seed: "3",
      policyVersion: "2",
      creditAssignment: "per_turn",
      advantage: "mean_std",
      tokens: "required",
      generation: "tokens",
      algorithm: "opd",
      teacher: "sim+teacher",
      overlong: "mask",
      kind: "eval",
      envVersion: "2",
    };
    const request = groupRequest(flags);
    expect(request).toEqual({
      kind: "eval",
      prompt_text: "Be brief.",
      policy_version: 2,
      credit_assignment: "per_turn",
      advantage: "mean_std",
      tokens: "required",
      generation: "tokens",
      algorithm: "opd",
      teacher: { model: "sim+teacher" },
      env_version: "2",
      overlong: "mask",
      max_context_tokens: 4096,
      sampling: {
        model: "sim",
        temperature: 0.7,
        top_p: 0.9,
        stop: ["</guess>", "\n\n"],
        max_completion_tokens: 64,
        seed: 3,
      },
    });
    // What the API would take, once the job adds env, example and group_size.
    const parsed = StartGroupRequestSchema.safeParse({
      ...request,
      env: "guess-number",
      example: { id: "x", input: "y" },
      group_size: 4,
    });
    expect(parsed.error?.issues ?? []).toEqual([
      expect.objectContaining({ path: ["credit_assignment"] }), // opd refuses per_turn, rightly
    ]);
    expect(() => groupRequest({ ...flags, advantage: "median" })).toThrow(
      /--advantage must be mean or mean_std, got "median"/,
    );
    expect(() => groupRequest({ ...flags, topP: "0" })).toThrow(/--top-p must be a number above 0/);
    const { policyVersion: _, ...unpinned } = flags;
    expect(() => groupRequest(unpinned)).toThrow(
      /--kind eval measures one policy version: give --policy-version <n>/,
    );
  });

  it("are all listed on docs/clients.md", () => {
    const page = readFileSync(resolve(import.meta.dirname, "../../docs/clients.md"), "utf8");
    const section = page.slice(page.indexOf("## `edgeroll run`"), page.indexOf("## Names"));
    const unlisted = runFlags.filter((f) => !section.includes(`\`${f}\``));
    expect(unlisted, "run flags docs/clients.md does not list").toEqual([]);
  });
});
