/**
 * Trainer samples on the wire: JSON number lists, or base64 of the arrays' little-endian bytes
 * (int32 ids and `policy_versions`, uint8 mask, float32 logprobs, advantages and a distilled
 * sample's `teacher_logprobs`) — a quarter of the JSON's size and
 * read with one call into numpy or torch (`np.frombuffer(b64decode(s), "<i4")`).
 */
import { bytesOf } from "./bytes";
import type { TokenSample } from "./samples";

export const TOKEN_ENCODINGS = ["json", "base64"] as const;
export type TokenEncoding = (typeof TOKEN_ENCODINGS)[number];

const CHUNK = 0x8000;

/** `Uint8Array.prototype.toBase64` where the runtime has it (workerd does), else by chunks. */
function base64(bytes: Uint8Array): string {
  const native = (bytes as Uint8Array & { toBase64?: () => string }).toBase64;
  if (native) return native.call(bytes);
  let binary = "";
  for (let i = 0; i < bytes.length; i += CHUNK) {
    binary += String.fromCharCode(...bytes.subarray(i, i + CHUNK));
  }
  return btoa(binary);
}

/**
 * Float32 values as decimals of nine significant digits, enough to read back as the same
 * float32 (`-0.100000001`, not `-0.10000000149011612`).
 */
function floats(array: Float32Array): number[] {
  return Array.from(array, (x) => Number(x.toPrecision(9)));
}

export function encodeSample(sample: TokenSample, encoding: TokenEncoding) {
  if (encoding === "base64") {
    return {
      turns: sample.turns,
      token_ids: base64(bytesOf(sample.tokenIds)),
      mask: base64(sample.mask),
      logprobs: base64(bytesOf(sample.logprobs)),
      advantages: base64(bytesOf(sample.advantages)),
      policy_versions: base64(bytesOf(sample.policyVersions)),
      ...(sample.teacherLogprobs
        ? { teacher_logprobs: base64(bytesOf(sample.teacherLogprobs)) }
        : {}),
    };
  }
  return {
    turns: sample.turns,
    token_ids: Array.from(sample.tokenIds),
    mask: Array.from(sample.mask),
    logprobs: floats(sample.logprobs),
    advantages: floats(sample.advantages),
    policy_versions: Array.from(sample.policyVersions),
    ...(sample.teacherLogprobs ? { teacher_logprobs: floats(sample.teacherLogprobs) } : {}),
  };
}

export type EncodedSample = ReturnType<typeof encodeSample>;
