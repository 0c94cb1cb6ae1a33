import { describe, expect, it } from "vitest";
import {
  type ActionReducer,
  type ChatMessage,
  currentAction,
  ReplayInvariantError,
  replayHistory,
  replayStep,
  runEpisode,
  sampledMessage,
  type TaskExample,
} from "../../src/sdk";
import { example, ScriptedEnv } from "./fixtures";

/** Sums the numbers the model says; counts external effects made for current actions. */
function counter(effects: string[]): ActionReducer<number> {
  return {
    initial: () => 0,
    apply(total, action, context) {
      if (context.isCurrent) effects.push(`${context.example.id}#${context.turnIndex}`);
      return total + Number(action.content);
    },
  };
}

const transcript: ChatMessage[] = [
  { role: "user", content: "count" },
  { role: "assistant", content: "100", metadata: { note: "a demonstration, not sampled" } },
  sampledMessage({ content: "1" }),
  { role: "assistant", content: "1000" }, // an environment narrator speaking as assistant
  sampledMessage({ content: "2" }),
];

describe("replay invariant 1: messages[-1] is the current action", () => {
  it("accepts a transcript ending with the sampled action being stepped", () => {
    expect(currentAction(transcript, "2").content).toBe("2");
  });

  it("rejects a transcript whose last message is not that action", () => {
    expect(() => currentAction(transcript, "3")).toThrow(ReplayInvariantError);
    expect(() => currentAction(transcript.slice(0, -1), "1000")).toThrow(
      /must be the sampled action/,
    );
  });

  it("replays messages[:-1] and applies the current action once", () => {
    const effects: string[] = [];
    const step = replayStep(example, transcript, "2", counter(effects));
    expect(step).toEqual({ before: 1, after: 3, turnIndex: 1 });
    expect(effects).toEqual(["ex-1#1"]);
  });
});

describe("replay invariant 2: sampled actions are told apart from other assistant text", () => {
  it("replays only sampled actions, not demonstrations or environment assistant messages", () => {
    expect(replayHistory(example, transcript, counter([]))).toBe(3);
  });
});

describe("replay invariant 3: historical replay is pure", () => {
  it("performs each external effect once across a whole episode", async () => {
    const effects: string[] = [];
    const reducer = counter(effects);
    const env = new ScriptedEnv();
    env.turns = 5;
    env.stepEpisode = (task: TaskExample, messages, response) => {
      const { after } = replayStep(task, messages, response, reducer);
      return { done: false, messages: [{ role: "user", content: `total ${after}` }] };
    };
    const episode = await runEpisode(env, example, { policy: (_m, t) => String(t.index + 1) });
    expect(effects).toEqual(["ex-1#0", "ex-1#1", "ex-1#2", "ex-1#3", "ex-1#4"]);
    expect(episode.messages.at(-1)?.content).toBe("total 15");
  });

  it("rebuilds the same state from the same transcript every time", () => {
    const a = replayStep(example, transcript, "2", counter([]));
    const b = replayStep(example, structuredClone(transcript), "2", counter([]));
    expect(a).toEqual(b);
  });
});
