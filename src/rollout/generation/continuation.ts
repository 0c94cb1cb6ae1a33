/**
 * Token-exact continuation of a token-in turn that an interrupting weight sync cut (issue 30,
 * docs/async-rl.md): the tokens it had received are kept (storage/interrupted-turns.ts); after
 * the resume the turn goes out with its original prompt ids followed by the kept ids as the
 * prompt, for what is left of its token budget, and the answer is the kept tokens followed by
 * the continuation's, each with the logprob of the version that sampled it. Nothing is
 * re-tokenized. A chat turn cannot be continued exactly (the host would render the kept text
 * again), so it restarts and its tokens are counted as discarded.
 */
import type { Completion } from "../../inference/completion";
import type { PartialCompletion } from "../../inference/stream";
import type { GroupRuntime } from "../group-runtime";
import type { KeptTurn } from "../storage/interrupted-turns";

/** The prompt and token budget a continued turn is sent with. */
export function continuationRequest(
  kept: KeptTurn,
  maxTokens: number,
): { prompt: Int32Array; maxTokens: number } {
  const prompt = new Int32Array(kept.prompt.length + kept.completionIds.length);
  prompt.set(kept.prompt);
  prompt.set(kept.completionIds, kept.prompt.length);
  return { prompt, maxTokens: maxTokens - kept.completionIds.length };
}

/**
 * The whole turn's answer: the kept tokens and text, then the continuation's. The prompt is the
 * turn's original one, as if it had never been cut; the usage counts likewise.
 */
export function withKept(kept: KeptTurn, continuation: Completion): Completion {
  const k = kept.completionIds.length;
  const tokens = continuation.tokens;
  let merged = tokens;
  if (tokens?.kind === "exact") {
    const { completionIds, logprobs, model } = tokens.tokens;
    const p = kept.prompt.length;
    // Prompt and completion in one buffer, as the token table keeps them (joinedSequence).
    const all = new Int32Array(p + k + completionIds.length);
    all.set(kept.prompt);
    all.set(kept.completionIds, p);
    all.set(completionIds, p + k);
    const allLogprobs = new Float32Array(k + logprobs.length);
    allLogprobs.set(kept.logprobs);
    allLogprobs.set(logprobs, k);
    merged = {
      kind: "exact",
      tokens: {
        promptIds: all.subarray(0, p),
        completionIds: all.subarray(p),
        logprobs: allLogprobs,
        model,
      },
    };
  }
  return {
    ...continuation,
    content: kept.content + continuation.content,
    usage:
      continuation.usage === null
        ? null
        : {
            ...continuation.usage,
            promptTokens: kept.prompt.length,
            completionTokens: continuation.usage.completionTokens + k,
          },
    tokens: merged,
  };
}

/**
 * A kept turn whose budget the kept tokens used up: the host was cut after its last token but
 * before it said so. Its answer is the kept tokens alone, ended for length.
 */
export function keptWhole(kept: KeptTurn): Completion {
  const empty: Completion = {
    content: "",
    toolCalls: [],
    finishReason: "length",
    usage: { promptTokens: 0, completionTokens: 0, cachedTokens: null },
    tokens: {
      kind: "exact",
      tokens: {
        promptIds: new Int32Array(0),
        completionIds: new Int32Array(0),
        logprobs: new Float32Array(0),
        model: null,
      },
    },
  };
  return withKept(kept, empty);
}

/**
 * What an interrupting pause left of a generation: a token-in turn keeps the tokens it received
 * (and goes on from them after the resume); anything else counts them as discarded.
 */
export function recordInterrupted(
  rt: GroupRuntime,
  idx: number,
  sent: { prompt: Int32Array | undefined; kept: KeptTurn | null },
  received: PartialCompletion | undefined,
): void {
  const { store, spec } = rt;
  const original = sent.kept?.prompt ?? sent.prompt;
  if (original !== undefined && received?.tokens) {
    const turn = store.episodes.get(idx).turns;
    const version = rt.policy.turnVersion(idx, turn, spec.request.policy_version);
    store.keepInterrupted(
      idx,
      original,
      { ...received.tokens, content: received.content },
      version,
    );
  } else store.recordInterrupt(idx, received?.completionTokens ?? 0);
}
