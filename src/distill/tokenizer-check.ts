/**
 * Student and teacher must share a tokenizer: the teacher scores the student's token ids, which
 * mean nothing under another vocabulary. Checked when an OPD group starts, by tokenizing the
 * same probe text on both hosts (`/tokenize`); a match is remembered for a while per isolate,
 * so a run of groups pays for it once.
 */
import { type Config, teacherEndpoint } from "../config";
import { tokenize } from "../inference/tokenize";

/** Words, digits, punctuation, non-Latin scripts and markup: vocabularies rarely agree by chance. */
const PROBE =
  'edgeroll tokenizer probe: Grüße, naïve café — 数字 12345 ¿qué? <tool_call>{"name": "f", "arguments": [1, 2.5]}</tool_call>\n\tend.';

const REMEMBER_MS = 10 * 60_000;
const matched = new Map<string, number>();

export type TokenizerCheck =
  | { ok: true }
  | {
      ok: false;
      status: 400 | 503;
      code: "tokenizer_mismatch" | "tokenizer_check_unavailable";
      message: string;
    };

const preview = (ids: Int32Array) =>
  `${ids.length} ids [${Array.from(ids.subarray(0, 6)).join(", ")}${ids.length > 6 ? ", …" : ""}]`;

export async function checkSharedTokenizer(
  config: Config,
  studentModel: string,
  teacherModel: string,
): Promise<TokenizerCheck> {
  const student = { baseUrl: config.INFERENCE_BASE_URL, apiKey: config.INFERENCE_API_KEY };
  const teacher = teacherEndpoint(config);
  const key = JSON.stringify([student.baseUrl, studentModel, teacher.baseUrl, teacherModel]);
  if ((matched.get(key) ?? 0) > Date.now()) return { ok: true };
  const options = { deadlineMs: 15_000, maxRetries: 2 };
  const [mine, theirs] = await Promise.all([
    tokenize(student, studentModel, { text: PROBE }, options),
    tokenize(teacher, teacherModel, { text: PROBE }, options),
  ]);
  for (const [who, outcome] of [
    [`the inference host (${studentModel})`, mine],
    [`the teacher host (${teacherModel})`, theirs],
  ] as const) {
    if (outcome.kind !== "ok") {
      const why = "message" in outcome ? outcome.message : outcome.kind;
      return {
        ok: false,
        status: 503,
        code: "tokenizer_check_unavailable",
        message: `could not check that student and teacher share a tokenizer: ${who} did not tokenize a probe text (${why})`,
      };
    }
  }
  if (mine.kind !== "ok" || theirs.kind !== "ok") throw new Error("unreachable");
  const same =
    mine.value.length === theirs.value.length &&
    mine.value.every((id, i) => id === theirs.value[i]);
  if (!same)
    return {
      ok: false,
      status: 400,
      code: "tokenizer_mismatch",
      message: `student "${studentModel}" and teacher "${teacherModel}" do not share a tokenizer: the same probe text is ${preview(mine.value)} on the inference host and ${preview(theirs.value)} on the teacher host; on-policy distillation scores the student's token ids with the teacher, so both must use one tokenizer`,
    };
  matched.set(key, Date.now() + REMEMBER_MS);
  return { ok: true };
}
