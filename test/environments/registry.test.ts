import { describe, expect, it } from "vitest";
import exactAnswer from "../../datasets/exact-answer.jsonl?raw";
import guessNumber from "../../datasets/guess-number.jsonl?raw";
import judgedAnswer from "../../datasets/judged-answer.jsonl?raw";
import mentalMath from "../../datasets/mental-math.jsonl?raw";
import toolAgent from "../../datasets/tool-agent.jsonl?raw";
import { environmentNames, loadEnvironment } from "../../src/environments/registry";
import { parseVerdict } from "../../src/judges/verdict";
import { checkEnvironment, type Judge, JudgeError, parseDatasetJsonl } from "../../src/sdk";
import { judgeVerdict } from "../../src/sim/judge";

/** The simulator's judge, in process: it grades an answer against the reference it is shown. */
const simulatedJudge: Judge = {
  async grade(request) {
    const parsed = parseVerdict(judgeVerdict(request.messages));
    if (!parsed.ok) throw new JudgeError(parsed.problem);
    return parsed.verdict;
  },
};

const datasets: Record<string, string> = {
  "exact-answer": exactAnswer,
  "guess-number": guessNumber,
  "judged-answer": judgedAnswer,
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
        judge: simulatedJudge,
      });
      expect(report.checks.filter((c) => !c.ok)).toEqual([]);
      expect(examples.length).toBeGreaterThanOrEqual(8);
    });
  }
});
