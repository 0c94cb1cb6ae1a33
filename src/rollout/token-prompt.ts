/**
 * The prompt of a token-in generation (`generation: "tokens"`), built with the host's
 * tokenizer: the opening messages rendered once, then each turn the previous sequence, the
 * closing and the bridge of the environment's new messages (src/tokens/token-in.ts).
 */
import type { InferenceEndpoint } from "../inference/client";
import type { CallOutcome, RetryOptions } from "../inference/retries";
import { tokenize } from "../inference/tokenize";
import { type ChatMessage, isSampledAction } from "../sdk";
import {
  bridgeOf,
  closingOf,
  DUMMY_CONVERSATION,
  DUMMY_REPLY,
  nextPrompt,
  TemplateSeamError,
} from "../tokens/token-in";
import type { TokenStore } from "../tokens/token-store";

/** What building an episode's prompt needs of its group. */
export interface PromptContext {
  endpoint: InferenceEndpoint;
  model: string;
  /** The group's token storage: what each episode's last turn left. */
  tokens: TokenStore;
}

export type PromptOutcome =
  | { kind: "ok"; ids: Int32Array }
  | Exclude<CallOutcome<unknown>, { kind: "ok" }>
  /** The host's template cannot be extended by ids (token-in.ts says where that happens). */
  | { kind: "unusable"; detail: string };

interface Seams {
  reply: Int32Array;
  closing: Int32Array;
}

/**
 * Measured once per group object (keyed by its token store): the template does not change under
 * a running group.
 */
const seamsOf = new WeakMap<TokenStore, Seams>();

class NotOk extends Error {
  constructor(readonly outcome: Exclude<CallOutcome<unknown>, { kind: "ok" }>) {
    super(outcome.kind);
  }
}

async function ids(
  rt: PromptContext,
  input: Parameters<typeof tokenize>[2],
  options: RetryOptions,
): Promise<Int32Array> {
  const outcome = await tokenize(rt.endpoint, rt.model, input, options);
  if (outcome.kind !== "ok") throw new NotOk(outcome);
  return outcome.value;
}

async function seams(rt: PromptContext, options: RetryOptions): Promise<Seams> {
  const known = seamsOf.get(rt.tokens);
  if (known !== undefined) return known;
  const reply = await ids(rt, { text: DUMMY_REPLY }, options);
  const rendered = await ids(
    rt,
    { messages: DUMMY_CONVERSATION, addGenerationPrompt: false },
    options,
  );
  const measured = { reply, closing: closingOf(rendered, reply) };
  seamsOf.set(rt.tokens, measured);
  return measured;
}

export async function tokenInPrompt(
  rt: PromptContext,
  idx: number,
  transcript: readonly ChatMessage[],
  options: RetryOptions,
): Promise<PromptOutcome> {
  try {
    const lastAction = transcript.findLastIndex(isSampledAction);
    if (lastAction === -1) {
      const opening = await ids(rt, { messages: transcript, addGenerationPrompt: true }, options);
      return { kind: "ok", ids: opening };
    }
    const { reply, closing } = await seams(rt, options);
    const rendered = await ids(
      rt,
      {
        messages: [...DUMMY_CONVERSATION, ...transcript.slice(lastAction + 1)],
        addGenerationPrompt: true,
      },
      options,
    );
    const bridge = bridgeOf(rendered, reply, closing);
    return { kind: "ok", ids: nextPrompt(rt.tokens.sequence(idx), closing, bridge) };
  } catch (error) {
    if (error instanceof NotOk) return error.outcome;
    if (error instanceof TemplateSeamError) return { kind: "unusable", detail: error.message };
    throw error;
  }
}
