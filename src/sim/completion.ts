/**
 * One completion as the scripted model plays it, for whichever route asked: the player's action
 * (thought aloud first with `think`, padded with `pad`, run on past its budget with `overlong`),
 * continued after whatever the prompt already wrote of the model's turn, stopped at a stop
 * string and cut at the token budget, as tokens with their logprobs.
 */

import { hashString, type Random, seededRandom } from "../utils/random";
import type { Choice } from "./answer";
import { detokenize, IM_END, tokenize } from "./chat-template";
import type { Directives } from "./directives";
import { GARBAGE_VERDICT, judgeVerdict } from "./judge";
import { playTurn, type SimMessage } from "./policies";
import { completionTokens } from "./token-answer";

/** What the player is asked: the conversation, how hot to play, and how it may call tools. */
export interface PlayAsk {
  messages: readonly SimMessage[];
  temperature: number;
  /** The tools offered for native calls, by name (see `PlayContext`). */
  tools: readonly string[];
  /** Whether the host parses calls into `tool_calls` (see `PlayContext`). */
  native: boolean;
}

export interface CompletionAsk extends PlayAsk {
  stop: readonly string[];
  /** Tokens allowed, the end-of-turn token counted, as hosts count it. */
  budget: number;
  /** What the prompt already wrote of the assistant's turn, which the model continues. */
  prefix?: string;
}

/** What the simulator thinks aloud before acting, with `think`: Qwen3's format. */
const REASONING = "<think>\nThe conversation so far tells me what to do next.\n</think>\n\n";

const FILLER = " and the walk goes on";

/** The text made exactly `tokens` long with its end-of-turn token: padded with filler, or cut. */
function padded(text: string, tokens: number): string {
  let ids = tokenize(text);
  while (ids.length < tokens - 1) ids = tokenize(`${detokenize(ids)}${FILLER.repeat(8)}`);
  return detokenize(ids.slice(0, Math.max(0, tokens - 1)));
}

const WORDS =
  "north south road river stone lamp field cloud wheel bread ember glass harbor thread".split(" ");

/** Twenty random words: with `babble`, each seed says something of its own. */
function babble(random: Random): string {
  return Array.from({ length: 20 }, () => WORDS[Math.floor(random() * WORDS.length)]).join(" ");
}

/** The whole turn the model would say after `messages`, before any stop or budget. */
export function actionText(ask: PlayAsk, random: Random, directives: Directives): string {
  const { messages, temperature, tools, native } = ask;
  if (directives.garbage > 0 && random() < directives.garbage) return GARBAGE_VERDICT;
  if (directives.judge) return judgeVerdict(messages);
  let text = directives.babble
    ? babble(random)
    : playTurn({ messages, random, temperature, tools, native });
  if (directives.think !== null) text = `${REASONING}${text}`;
  if (directives.padTokens !== undefined) text = padded(text, directives.padTokens);
  return text;
}

/** Where the model stops on a stop string: the one whose first occurrence ends earliest. */
interface StopHit {
  stop: string;
  /** Where the stop string starts in the text, and where it ends. */
  at: number;
  end: number;
}

/**
 * vLLM checks the stop strings as each token is decoded, so the first to be completed stops the
 * model (the earlier listed, when two end together). An empty one never matches.
 */
function firstStop(text: string, stops: readonly string[]): StopHit | null {
  let first: StopHit | null = null;
  for (const stop of stops) {
    const at = stop === "" ? -1 : text.indexOf(stop);
    if (at !== -1 && (first === null || at + stop.length < first.end))
      first = { stop, at, end: at + stop.length };
  }
  return first;
}

/**
 * Plays one choice, then applies `stop` and the token budget as vLLM does: a stop string ends the
 * text before it, but the tokens that spelled it were sampled and stay in the ids, and no
 * end-of-turn token follows; a budget smaller than the ids cuts them first (`length`).
 */
export function complete(ask: CompletionAsk, random: Random, directives: Directives): Choice {
  let text = actionText(ask, random, directives);
  // A model continuing its own words says the rest; one put off its course starts afresh.
  if (ask.prefix && text.startsWith(ask.prefix)) text = text.slice(ask.prefix.length);
  // Drawn after the play, so the other completions of a seeded request play as without it.
  if (directives.overlong > 0 && random() < directives.overlong)
    text = padded(text, ask.budget + 2);
  const hit = firstStop(text, ask.stop);
  const sampled = hit === null ? [...tokenize(text), IM_END] : tokenize(text.slice(0, hit.end));
  const tokens = completionTokens(sampled, ask.budget, ask.temperature, random);
  const common = { toolCalls: [], ids: tokens.ids, logprobs: tokens.logprobs };
  // Cut short, the model said all its tokens spell, a stop string's first characters included.
  if (tokens.cut)
    return { text: detokenize(tokens.ids), finishReason: "length", stopString: null, ...common };
  return {
    text: hit === null ? text : text.slice(0, hit.at),
    finishReason: "stop",
    stopString: hit?.stop ?? null,
    ...common,
  };
}

/**
 * `n` choices: the first plays from the request's randomness, each other from its own seed, so
 * a seeded request's first choice is the same however many it asks for.
 */
export function choices(
  n: number,
  seed: number | undefined,
  random: Random,
  play: (random: Random) => Choice,
): Choice[] {
  return Array.from({ length: n }, (_, i) =>
    play(i === 0 ? random : seededRandom(hashString(`${seed}:${i}`))),
  );
}
