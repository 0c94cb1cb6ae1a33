import { describe, expect, it } from "vitest";
import {
  EnvironmentContractError,
  EnvironmentSingleTurn,
  isSampledAction,
  runEpisode,
  type TaskExample,
} from "../../src/sdk";
import { counting, example, ScriptedEnv } from "./fixtures";

describe("the reference episode loop", () => {
  it("runs until the turn budget when the environment never says done", async () => {
    const env = new ScriptedEnv();
    const episode = await runEpisode(env, example, { policy: counting });
    expect(env.stepCalls.map((c) => c.assistantResponse)).toEqual(["a0", "a1", "a2"]);
    expect(episode.messages.map((m) => m.content)).toEqual([
      "hello",
      "a0",
      "echo a0",
      "a1",
      "echo a1",
      "a2",
      "echo a2",
    ]);
  });

  it("stops at the first done", async () => {
    const env = new ScriptedEnv();
    env.script = [{ done: false, messages: [{ role: "user", content: "go on" }] }, { done: true }];
    const episode = await runEpisode(env, example, { policy: counting });
    expect(env.stepCalls).toHaveLength(2);
    expect(episode.messages.map((m) => m.content)).toEqual(["hello", "a0", "go on", "a1"]);
  });

  it("passes step a transcript that already ends with the action being stepped", async () => {
    const env = new ScriptedEnv();
    await runEpisode(env, example, { policy: counting });
    for (const call of env.stepCalls) {
      const last = call.messages.at(-1);
      expect(last?.role).toBe("assistant");
      expect(last?.content).toBe(call.assistantResponse);
    }
    expect(env.stepCalls[1]?.messages).toHaveLength(4);
  });

  it("appends only the environment's new messages after the action, never the action again", async () => {
    const env = new ScriptedEnv();
    env.turns = 1;
    env.script = [
      {
        done: true,
        messages: [
          { role: "tool", content: "result" },
          { role: "user", content: "next" },
        ],
      },
    ];
    const episode = await runEpisode(env, example, { policy: () => "act" });
    expect(episode.messages.map((m) => [m.role, m.content])).toEqual([
      ["user", "hello"],
      ["assistant", "act"],
      ["tool", "result"],
      ["user", "next"],
    ]);
  });

  it("uses final_response_text when given, else the last action, turn by turn", async () => {
    const env = new ScriptedEnv();
    env.script = [
      { done: false, finalResponseText: "override" },
      { done: false },
      { done: true, finalResponseText: "final" },
    ];
    expect((await runEpisode(env, example, { policy: counting })).responseText).toBe("final");

    const noOverrideLast = new ScriptedEnv();
    noOverrideLast.script = [{ done: false, finalResponseText: "override" }, { done: true }];
    const episode = await runEpisode(noOverrideLast, example, { policy: counting });
    expect(episode.responseText).toBe("a1");

    const emptyOverride = new ScriptedEnv();
    emptyOverride.script = [{ done: true, finalResponseText: "" }];
    expect((await runEpisode(emptyOverride, example, { policy: counting })).responseText).toBe("");
  });

  it("marks sampled actions, and only them, with metadata.sampled", async () => {
    const env = new ScriptedEnv();
    env.opening = [
      { role: "user", content: "demo question" },
      { role: "assistant", content: "demo answer" },
      { role: "user", content: "your turn" },
    ];
    env.script = [{ done: true, messages: [{ role: "assistant", content: "env narrator" }] }];
    const episode = await runEpisode(env, example, { policy: () => "act" });
    expect(episode.messages.filter(isSampledAction).map((m) => m.content)).toEqual(["act"]);
    expect(episode.turns.map((t) => [t.role, t.metadata.sampled])).toEqual([
      ["assistant", true],
      ["assistant", undefined],
    ]);
  });

  it("refuses environment messages that forge the sampled mark", async () => {
    const env = new ScriptedEnv();
    env.script = [
      { done: true, messages: [{ role: "assistant", content: "x", metadata: { sampled: true } }] },
    ];
    await expect(runEpisode(env, example, { policy: counting })).rejects.toThrow(
      /stepEpisode: messages\[0\]\.metadata\.sampled is reserved/,
    );
  });

  it("excludes the opening prompt from turns and keeps each step's metadata under steps", async () => {
    const env = new ScriptedEnv();
    const episode = await runEpisode(env, example, { policy: counting });
    expect(episode.turns).toHaveLength(6);
    expect(episode.metadata.steps).toEqual([{ turn: 0 }, { turn: 1 }, { turn: 2 }]);
  });

  it("makes the run's prompt text the system message when the opening has none", async () => {
    const env = new ScriptedEnv();
    const episode = await runEpisode(env, example, { policy: counting, promptText: "Be brief." });
    expect(episode.messages[0]).toEqual({ role: "system", content: "Be brief." });
    expect(episode.messages[1]?.content).toBe("hello");
  });

  it("fills an empty system message with the prompt text and keeps a non-empty one", async () => {
    const empty = new ScriptedEnv();
    empty.opening = [
      { role: "system", content: "  " },
      { role: "user", content: "hi" },
    ];
    const filled = await runEpisode(empty, example, { policy: counting, promptText: "Be brief." });
    expect(filled.messages.slice(0, 2).map((m) => m.content)).toEqual(["Be brief.", "hi"]);

    const own = new ScriptedEnv();
    own.opening = [
      { role: "system", content: "Mine." },
      { role: "user", content: "hi" },
    ];
    const kept = await runEpisode(own, example, { policy: counting, promptText: "Be brief." });
    expect(kept.messages.slice(0, 2).map((m) => m.content)).toEqual(["Mine.", "hi"]);
  });

  it("caps the environment's budget with maxTurns", async () => {
    const env = new ScriptedEnv();
    await runEpisode(env, example, { policy: counting, maxTurns: 2 });
    expect(env.stepCalls).toHaveLength(2);
  });

  it("reports the trajectory length from the last generation's usage, and the latency", async () => {
    const env = new ScriptedEnv();
    let clock = 1000;
    const episode = await runEpisode(env, example, {
      now: () => (clock += 250),
      policy: (_m, turn) => ({
        content: `a${turn.index}`,
        usage: { promptTokens: 10 * (turn.index + 1), completionTokens: 3 },
      }),
    });
    expect(episode.totalTokens).toBe(33);
    expect(episode.latencyMs).toBe(250);
  });

  it("rejects a malformed step result naming the field at fault", async () => {
    const env = new ScriptedEnv();
    env.script = [{ done: true, messages: [{ role: "robot", content: "beep" }] } as never];
    const failure = runEpisode(env, example, { policy: counting });
    await expect(failure).rejects.toBeInstanceOf(EnvironmentContractError);
    await expect(failure).rejects.toThrow(/stepEpisode: .*messages\[0\]\.role/s);
  });

  it("rejects Python-style snake_case fields instead of ignoring them", async () => {
    const env = new ScriptedEnv();
    env.script = [{ done: true, final_response_text: "x" } as never];
    await expect(runEpisode(env, example, { policy: counting })).rejects.toThrow(
      /final_response_text/,
    );
  });

  it("rejects a turn budget that is not a positive integer", async () => {
    for (const turns of [0, -1, 1.5, Number.NaN]) {
      const env = new ScriptedEnv();
      env.turns = turns;
      await expect(runEpisode(env, example, { policy: counting })).rejects.toThrow(
        /maxEpisodeTurns: must return a positive integer/,
      );
    }
  });

  it("rejects an empty or malformed opening", async () => {
    const env = new ScriptedEnv();
    env.opening = [];
    await expect(runEpisode(env, example, { policy: counting })).rejects.toThrow(/startEpisode/);
  });

  it("does not let an environment rewrite the recorded transcript", async () => {
    const env = new ScriptedEnv();
    env.stepEpisode = (_e, messages) => {
      (messages as unknown[]).length = 0;
      return { done: true };
    };
    const episode = await runEpisode(env, example, { policy: counting });
    expect(episode.messages.map((m) => m.content)).toEqual(["hello", "a0"]);
  });
});

class Echo extends EnvironmentSingleTurn {
  buildPromptMessages(task: TaskExample) {
    return [{ role: "user" as const, content: task.input }];
  }
  scoreResponse(task: TaskExample, responseText: string) {
    return { score: responseText === task.output ? 1 : 0, threshold: 1 };
  }
}

describe("single-turn environments", () => {
  it("run as one-turn episodes through the same loop", async () => {
    const env = new Echo();
    const policyCalls: number[] = [];
    const episode = await runEpisode(env, example, {
      promptText: "System says hi.",
      policy: (_m, turn) => {
        policyCalls.push(turn.index);
        return "all said";
      },
    });
    expect(policyCalls).toEqual([0]);
    expect(env.maxEpisodeTurns()).toBe(1);
    expect(episode.messages.map((m) => m.role)).toEqual(["system", "user", "assistant"]);
    expect(episode.responseText).toBe("all said");
    expect(await env.scoreEpisode(example, episode)).toEqual({ score: 1, threshold: 1 });
  });
});
