/**
 * One landed group's tokens as one binary object (R2): a JSON header describing every episode's
 * turns, then the arrays themselves, little-endian — int32 ids (each turn's prompt tail, then
 * its completion) and float32 logprobs, then, for a distilled episode's turn, the teacher's
 * float32 logprobs of its completion. Deterministic: the same group always packs to the same
 * bytes, so writing it again (a landing retried after a crash) leaves one identical object.
 *
 * Cost: 4 bytes per stored id and 4 per logprob, plus about 140 bytes of header per turn.
 */
import { z } from "zod";
import type { TurnTokens } from "./turn-tokens";

const MAGIC = "ERT1";

export interface EpisodeTokens {
  idx: number;
  turns: TurnTokens[];
}

const count = z.number().int().nonnegative();
const HeaderSchema = z.object({
  group_id: z.string(),
  episodes: z.array(
    z.object({
      idx: count,
      turns: z.array(
        z.object({
          turn: count,
          prompt_length: count,
          prefix_length: count,
          tail: count,
          completion: count,
          consistent: z.boolean(),
          model: z.string().nullable(),
          temperature: z.number(),
          top_p: z.number(),
          /** The turn carries the teacher's logprobs (on-policy distillation). */
          teacher: z.boolean().default(false),
          /**
           * `[at, version]`: the version that sampled the completion from position `at` on;
           * absent in objects landed before per-token versions were recorded.
           */
          versions: z.array(z.tuple([count, z.number().int()])).optional(),
        }),
      ),
    }),
  ),
});
type Header = z.infer<typeof HeaderSchema>;

// Typed arrays use the machine's byte order; every Workers machine (x86-64, ARM64) is
// little-endian, which is what the format promises.
if (new Uint8Array(new Uint32Array([1]).buffer)[0] !== 1) {
  throw new Error("token objects are little-endian; this machine is not");
}

const pad4 = (n: number) => (n + 3) & ~3;

export function encodeTokenObject(groupId: string, episodes: readonly EpisodeTokens[]): Uint8Array {
  const header: Header = {
    group_id: groupId,
    episodes: episodes.map((e) => ({
      idx: e.idx,
      turns: e.turns.map((t) => ({
        turn: t.turn,
        prompt_length: t.promptLength,
        prefix_length: t.prefixLength,
        tail: t.promptTail.length,
        completion: t.completionIds.length,
        consistent: t.consistent,
        model: t.model,
        temperature: t.temperature,
        top_p: t.topP,
        teacher: t.teacherLogprobs !== undefined,
        ...(t.versions === undefined
          ? {}
          : { versions: t.versions.map((v): [number, number] => [v.at, v.version]) }),
      })),
    })),
  };
  const json = new TextEncoder().encode(JSON.stringify(header));
  const dataStart = pad4(8 + json.length);
  let words = 0;
  for (const e of episodes)
    for (const t of e.turns)
      words +=
        t.promptTail.length + (t.teacherLogprobs === undefined ? 2 : 3) * t.completionIds.length;
  const bytes = new Uint8Array(dataStart + 4 * words);
  bytes.set(new TextEncoder().encode(MAGIC), 0);
  new DataView(bytes.buffer).setUint32(4, json.length, true);
  bytes.set(json, 8);
  const ids = new Int32Array(bytes.buffer, dataStart, words);
  const floats = new Float32Array(bytes.buffer, dataStart, words);
  let at = 0;
  for (const e of episodes) {
    for (const t of e.turns) {
      ids.set(t.promptTail, at);
      at += t.promptTail.length;
      ids.set(t.completionIds, at);
      at += t.completionIds.length;
      floats.set(t.logprobs, at);
      at += t.logprobs.length;
      if (t.teacherLogprobs !== undefined) {
        floats.set(t.teacherLogprobs, at);
        at += t.teacherLogprobs.length;
      }
    }
  }
  return bytes;
}

export class TokenObjectError extends Error {
  override name = "TokenObjectError";
}

export function decodeTokenObject(bytes: Uint8Array): {
  groupId: string;
  episodes: EpisodeTokens[];
} {
  if (new TextDecoder().decode(bytes.subarray(0, 4)) !== MAGIC)
    throw new TokenObjectError("not an edgeroll token object (bad magic)");
  // Copy when unaligned, so the typed views below can be made.
  const own = bytes.byteOffset % 4 === 0 ? bytes : bytes.slice();
  const view = new DataView(own.buffer, own.byteOffset, own.byteLength);
  if (own.byteLength < 8) throw new TokenObjectError("the token object is shorter than its header");
  const length = view.getUint32(4, true);
  if (8 + length > own.byteLength)
    throw new TokenObjectError("the token object is shorter than its header");
  let header: Header;
  try {
    header = HeaderSchema.parse(JSON.parse(new TextDecoder().decode(own.subarray(8, 8 + length))));
  } catch (error) {
    throw new TokenObjectError(
      `the token object's header is not one: ${String(error).slice(0, 200)}`,
    );
  }
  const dataStart = pad4(8 + length);
  if (own.byteLength < dataStart || (own.byteLength - dataStart) % 4 !== 0)
    throw new TokenObjectError("the token object's arrays are not whole 4-byte words");
  const words = (own.byteLength - dataStart) / 4;
  const ids = new Int32Array(own.buffer, own.byteOffset + dataStart, words);
  const floats = new Float32Array(own.buffer, own.byteOffset + dataStart, words);
  let at = 0;
  const take = <T extends Int32Array | Float32Array>(from: T, n: number): T => {
    if (at + n > words) throw new TokenObjectError("the token object is shorter than its header");
    // Views, not copies: the decoded object owns its buffer.
    const part = from.subarray(at, at + n) as T;
    at += n;
    return part;
  };
  const episodes = header.episodes.map((e) => ({
    idx: e.idx,
    turns: e.turns.map(
      (t): TurnTokens => ({
        turn: t.turn,
        promptLength: t.prompt_length,
        prefixLength: t.prefix_length,
        promptTail: take(ids, t.tail),
        completionIds: take(ids, t.completion),
        logprobs: take(floats, t.completion),
        ...(t.teacher ? { teacherLogprobs: take(floats, t.completion) } : {}),
        ...(t.versions === undefined
          ? {}
          : { versions: t.versions.map(([at, version]) => ({ at, version })) }),
        consistent: t.consistent,
        model: t.model,
        temperature: t.temperature,
        topP: t.top_p,
      }),
    ),
  }));
  if (at !== words) throw new TokenObjectError("the token object is longer than its header");
  return { groupId: header.group_id, episodes };
}

/** Where a group's token object lives in the bucket. */
export function tokenObjectKey(groupId: string): string {
  return `groups/${groupId}.tokens`;
}
