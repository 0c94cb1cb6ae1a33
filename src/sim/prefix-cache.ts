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
  /**
   * Cached blocks, least recently used first (a Map keeps insertion order), each with the number
   * of requests in flight using it: a block in use cannot be evicted, and it counts once however
   * many requests share it (vLLM's reference counts).
   */
  private readonly blocks = new Map<string, number>();
  /** Distinct cached blocks in use by requests in flight. */
  private inUse = 0;
  /** Blocks requests in flight hold outside the cache: being prefilled, or partial last ones. */
  private uncached = 0;
  /** Prompt tokens looked up, and found cached (vLLM's prefix_cache_queries / _hits). */
  queries = 0;
  hits = 0;

  constructor(readonly capacityBlocks: number) {}

  /**
   * A request arrives: the tokens of its longest cached prefix (whole blocks), now the most
   * recently used and in use until `release`. The rest of its prompt's full blocks join the
   * cache once `prefilled` (vLLM caches a block once it is computed): a request arriving while
   * the same prompt is still being prefilled finds none of it.
   */
  start(prompt: ArrayLike<number>): {
    cachedTokens: number;
    prefilled: () => void;
    release: () => void;
  } {
    const keys = keysOf(prompt);
    let found = 0;
    for (const key of keys) {
      const refs = this.blocks.get(key);
      if (refs === undefined) break;
      this.take(key, refs);
      found++;
    }
    // The blocks it computes, and its partial last block, are its own until it ends.
    const own = keys.length - found + (prompt.length % BLOCK_TOKENS > 0 ? 1 : 0);
    this.uncached += own;
    this.queries += prompt.length;
    this.hits += found * BLOCK_TOKENS;
    this.evict();
    let held = found;
    let computed = false;
    let released = false;
    return {
      cachedTokens: found * BLOCK_TOKENS,
      prefilled: () => {
        if (computed || released) return;
        computed = true;
        for (const key of keys.slice(found)) this.take(key, this.blocks.get(key) ?? 0);
        this.uncached -= keys.length - found;
        held = keys.length;
        this.evict();
      },
      release: () => {
        if (released) return;
        released = true;
        this.uncached -= computed ? own - (keys.length - found) : own;
        for (const key of keys.slice(0, held)) {
          const refs = this.blocks.get(key);
          if (refs === undefined) continue;
          this.blocks.set(key, refs - 1);
          if (refs === 1) this.inUse--;
        }
        this.evict();
      },
    };
  }

  /** A request finished: its completion's full blocks are cached too, for what follows. */
  finish(ids: ArrayLike<number>): void {
    for (const key of keysOf(ids)) {
      const refs = this.blocks.get(key) ?? 0;
      this.blocks.delete(key);
      this.blocks.set(key, refs);
    }
    this.evict();
  }

  /** KV blocks in use over capacity, as vLLM's `kv_cache_usage_perc` counts it (0..1). */
  usage(): number {
    return Math.min(1, (this.inUse + this.uncached) / this.capacityBlocks);
  }

  /** One more request uses a block: the most recently used now. */
  private take(key: string, refs: number): void {
    this.blocks.delete(key);
    this.blocks.set(key, refs + 1);
    if (refs === 0) this.inUse++;
  }

  /**
   * At most the capacity, less the blocks held outside the cache: the least recently used blocks
   * no request is using go first (when every block is in use the cache stays over, as a vLLM
   * host would preempt rather than evict).
   */
  private evict(): void {
    const room = Math.max(0, this.capacityBlocks - this.uncached);
    if (this.blocks.size <= room) return;
    for (const [key, refs] of this.blocks) {
      if (this.blocks.size <= room) break;
      if (refs === 0) this.blocks.delete(key);
    }
  }
}
