import { describe, expect, it } from "vitest";
import exactAnswer from "../../datasets/exact-answer.jsonl?raw";
import guessNumber from "../../datasets/guess-number.jsonl?raw";
import mentalMath from "../../datasets/mental-math.jsonl?raw";
import toolAgent from "../../datasets/tool-agent.jsonl?raw";
import { environmentNames, loadEnvironment } from "../../src/environments/registry";
import { checkEnvironment, parseDatasetJsonl } from "../../src/sdk";

const datasets: Record<string, string> = {
  "exact-answer": exactAnswer,
  "guess-number": guessNumber,
  "mental-math": mentalMath,
  "tool-agent": toolAgent,
};

describe("the environment registry", () => {
  it("knows the built-in environments by name", () => {
    expect(environmentNames()).toEqual(expect.arrayContaining(Object.keys(datasets)));
    expect(loadEnvironment("exact-answer").kind).toBe("single-turn");
    expect(loadEnvironment("guess-number").kind).toBe("multi-turn");
  });

  it("names the registered environments when asked for an unknown one", () => {
    expect(() => loadEnvironment("nope")).toThrow(
      /unknown environment "nope" \(registered: .*guess-number/,
    );
    expect(() => loadEnvironment("toString")).toThrow(/unknown environment/);
  });

  for (const [name, text] of Object.entries(datasets)) {
    it(`${name} passes every offline check on its dataset`, async () => {
      const { examples, problems } = parseDatasetJsonl(text, name);
      const report = await checkEnvironment(loadEnvironment(name), examples, {
        datasetProblems: problems,
      });
      expect(report.checks.filter((c) => !c.ok)).toEqual([]);
      expect(examples.length).toBeGreaterThanOrEqual(8);
    });
  }
});
