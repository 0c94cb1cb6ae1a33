/**
 * `npm run datasets:mental-math`: writes mental-math's two splits, datasets/mental-math.jsonl
 * (the training drills: the warm-up's SFT rows and GRPO's groups come from these) and
 * datasets/mental-math-heldout.jsonl (drills nothing trains on, for examples/train's held-out
 * evaluation). One pool of distinct drills is drawn from a fixed seed and cut in two, so the
 * splits are disjoint by construction; a test checks the committed files against a fresh draw.
 */
import { writeFileSync } from "node:fs";
import { resolve } from "node:path";
import { seededRandom } from "../src/utils/random";

export const SPLIT_SEED = 27;
export const TRAIN_SIZE = 192;
export const HELDOUT_SIZE = 64;
const QUESTIONS = 3;
const INPUT = "A quick drill of sums.";

export type Question = [number, number];
export interface MentalMathExample {
  id: string;
  input: string;
  metadata: { questions: Question[] };
}

/**
 * One drill: single-digit sums whose answers all differ, so no later question's answer is in
 * the context already (as an earlier answer, or in the "Wrong: a + b = N" reply).
 */
function drawDrill(random: () => number): Question[] {
  const questions: Question[] = [];
  while (questions.length < QUESTIONS) {
    const q: Question = [Math.floor(random() * 10), Math.floor(random() * 10)];
    if (!questions.some(([a, b]) => a + b === q[0] + q[1])) questions.push(q);
  }
  return questions;
}

/** The pool of distinct drills, shuffled, cut into the training and held-out splits. */
export function mentalMathSplits(): { train: MentalMathExample[]; heldout: MentalMathExample[] } {
  const random = seededRandom(SPLIT_SEED);
  const pool = new Map<string, Question[]>();
  while (pool.size < TRAIN_SIZE + HELDOUT_SIZE) {
    const drill = drawDrill(random);
    pool.set(JSON.stringify(drill), drill);
  }
  const drills = [...pool.values()];
  for (let i = drills.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    [drills[i], drills[j]] = [drills[j] as Question[], drills[i] as Question[]];
  }
  const example = (prefix: string) => (questions: Question[], i: number) => ({
    id: `${prefix}-${String(i + 1).padStart(3, "0")}`,
    input: INPUT,
    metadata: { questions },
  });
  return {
    train: drills.slice(0, TRAIN_SIZE).map(example("mm")),
    heldout: drills.slice(TRAIN_SIZE).map(example("mm-heldout")),
  };
}

export const DATASET_FILES = {
  train: resolve(import.meta.dirname, "../datasets/mental-math.jsonl"),
  heldout: resolve(import.meta.dirname, "../datasets/mental-math-heldout.jsonl"),
};

export const jsonl = (examples: readonly MentalMathExample[]) =>
  examples.map((e) => `${JSON.stringify(e)}\n`).join("");

if (import.meta.filename === process.argv[1]) {
  const splits = mentalMathSplits();
  writeFileSync(DATASET_FILES.train, jsonl(splits.train));
  writeFileSync(DATASET_FILES.heldout, jsonl(splits.heldout));
  console.log(
    `wrote ${splits.train.length} training and ${splits.heldout.length} held-out drills (seed ${SPLIT_SEED})`,
  );
}
