// The simulator as a fleet (src/sim/fleet.ts): each host's prefix cache in vLLM's manner (whole
// 16-token blocks, chained, LRU), `cached_tokens` in usage, prefill that costs only what is not
// cached, `/metrics` in vLLM's names, and hosts that can be killed, revived and slowed.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type SimFleet, startSimFleet } from "../../src/sim/fleet";
import { BLOCK_TOKENS, PrefixCache } from "../../src/sim/prefix-cache";

interface Usage {
  prompt_tokens: number;
  prompt_tokens_details?: { cached_tokens: number };
}

const ask = async (url: string, messages: { role: string; content: string }[]) => {
  const started = Date.now();
  const response = await fetch(`${url}/chat/completions`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ model: "sim", messages, seed: 1, max_tokens: 8 }),
  });
  const body = (await response.json()) as {
    usage: Usage;
    choices: { message: { content: string } }[];
  };
  return { ...body, ms: Date.now() - started };
};

const conversation = (n: number) =>
  Array.from({ length: n }, (_, i) => ({
    role: i % 2 === 0 ? "user" : "assistant",
    content: `Turn ${i}: the road goes on and on, down from the door where it began.`,
  }));

describe("a host's prefix cache", () => {
  it("finds the longest cached run of whole blocks, and only after the same prefix", () => {
    const cache = new PrefixCache(1000);
    const ids = Array.from({ length: 100 }, (_, i) => i);
    expect(cache.start(ids).cachedTokens).toBe(0);
    cache.finish(ids);
    // 100 tokens are 6 whole blocks; the 4 left over are not cached.
    expect(cache.start(ids).cachedTokens).toBe(6 * BLOCK_TOKENS);
    // The same tokens after another first block share nothing: keys chain from the start.
    expect(cache.start([999, ...ids.slice(1)]).cachedTokens).toBe(0);
    // An extension of a cached conversation finds its whole cached prefix.
    expect(cache.start([...ids, ...ids]).cachedTokens).toBe(6 * BLOCK_TOKENS);
  });

  it("counts a block that requests share once, and never evicts a block in use", () => {
    const cache = new PrefixCache(4);
    const prompt = Array.from({ length: 32 }, (_, i) => i);
    const first = cache.start(prompt);
    // Not computed yet: a request arriving during the first one's prefill finds nothing.
    const early = cache.start(prompt);
    expect(early.cachedTokens).toBe(0);
    early.release();
    first.prefilled();
    const second = cache.start(prompt);
    // Two requests on the same two blocks: half the cache in use, not all of it.
    expect(cache.usage()).toBe(0.5);
    expect(second.cachedTokens).toBe(32);
    // Six more blocks than fit: the two in use stay.
    const other = Array.from({ length: 96 }, (_, i) => 500 + i);
    cache.start(other).release();
    expect(cache.start(prompt).cachedTokens).toBe(32);
    first.release();
    second.release();
  });

  it("evicts the least recently used blocks when full", () => {
    const cache = new PrefixCache(4);
    const a = Array.from({ length: 32 }, (_, i) => i);
    const b = Array.from({ length: 32 }, (_, i) => 1000 + i);
    const c = Array.from({ length: 32 }, (_, i) => 2000 + i);
    for (const ids of [a, b]) {
      cache.start(ids).release();
      cache.finish(ids);
    }
    cache.start(a).release(); // a is used again: b is now the oldest
    cache.finish(c);
    expect(cache.start(a).cachedTokens).toBe(32);
    expect(cache.start(b).cachedTokens).toBe(0);
  });
});

describe("a simulated fleet", () => {
  let fleet: SimFleet;
  beforeAll(async () => {
    fleet = await startSimFleet(2, { kvBlocks: 4096, latency: { msPerPromptToken: 0.5 } });
  });
  afterAll(() => fleet.close());
  const url = (i: number) => fleet.hosts[i]?.url ?? "";

  it("serves every host under one comma-separated INFERENCE_BASE_URL", () => {
    expect(fleet.baseUrl).toBe(`${url(0)},${url(1)}`);
  });

  it("reports cached tokens where the conversation was, and none on another host", async () => {
    const first = await ask(url(0), conversation(9));
    expect(first.usage.prompt_tokens_details).toBeUndefined();
    const next = [
      ...conversation(9),
      { role: "assistant", content: first.choices[0]?.message.content ?? "" },
      { role: "user", content: "And then?" },
    ];
    const again = await ask(url(0), next);
    const cached = again.usage.prompt_tokens_details?.cached_tokens ?? 0;
    expect(cached).toBeGreaterThan(first.usage.prompt_tokens - BLOCK_TOKENS);
    expect(cached % BLOCK_TOKENS).toBe(0);
    // Prefill is paid only for what was not cached.
    expect(again.ms).toBeLessThan(first.ms);
    const elsewhere = await ask(url(1), next);
    expect(elsewhere.usage.prompt_tokens_details).toBeUndefined();
  });

  it("exposes vLLM's metrics at the server root", async () => {
    const text = await (await fetch(url(0).replace(/\/v1$/, "/metrics"))).text();
    for (const name of [
      "# TYPE vllm:kv_cache_usage_perc gauge",
      "# TYPE vllm:num_requests_running gauge",
      "# TYPE vllm:prefix_cache_hits counter",
    ])
      expect(text).toContain(name);
    const hits = /^vllm:prefix_cache_hits_total\{[^}]*\} (\d+)/m.exec(text);
    expect(Number(hits?.[1])).toBeGreaterThan(0);
  });

  it("kills a host (connections refused) and revives it on the same port with an empty cache", async () => {
    await fleet.hosts[0]?.kill();
    await expect(fetch(`${url(0)}/models`)).rejects.toThrow();
    await fleet.hosts[0]?.revive();
    expect((await fetch(`${url(0)}/models`)).status).toBe(200);
    expect((await ask(url(0), conversation(9))).usage.prompt_tokens_details).toBeUndefined();
  });

  it("slows a host by a factor", async () => {
    const fast = await ask(url(1), conversation(3));
    fleet.hosts[1]?.setSlow(10);
    const slow = await ask(url(1), [...conversation(3), { role: "user", content: "Slowly." }]);
    fleet.hosts[1]?.setSlow(1);
    expect(slow.ms).toBeGreaterThan(fast.ms + 20);
  });
});

describe("a host whose prefill is shared", () => {
  // Three different conversations at once: with one prefill per host they queue behind each
  // other, as on a GPU; without, they overlap.
  const together = async (sharedPrefill: boolean) => {
    const one = await startSimFleet(1, { sharedPrefill, latency: { msPerPromptToken: 1 } });
    try {
      const url = one.hosts[0]?.url ?? "";
      const alone = await ask(url, conversation(9));
      const three = await Promise.all(
        [1, 2, 3].map((k) =>
          ask(url, [{ role: "system", content: `Host ${k}.` }, ...conversation(9)]),
        ),
      );
      return { alone: alone.ms, slowest: Math.max(...three.map((a) => a.ms)) };
    } finally {
      await one.close();
    }
  };

  it("makes concurrent prefills wait for one another, and not when it is not", async () => {
    const shared = await together(true);
    expect(shared.slowest).toBeGreaterThan(2.5 * shared.alone);
    const own = await together(false);
    expect(own.slowest).toBeLessThan(2 * own.alone);
  });
});
