/**
 * A simulated host's prefix cache, modelled on vLLM's automatic prefix caching: the prompt is cut
 * into 16-token blocks, each block's key is a hash of its parent's key and its own tokens (so a
 * block is reused only after the same prefix), only full blocks are cached, and when the cache is
 * full the least recently used blocks go first. A request finds the longest run of leading
 * blocks already cached (`cached_tokens`) and caches its prompt and completion when it finishes,
 * as vLLM keeps a finished request's blocks for the next turn of the same conversation.
 */

export const BLOCK_TOKENS = 16;

/** Two 32-bit FNV-1a lanes over the parent key and the block's tokens. */
function blockKey(parent: string, ids: ArrayLike<number>, from: number): string {
  let a = 0x811c9dc5;
  let b = 0x01000193 ^ parent.length;
  for (let i = 0; i < parent.length; i++) {
    a = Math.imul(a ^ parent.charCodeAt(i), 0x01000193);
    b = Math.imul(b ^ parent.charCodeAt(i), 0x5bd1e995);
  }
  for (let i = from; i < from + BLOCK_TOKENS; i++) {
    const t = ids[i] as number;
    a = Math.imul(a ^ t, 0x01000193);
    b = Math.imul(b ^ t, 0x5bd1e995);
    b ^= b >>> 15;
  }
  return `${(a >>> 0).toString(36)}.${(b >>> 0).toString(36)}`;
}

/** The chained keys of the full blocks of `ids`. */
function keysOf(ids: ArrayLike<number>): string[] {
  const keys: string[] = [];
  let parent = "";
  for (let at = 0; at + BLOCK_TOKENS <= ids.length; at += BLOCK_TOKENS) {
    parent = blockKey(parent, ids, at);
    keys.push(parent);
  }
  return keys;
}

export class PrefixCache {
  /** Cached block keys, least recently used first (a Map keeps insertion order). */
  private readonly blocks = new Map<string, true>();
  /** Blocks pinned by requests in flight: their KV is in use and cannot be evicted. */
  private pinned = 0;
  /** Prompt tokens looked up, and found cached (vLLM's prefix_cache_queries / _hits). */
  queries = 0;
  hits = 0;

  constructor(readonly capacityBlocks: number) {}

  /**
   * A request arrives: the tokens of its longest cached prefix (whole blocks). Those blocks are
   * now the most recently used, and the request's blocks are pinned until `finish`.
   */
  start(prompt: ArrayLike<number>): { cachedTokens: number; release: () => void } {
    let cached = 0;
    for (const key of keysOf(prompt)) {
      if (!this.blocks.has(key)) break;
      this.blocks.delete(key);
      this.blocks.set(key, true);
      cached += BLOCK_TOKENS;
    }
    this.queries += prompt.length;
    this.hits += cached;
    const pinned = Math.ceil(prompt.length / BLOCK_TOKENS);
    this.pinned += pinned;
    this.evict();
    let released = false;
    return {
      cachedTokens: cached,
      release: () => {
        if (released) return;
        released = true;
        this.pinned -= pinned;
      },
    };
  }

  /** A request finished: its prompt and completion's full blocks are cached for what follows. */
  finish(ids: ArrayLike<number>): void {
    for (const key of keysOf(ids)) {
      this.blocks.delete(key);
      this.blocks.set(key, true);
    }
    this.evict();
  }

  /** KV blocks in use over capacity, as vLLM's `kv_cache_usage_perc` counts it (0..1). */
  usage(): number {
    return Math.min(1, this.pinned / this.capacityBlocks);
  }

  /** Cached blocks at most what the pinned ones leave free; the least recently used go. */
  private evict(): void {
    const room = Math.max(0, this.capacityBlocks - this.pinned);
    for (const key of this.blocks.keys()) {
      if (this.blocks.size <= room) break;
      this.blocks.delete(key);
    }
  }
}
