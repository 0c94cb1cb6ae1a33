/**
 * The prompt of a token-in generation (`generation: "tokens"`), built with the host's
 * tokenizer: the opening messages rendered once, then each turn the previous sequence, the
 * closing and the bridge of the environment's new messages (src/tokens/token-in.ts). Every
 * `/tokenize` call is part of the generation's attempt: under its deadline, out of its retries.
 */
import type { InferenceEndpoint } from "../../inference/client";
import type { CallOutcome } from "../../inference/retries";
import { type TokenizeInput, tokenize } from "../../inference/tokenize";
import { type ChatMessage, isSampledAction } from "../../sdk";
import {
  bridgeOf,
  closingOf,
  DUMMY_CONVERSATION,
  DUMMY_REPLY,
  nextPrompt,
  TemplateSeamError,
} from "../../tokens/token-in";
import type { TokensTable } from "../storage/tokens";

type NotOk = Exclude<CallOutcome<unknown>, { kind: "ok" }>;

export type PromptOutcome =
  /** `retries`: the attempt's retries the tokenizer used, which the generation no longer has. */
  | { kind: "ok"; ids: Int32Array; retries: number }
  | NotOk
  /** The host's template cannot be extended by ids (token-in.ts says where that happens). */
  | { kind: "unusable"; detail: string };

/** The template's seams, as the host's tokenizer measured them. */
export interface Seams {
  reply: Int32Array;
  closing: Int32Array;
}

/**
 * A group's seams, measured once by the first episode that needs them and shared by the others
 * (the template does not change under a running group); forgotten if the measuring failed.
 */
export interface SeamsCache {
  measuring: Promise<
    { kind: "ok"; value: Seams } | NotOk | { kind: "unusable"; detail: string }
  > | null;
}

/** What building an episode's prompt needs of its group. */
export interface PromptContext {
  endpoint: InferenceEndpoint;
  model: string;
  /** What each episode's last turn left. */
  tokens: Pick<TokensTable, "sequence">;
  seams: SeamsCache;
}

export interface PromptBudget {
  deadlineAt: number;
  maxRetries: number;
  maxInlineBackoffMs: number;
}

/** Tokenizer calls sharing one budget: each gets the time and the retries the last ones left. */
function tokenizer(context: PromptContext, budget: PromptBudget) {
  let retries = 0;
  return {
    retries: () => retries,
    async ids(input: TokenizeInput): Promise<CallOutcome<Int32Array>> {
      const outcome = await tokenize(context.endpoint, context.model, input, {
        deadlineMs: Math.max(0, budget.deadlineAt - Date.now()),
        maxRetries: Math.max(0, budget.maxRetries - retries),
        maxInlineBackoffMs: budget.maxInlineBackoffMs,
      });
      retries += outcome.attempts - 1;
      return outcome;
    },
  };
}

async function measureSeams(calls: ReturnType<typeof tokenizer>) {
  const reply = await calls.ids({ text: DUMMY_REPLY });
  if (reply.kind !== "ok") return reply;
  const rendered = await calls.ids({ messages: DUMMY_CONVERSATION, addGenerationPrompt: false });
  if (rendered.kind !== "ok") return rendered;
  try {
    return {
      kind: "ok" as const,
      value: { reply: reply.value, closing: closingOf(rendered.value, reply.value) },
    };
  } catch (error) {
    if (error instanceof TemplateSeamError)
      return { kind: "unusable" as const, detail: error.message };
    throw error;
  }
}

function seams(context: PromptContext, calls: ReturnType<typeof tokenizer>) {
  if (context.seams.measuring === null) {
    const measuring = measureSeams(calls);
    context.seams.measuring = measuring;
    measuring.then(
      (outcome) => {
        if (outcome.kind !== "ok" && context.seams.measuring === measuring)
          context.seams.measuring = null;
      },
      () => {
        if (context.seams.measuring === measuring) context.seams.measuring = null;
      },
    );
  }
  return context.seams.measuring;
}

export async function tokenInPrompt(
  context: PromptContext,
  idx: number,
  transcript: readonly ChatMessage[],
  budget: PromptBudget,
): Promise<PromptOutcome> {
  const calls = tokenizer(context, budget);
  const lastAction = transcript.findLastIndex(isSampledAction);
  if (lastAction === -1) {
    const opening = await calls.ids({ messages: transcript, addGenerationPrompt: true });
    if (opening.kind !== "ok") return opening;
    return { kind: "ok", ids: opening.value, retries: calls.retries() };
  }
  const measured = await seams(context, calls);
  if (measured.kind !== "ok") return measured;
  const { reply, closing } = measured.value;
  const rendered = await calls.ids({
    messages: [...DUMMY_CONVERSATION, ...transcript.slice(lastAction + 1)],
    addGenerationPrompt: true,
  });
  if (rendered.kind !== "ok") return rendered;
  try {
    const bridge = bridgeOf(rendered.value, reply, closing);
    const ids = nextPrompt(context.tokens.sequence(idx), closing, bridge);
    return { kind: "ok", ids, retries: calls.retries() };
  } catch (error) {
    if (error instanceof TemplateSeamError) return { kind: "unusable", detail: error.message };
    throw error;
  }
}
