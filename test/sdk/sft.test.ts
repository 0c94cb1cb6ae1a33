import { describe, expect, it } from "vitest";
import {
  buildSftRow,
  type ChatMessage,
  defaultSftCompletion,
  renderChatML,
  SftError,
  type TaskExample,
} from "../../src/sdk";
import { ScriptedEnv } from "./fixtures";

const task = (output: unknown): TaskExample => ({ id: "sft-1", input: "q", output });

describe("the default SFT target", () => {
  it("turns a scalar output into one assistant message", () => {
    expect(defaultSftCompletion(task("42"))).toEqual([{ role: "assistant", content: "42" }]);
    expect(defaultSftCompletion(task(42))).toEqual([{ role: "assistant", content: "42" }]);
  });

  it("keeps {messages: [...]} or a bare list as the target transcript", () => {
    const messages: ChatMessage[] = [
      { role: "assistant", content: "<guess>50</guess>" },
      { role: "user", content: "higher" },
      { role: "assistant", content: "<guess>75</guess>" },
    ];
    expect(defaultSftCompletion(task({ messages }))).toEqual(messages);
    expect(defaultSftCompletion(task(messages))).toEqual(messages);
  });

  it("refuses an example without output", () => {
    expect(() => defaultSftCompletion(task(undefined))).toThrow(SftError);
    expect(() => defaultSftCompletion(task(undefined))).toThrow(/has no output/);
  });
});

describe("SFT rows", () => {
  const env = new ScriptedEnv();
  env.opening = [
    { role: "system", content: "" },
    { role: "user", content: "play" },
  ];

  it("mask the prompt and observations, supervise assistant bodies", async () => {
    const row = await buildSftRow(
      env,
      task([
        { role: "assistant", content: "A1" },
        { role: "tool", content: "obs" },
        { role: "assistant", content: "A2" },
      ]),
      "Be good.",
    );
    expect(row.masking).toBe("role_aware");
    expect(row.promptMessages.map((m) => m.content)).toEqual(["Be good.", "play"]);
    expect(row.mask).toEqual([false, false, true, false, true]);
    expect(row.spans.map(([s, e]) => row.text.slice(s, e))).toEqual([
      "A1<|im_end|>",
      "A2<|im_end|>",
    ]);
    expect(row.text).toBe(
      "<|im_start|>system\nBe good.<|im_end|>\n<|im_start|>user\nplay<|im_end|>\n" +
        "<|im_start|>assistant\nA1<|im_end|>\n<|im_start|>tool\nobs<|im_end|>\n" +
        "<|im_start|>assistant\nA2<|im_end|>\n",
    );
  });

  it("render native tool calls inside the supervised span", () => {
    const { text, spans } = renderChatML(
      [
        {
          role: "assistant",
          content: "Checking.",
          tool_calls: [
            { id: "1", type: "function", function: { name: "f", arguments: '{"a":1}' } },
          ],
        },
      ],
      [true],
    );
    const [span] = spans;
    expect(text.slice(...(span as [number, number]))).toBe(
      'Checking.\n<tool_call>\n{"name": "f", "arguments": {"a":1}}\n</tool_call><|im_end|>',
    );
  });

  it("reject reserved ChatML tokens in any field, naming where", async () => {
    await expect(buildSftRow(env, task("ok <|im_end|> injected"), "")).rejects.toThrow(
      /target message 0 \(assistant\) field content contains the reserved ChatML token "<\|im_end\|>"/,
    );
    await expect(
      buildSftRow(env, task([{ role: "tool", name: "<|im_start|>x", content: "r" }]), ""),
    ).rejects.toThrow(/field name contains the reserved ChatML token "<\|im_start\|>"/);
    await expect(
      buildSftRow(
        env,
        task([
          {
            role: "assistant",
            content: "",
            tool_calls: [
              { id: "1", type: "function", function: { name: "f", arguments: "<|im_end|>" } },
            ],
          },
        ]),
        "",
      ),
    ).rejects.toThrow(/tool_calls\[0\]\.function\.arguments contains the reserved/);
    await expect(buildSftRow(env, task("fine"), "<|im_start|>system")).rejects.toThrow(
      /prompt message 0 \(system\) field content/,
    );
  });

  it("fall back to completion-only for a target that is not a transcript, and say so", async () => {
    const row = await buildSftRow(env, task([{ speaker: "bot", text: "hi" }]), "");
    expect(row.masking).toBe("completion_only");
    expect(row.warnings[0]).toMatch(/not a list of chat messages.*observation masking is unproven/);
    const [span] = row.spans as [[number, number]];
    expect(span[1]).toBe(row.text.length);
    expect(row.text.slice(span[0])).toBe(
      '<|im_start|>assistant\n[{"speaker":"bot","text":"hi"}]<|im_end|>\n',
    );
  });

  it("refuse to invent a target for an example without output", async () => {
    await expect(buildSftRow(env, task(undefined), "")).rejects.toThrow(/has no output/);
  });
});
