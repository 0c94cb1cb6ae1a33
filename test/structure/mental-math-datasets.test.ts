/** mental-math's training and held-out drills: drawn once from a fixed seed, and disjoint. */
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import {
  DATASET_FILES,
  HELDOUT_SIZE,
  jsonl,
  mentalMathSplits,
  TRAIN_SIZE,
} from "../../scripts/mental-math-datasets";
import { MentalMath } from "../../src/environments/mental-math";
import { exampleProblems } from "../../src/sdk";

const splits = mentalMathSplits();
const drill = (e: { metadata: { questions: unknown } }) => JSON.stringify(e.metadata.questions);

describe("datasets/mental-math*.jsonl", () => {
  it("are the fixed-seed draw (npm run datasets:mental-math)", () => {
    expect(readFileSync(DATASET_FILES.train, "utf8")).toBe(jsonl(splits.train));
    expect(readFileSync(DATASET_FILES.heldout, "utf8")).toBe(jsonl(splits.heldout));
    expect([splits.train.length, splits.heldout.length]).toEqual([TRAIN_SIZE, HELDOUT_SIZE]);
  });

  it("share no example: no id and no drill of the held-out split is a training one", () => {
    const trainIds = new Set(splits.train.map((e) => e.id));
    const trainDrills = new Set(splits.train.map(drill));
    expect(splits.heldout.filter((e) => trainIds.has(e.id))).toEqual([]);
    expect(splits.heldout.filter((e) => trainDrills.has(drill(e)))).toEqual([]);
    const all = [...splits.train, ...splits.heldout];
    expect(new Set(all.map(drill)).size).toBe(all.length);
  });

  it("hold drills mental-math plays, none of whose answers the context gives away", () => {
    const env = new MentalMath();
    for (const example of [...splits.train, ...splits.heldout]) {
      expect(exampleProblems(env, example), example.id).toEqual([]);
      const sums = example.metadata.questions.map(([a, b]) => a + b);
      expect(new Set(sums).size, example.id).toBe(sums.length);
    }
  });
});
