/**
 * The simulator as a judge (model `judge`): it grades the answer it is shown against the
 * reference it is shown, reading them from the prompt's last `Reference answer:` and `Answer to
 * grade:` lines, and answers the JSON verdict judges are asked for: score 1 when they match
 * (case, spacing and trailing punctuation aside), 0 when they do not. A prompt without both lines
 * gets a verdict that says so, with score 0. With `garbage:P`, a judge answers prose instead.
 */
import type { SimMessage } from "./policies";

const normalise = (text: string) =>
  text
    .trim()
    .toLowerCase()
    .replace(/[.!?,;:]+$/, "")
    .replace(/\s+/g, " ");

function lastLine(prompt: string, label: string): string | null {
  const lines = prompt.split("\n").filter((line) => line.startsWith(label));
  const line = lines.at(-1);
  return line === undefined ? null : line.slice(label.length);
}

export function judgeVerdict(messages: readonly SimMessage[]): string {
  const prompt = messages.map((m) => m.content).join("\n");
  const reference = lastLine(prompt, "Reference answer:");
  const answer = lastLine(prompt, "Answer to grade:");
  if (reference === null || answer === null)
    return JSON.stringify({
      score: 0,
      reason: "the prompt has no 'Reference answer:' and 'Answer to grade:' lines",
    });
  const match = normalise(reference) === normalise(answer);
  return JSON.stringify({
    score: match ? 1 : 0,
    reason: match ? "the answer matches the reference" : "the answer differs from the reference",
  });
}

/** What a judge with `garbage` answers: no verdict at all. */
export const GARBAGE_VERDICT = "Looks mostly right to me, I would give it a good score.";
