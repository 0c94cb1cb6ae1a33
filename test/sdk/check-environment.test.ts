import { describe, expect, it } from "vitest";
import { GuessNumber } from "../../src/environments/guess-number";
import {
  CHECKS,
  type ChatMessage,
  type CheckReport,
  checkEnvironment,
  type EnvironmentEpisode,
  type RewardResultInput,
  type TaskExample,
} from "../../src/sdk";

const examples: TaskExample[] = [
  { id: "g1", input: "find it", metadata: { secret: 37 } },
  { id: "g2", input: "find it", metadata: { secret: 80 } },
];

function failed(report: CheckReport) {
  return Object.fromEntries(report.checks.filter((c) => !c.ok).map((c) => [c.name, c.failures]));
}

describe("offline environment check", () => {
  it("passes a well-behaved environment and says what it measured", async () => {
    const report = await checkEnvironment(new GuessNumber(), examples);
    expect(failed(report)).toEqual({});
    expect(report.ok).toBe(true);
    const gold = report.checks.find((c) => c.name === CHECKS.goldReward);
    expect(gold?.detail).toBe("mean gold score 1.00, 2/2 successful");
  });

  it("fails a non-deterministic step, naming the example and turn", async () => {
    class Flaky extends GuessNumber {
      override stepEpisode(
        example: TaskExample,
        messages: readonly ChatMessage[],
        response: string,
      ) {
        const result = super.stepEpisode(example, messages, response);
        return { ...result, metadata: { roll: Math.random() } };
      }
    }
    const report = await checkEnvironment(new Flaky(), examples);
    expect(report.ok).toBe(false);
    expect(failed(report)[CHECKS.stepDeterminism]?.[0]).toMatch(
      /^example g1, turn 0: stepEpisode gave different results for the same transcript/,
    );
  });

  it("fails a NaN reward, naming the field", async () => {
    class NaNReward extends GuessNumber {
      override scoreEpisode(): RewardResultInput {
        return { score: Number.NaN, threshold: 1 };
      }
    }
    const report = await checkEnvironment(new NaNReward(), examples);
    expect(failed(report)[CHECKS.rewardsFinite]?.[0]).toMatch(
      /^example g1, gold episode: scoreEpisode: score: .*NaN/,
    );
  });

  it("fails when every gold answer scores zero", async () => {
    class Stingy extends GuessNumber {
      override scoreEpisode(): RewardResultInput {
        return { score: 0, threshold: 1 };
      }
    }
    const report = await checkEnvironment(new Stingy(), examples);
    expect(failed(report)[CHECKS.goldReward]).toEqual([
      "example g1: the gold answer scored 0 (threshold 1)",
      "example g2: the gold answer scored 0 (threshold 1)",
    ]);
  });

  it("fails when one row's gold answer does not succeed, naming only that row", async () => {
    // As when one row of a dataset carries a wrong answer: the others pass.
    class OneWrong extends GuessNumber {
      override scoreEpisode(example: TaskExample, episode: EnvironmentEpisode): RewardResultInput {
        const reward = super.scoreEpisode(example, episode);
        return example.id === "g2" ? { ...reward, score: 0.2 } : reward;
      }
    }
    const report = await checkEnvironment(new OneWrong(), examples);
    expect(report.ok).toBe(false);
    expect(failed(report)[CHECKS.goldReward]).toEqual([
      "example g2: the gold answer scored 0.2 (threshold 1)",
    ]);
  });

  it("without a threshold, a gold answer succeeds when it scores above zero", async () => {
    class Unthresholded extends GuessNumber {
      override scoreEpisode(example: TaskExample): RewardResultInput {
        return { score: example.id === "g1" ? 0.5 : 0 };
      }
    }
    const report = await checkEnvironment(new Unthresholded(), examples);
    expect(failed(report)[CHECKS.goldReward]).toEqual(["example g2: the gold answer scored 0"]);
  });

  it("fails when no example has a gold answer to replay", async () => {
    class NoGold extends GuessNumber {
      override async sftCompletion(): Promise<ChatMessage[]> {
        return [];
      }
    }
    const report = await checkEnvironment(new NoGold(), examples);
    expect(failed(report)[CHECKS.goldReward]?.[0]).toMatch(/no example has a gold answer/);
  });

  it("fails per_turn_rewards of the wrong length", async () => {
    class Short extends GuessNumber {
      override scoreEpisode(example: TaskExample, episode: EnvironmentEpisode): RewardResultInput {
        const reward = super.scoreEpisode(example, episode);
        return { ...reward, metadata: { per_turn_rewards: [1] } };
      }
    }
    const report = await checkEnvironment(new Short(), examples);
    expect(failed(report)[CHECKS.perTurn]?.[0]).toMatch(
      /per_turn_rewards has 1 values for \d+ sampled turns/,
    );
  });

  it("fails an environment that throws on a malformed action", async () => {
    class Brittle extends GuessNumber {
      override stepEpisode(
        example: TaskExample,
        messages: readonly ChatMessage[],
        response: string,
      ) {
        if (!response.includes("<guess>")) throw new Error("cannot parse action");
        return super.stepEpisode(example, messages, response);
      }
    }
    const report = await checkEnvironment(new Brittle(), examples);
    expect(failed(report)[CHECKS.malformedActions]?.[0]).toMatch(
      /^example g1, malformed actions: Error: cannot parse action/,
    );
  });

  it("fails malformed environment messages", async () => {
    class Sloppy extends GuessNumber {
      override stepEpisode() {
        return { done: false, messages: [{ role: "narrator", content: "hmm" }] } as never;
      }
    }
    const report = await checkEnvironment(new Sloppy(), examples);
    expect(failed(report)[CHECKS.stepShape]?.[0]).toMatch(/stepEpisode: messages\[0\]\.role/);
  });

  it("fails random scoring", async () => {
    class Dice extends GuessNumber {
      override scoreEpisode(): RewardResultInput {
        return { score: Math.random(), threshold: 2 };
      }
    }
    const report = await checkEnvironment(new Dice(), examples);
    expect(failed(report)[CHECKS.scoreDeterminism]?.[0]).toMatch(
      /two scorings of the same episode differed/,
    );
  });

  it("reports dataset problems and an empty dataset", async () => {
    const report = await checkEnvironment(new GuessNumber(), [], { datasetProblems: ["d:1: bad"] });
    expect(failed(report)[CHECKS.dataset]).toEqual(["d:1: bad", "the dataset has no examples"]);
  });

  it("fails an opening that breaks the contract", async () => {
    class Mute extends GuessNumber {
      override startEpisode(): ChatMessage[] {
        return [];
      }
    }
    const report = await checkEnvironment(new Mute(), examples);
    expect(failed(report)[CHECKS.opening]?.[0]).toMatch(
      /^example g1: EnvironmentContractError: startEpisode/,
    );
  });
});
