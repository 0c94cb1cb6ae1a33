/** The files `edgeroll env new` writes: a runnable starter environment, its dataset and a test. */

export type StarterKind = "multi-turn" | "single-turn";

export interface StarterNames {
  name: string;
  className: string;
}

const multiTurn = ({ name, className }: StarterNames) => `/**
 * ${name}: a starter multi-turn environment (guess a secret number from higher/lower hints).
 * Edit it into your task; \`npx edgeroll env check ${name}\` tells you what still breaks.
 */
import { z } from "zod";
import {
  type ChatMessage,
  type EnvironmentEpisode,
  EnvironmentMultiTurn,
  type EnvironmentStepResultInput,
  exampleMetadata,
  goldTranscript,
  type RewardResultInput,
  sampledTurns,
  type TaskExample,
} from "../sdk";

/** The task data each dataset row carries in \`metadata\`. */
const MetadataSchema = z.object({ secret: z.number().int().min(1).max(100) });
/** What a row must hold: the API refuses any other with a 422 naming the fields. */
const ExampleSchema = z.object({ metadata: MetadataSchema });

function parseGuess(action: string): number | null {
  const match = /<guess>\\s*(\\d+)\\s*<\\/guess>/.exec(action);
  return match ? Number(match[1]) : null;
}

export class ${className} extends EnvironmentMultiTurn {
  /** Recorded on every episode (\`env_version\`): bump it when the rules or the score change. */
  override readonly version = "1";
  override readonly exampleSchema = ExampleSchema;

  maxEpisodeTurns(): number {
    return 7;
  }

  startEpisode(example: TaskExample): ChatMessage[] {
    const rules = "Guess with <guess>N</guess>; I answer higher, lower or correct.";
    return [{ role: "user", content: \`\${example.input}\\n\\n\${rules}\` }];
  }

  // Stateless: the reply depends only on the example and the current action. Environments
  // with state rebuild it from \`messages\` (see replayStep in the SDK).
  stepEpisode(
    example: TaskExample,
    _messages: readonly ChatMessage[],
    assistantResponse: string,
  ): EnvironmentStepResultInput {
    const { secret } = exampleMetadata(MetadataSchema, example);
    const guess = parseGuess(assistantResponse);
    const reply = (content: string) => [{ role: "user" as const, content }];
    if (guess === null) return { done: false, messages: reply("Reply with <guess>N</guess>.") };
    if (guess === secret) return { done: true, messages: reply("correct") };
    return { done: false, messages: reply(guess < secret ? "higher" : "lower") };
  }

  scoreEpisode(example: TaskExample, episode: EnvironmentEpisode): RewardResultInput {
    const { secret } = exampleMetadata(MetadataSchema, example);
    const perTurn = sampledTurns(episode).map((turn) =>
      parseGuess(turn.content) === secret ? 1 : 0,
    );
    return {
      score: perTurn.includes(1) ? 1 : 0,
      threshold: 1,
      metadata: { per_turn_rewards: perTurn },
    };
  }

  /** The gold transcript, for SFT and for \`env check\`: a binary search. */
  override sftCompletion(example: TaskExample): Promise<ChatMessage[]> {
    const { secret } = exampleMetadata(MetadataSchema, example);
    let [low, high] = [1, 100];
    return goldTranscript(this, example, () => {
      const guess = Math.floor((low + high) / 2);
      if (guess < secret) low = guess + 1;
      if (guess > secret) high = guess - 1;
      return \`<guess>\${guess}</guess>\`;
    });
  }
}
`;

const singleTurn = ({ name, className }: StarterNames) => `/**
 * ${name}: a starter single-turn environment (one prompt, one reply scored against \`output\`).
 * Edit it into your task; \`npx edgeroll env check ${name}\` tells you what still breaks.
 */
import { z } from "zod";
import {
  type ChatMessage,
  EnvironmentSingleTurn,
  type RewardResultInput,
  type TaskExample,
} from "../sdk";

/** The reply is scored against \`output\`: the API refuses a row without one (a 422). */
const ExampleSchema = z.object({ output: z.string() });

export class ${className} extends EnvironmentSingleTurn {
  /** Recorded on every episode (\`env_version\`): bump it when the rules or the score change. */
  override readonly version = "1";
  override readonly exampleSchema = ExampleSchema;

  buildPromptMessages(example: TaskExample): ChatMessage[] {
    return [{ role: "user", content: \`\${example.input}\\nAnswer with the answer only.\` }];
  }

  scoreResponse(example: TaskExample, responseText: string): RewardResultInput {
    const expected = String(example.output ?? "")
      .trim()
      .toLowerCase();
    return { score: responseText.trim().toLowerCase() === expected ? 1 : 0, threshold: 1 };
  }
}
`;

function datasetRows(name: string, kind: StarterKind): object[] {
  if (kind === "multi-turn") {
    return [42, 7, 93, 64].map((secret, i) => ({
      id: `${name}-${i + 1}`,
      input: "Find the secret whole number between 1 and 100.",
      metadata: { secret },
    }));
  }
  return [
    ["What is 2 + 2?", "4"],
    ["What is the capital of Italy?", "Rome"],
    ["What colour do you get by mixing blue and yellow?", "green"],
  ].map(([input, output], i) => ({ id: `${name}-${i + 1}`, input, output }));
}

const test = ({ name, className }: StarterNames) => `import { describe, expect, it } from "vitest";
import datasetText from "../../datasets/${name}.jsonl?raw";
import { ${className} } from "../../src/environments/${name}";
import { checkEnvironment, parseDatasetJsonl, runEpisode, type TaskExample } from "../../src/sdk";

const env = new ${className}();
const { examples } = parseDatasetJsonl(datasetText);

describe("${name}", () => {
  it("passes every offline check", async () => {
    const report = await checkEnvironment(env, examples);
    expect(report.checks.filter((check) => !check.ok)).toEqual([]);
  });

  it("gives a policy that never answers no reward", async () => {
    const example = examples[0] as TaskExample;
    const episode = await runEpisode(env, example, { policy: () => "I give up." });
    const reward = await env.scoreEpisode(example, episode);
    expect(reward.score).toBe(0);
  });
});
`;

/** File contents keyed by what they are. */
export function starterFiles(kind: StarterKind, names: StarterNames) {
  return {
    environment: (kind === "multi-turn" ? multiTurn : singleTurn)(names),
    dataset: `${datasetRows(names.name, kind)
      .map((row) => JSON.stringify(row))
      .join("\n")}\n`,
    test: test(names),
  };
}
