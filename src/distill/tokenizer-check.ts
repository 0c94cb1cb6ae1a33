/**
 * Student and teacher must share a tokenizer: the teacher scores the student's token ids, which
 * mean nothing under another vocabulary. Checked when an OPD group starts, by tokenizing the
 * same probe text on both hosts (`/tokenize`); a match is remembered for a while per isolate,
 * so a run of groups pays for it once.
 */

import { type Config, teacherEndpoint } from "../config";
import { fleetHosts } from "../fleet/hosts-config";
import { tokenize } from "../inference/tokenize";

/**
 * Words, digits, punctuation, non-Latin scripts, markup, and the special tokens chat models add
 * (`<|im_end|>`, `<think>`): vocabularies that share their merges but not their added tokens
 * (Qwen2.5 and Qwen3) differ here too.
 */
const PROBE =
  'edgeroll tokenizer probe: Grüße, naïve café — 数字 12345 ¿qué? <think>hmm</think> <tool_call>{"name": "f", "arguments": [1, 2.5]}</tool_call><|im_end|>\n\tend.';

const REMEMBER_MS = 10 * 60_000;
const matched = new Map<string, number>();

/**
 * Why the check did not pass: `mismatch`, the two tokenize the probe differently; `refused`, a
 * host would not tokenize it for that model (a wrong model name, most likely); `unavailable`, a
 * host could not be asked (unreachable, timed out, an unreadable answer): a later try may pass.
 */
export interface TokenizerProblem {
  ok: false;
  kind: "mismatch" | "refused" | "unavailable";
  message: string;
}

export type TokenizerCheck = { ok: true } | TokenizerProblem;

const preview = (ids: Int32Array) =>
  `${ids.length} ids [${Array.from(ids.subarray(0, 6)).join(", ")}${ids.length > 6 ? ", …" : ""}]`;

type Tokenized = Awaited<ReturnType<typeof tokenize>>;

/** Why a host did not tokenize the probe: a refusal names the model, anything else is for later. */
function notTokenized(who: string, outcome: Exclude<Tokenized, { kind: "ok" }>): TokenizerCheck {
  const why = "message" in outcome ? outcome.message : outcome.kind;
  if (outcome.kind === "failed" && outcome.failure === "rejected")
    return {
      ok: false,
      kind: "refused",
      message: `${who} refused to tokenize a probe text (${why}); is the model name right?`,
    };
  return {
    ok: false,
    kind: "unavailable",
    message: `could not check that student and teacher share a tokenizer: ${who} did not tokenize a probe text (${why})`,
  };
}

export async function checkSharedTokenizer(
  config: Config,
  studentModel: string,
  teacherModel: string,
): Promise<TokenizerCheck> {
  // Every host of a fleet serves the same policy: the first speaks for its tokenizer.
  const student = {
    baseUrl: fleetHosts(config)[0]?.url ?? config.INFERENCE_BASE_URL,
    apiKey: config.INFERENCE_API_KEY,
  };
  const teacher = teacherEndpoint(config);
  const key = JSON.stringify([student.baseUrl, studentModel, teacher.baseUrl, teacherModel]);
  if ((matched.get(key) ?? 0) > Date.now()) return { ok: true };
  const options = { deadlineMs: 15_000, maxRetries: 2 };
  const [mine, theirs] = await Promise.all([
    tokenize(student, studentModel, { text: PROBE }, options),
    tokenize(teacher, teacherModel, { text: PROBE }, options),
  ]);
  if (mine.kind !== "ok") return notTokenized(`the inference host (model "${studentModel}")`, mine);
  if (theirs.kind !== "ok")
    return notTokenized(`the teacher host (model "${teacherModel}")`, theirs);
  const same =
    mine.value.length === theirs.value.length &&
    mine.value.every((id, i) => id === theirs.value[i]);
  if (!same)
    return {
      ok: false,
      kind: "mismatch",
      message: `student "${studentModel}" and teacher "${teacherModel}" do not share a tokenizer: the same probe text is ${preview(mine.value)} on the inference host and ${preview(theirs.value)} on the teacher host; on-policy distillation scores the student's token ids with the teacher, so both must use one tokenizer`,
    };
  matched.set(key, Date.now() + REMEMBER_MS);
  return { ok: true };
}
