// The fleet's rules on their own: rendezvous order and the load bound (src/fleet/routing.ts),
// the health circuit breaker (health.ts), and the adaptive cap with the metrics it reads
// (adaptive-cap.ts), on Prometheus text as vLLM and SGLang write it.
import { describe, expect, it } from "vitest";
import { kvUsage, nextCap } from "../../src/fleet/adaptive-cap";
import { answered, failed, HEALTHY, probed, probeFailed, readmitted } from "../../src/fleet/health";
import { fleetHosts } from "../../src/fleet/hosts-config";
import { chooseHost, type HostLoad, rendezvousOrder } from "../../src/fleet/routing";

const hosts = (n: number) =>
  Array.from({ length: n }, (_, i) => ({ url: `http://h${i}:8000/v1`, weight: 1 }));

describe("rendezvous order", () => {
  it("is the same for the same key, and moves only the keys of a host that goes away", () => {
    const four = hosts(4);
    const three = four.slice(0, 3);
    let moved = 0;
    for (let k = 0; k < 1000; k++) {
      const before = rendezvousOrder(`g${k}`, four)[0]?.url;
      expect(rendezvousOrder(`g${k}`, four)[0]?.url).toBe(before);
      const after = rendezvousOrder(`g${k}`, three)[0]?.url;
      if (before !== four[3]?.url) expect(after).toBe(before);
      else moved++;
    }
    // About a quarter of the keys were on the host that went; no others moved.
    expect(moved).toBeGreaterThan(180);
    expect(moved).toBeLessThan(320);
  });

  it("follows the hosts' weights", () => {
    const weighted = [
      { url: "a", weight: 3 },
      { url: "b", weight: 1 },
    ];
    let a = 0;
    for (let k = 0; k < 2000; k++) if (rendezvousOrder(`k${k}`, weighted)[0]?.url === "a") a++;
    expect(a / 2000).toBeGreaterThan(0.7);
    expect(a / 2000).toBeLessThan(0.8);
  });
});

describe("choosing a host", () => {
  const load = (loads: number[], cap = Number.POSITIVE_INFINITY): HostLoad[] =>
    loads.map((l, i) => ({ url: `h${i}`, weight: 1, load: l, cap, available: true }));

  it("homes a new group on the least loaded host, by weight, and on its rendezvous first when idle", () => {
    expect(chooseHost("k", [], load([3, 1, 2, 5]))).toBe("h1");
    const weighted = load([4, 3, 0, 0]).map((h, i) => ({ ...h, weight: i === 0 ? 4 : 1 }));
    // h0 holds 4 of a weight of 4: one more is 5/4, against 1/1 on an idle host of weight 1.
    expect(chooseHost("k", [], weighted)).not.toBe("h0");
    expect(chooseHost("k", [], load([0, 0, 0, 0]))).toBe(
      rendezvousOrder("k", load([0, 0, 0, 0]))[0]?.url,
    );
    // 32 groups of 8 over 4 hosts: each host ends with 8 of them.
    const fleet = load([0, 0, 0, 0]);
    for (let g = 0; g < 32; g++) {
      const home = fleet.find((h) => h.url === chooseHost(`g${g}`, [], fleet)) as HostLoad;
      home.load += 8;
    }
    expect(fleet.map((h) => h.load)).toEqual([64, 64, 64, 64]);
  });

  it("keeps the preferred host until it is above the bound, then takes the least loaded", () => {
    expect(chooseHost("k", ["h2"], load([10, 10, 10, 10]))).toBe("h2");
    // h2 at 20 against a mean of about 12.75: above 1.5x the mean and more than 4 over it.
    expect(chooseHost("k", ["h2"], load([10, 10, 20, 10]))).not.toBe("h2");
    // A small excess is within the slack.
    expect(chooseHost("k", ["h2"], load([1, 1, 4, 1]))).toBe("h2");
  });

  it("skips unavailable and full hosts, and answers null when every host is full", () => {
    const loads = load([1, 1], 2);
    loads[0] = { ...(loads[0] as HostLoad), available: false };
    expect(chooseHost("k", ["h0"], loads)).toBe("h1");
    expect(chooseHost("k", [], load([2, 2], 2))).toBeNull();
  });
});

describe("a host's health", () => {
  it("ejects after consecutive failures, not after failures someone saw it answer between", () => {
    let h = HEALTHY;
    for (const at of [10, 11]) h = failed(h, { at, okAt: 0, error: "x" }, 3).health;
    h = answered(h, 12);
    expect(h.failures).toBe(0);
    let ejected = false;
    for (const at of [13, 14, 15])
      ({ health: h, ejected } = failed(h, { at, okAt: 12, error: "x" }, 3));
    expect(ejected).toBe(true);
    expect(h.state).toBe("ejected");
    h = readmitted(h, 20);
    expect(h.state).toBe("probing");
    expect(failed(h, { at: 21, okAt: 0, error: "x" }, 3).health.state).toBe("ejected");
    expect(answered(h, 21).state).toBe("healthy");
    // On trial with nothing on it, a probe a period later makes it healthy; not sooner, and not
    // while episodes on it have yet to answer (a host can answer /models and hang on generation).
    expect(probed(h, 25, { idle: true, periodMs: 5 }).state).toBe("healthy");
    expect(probed(h, 22, { idle: true, periodMs: 5 }).state).toBe("probing");
    expect(probed(h, 25, { idle: false, periodMs: 5 }).state).toBe("probing");
    // A probe it fails puts it out again.
    expect(probeFailed(h, 25, "GET /models: refused").state).toBe("ejected");
  });

  it("puts an ejected host on trial when a generation answers after its ejection, not before", () => {
    let h = HEALTHY;
    for (const at of [10, 11, 12]) h = failed(h, { at, okAt: 0, error: "x" }, 3).health;
    expect(h.state).toBe("ejected");
    // An answer from before the ejection (a generation sent earlier) proves nothing new.
    expect(answered(h, 11.5).state).toBe("ejected");
    expect(answered(h, 13).state).toBe("probing");
    // A failure reported while it is out is not a second ejection.
    expect(failed(h, { at: 14, okAt: 13, error: "x" }, 3)).toMatchObject({
      ejected: false,
      health: { state: "ejected" },
    });
  });
});

describe("the adaptive cap", () => {
  const VLLM = `# HELP vllm:kv_cache_usage_perc KV-cache usage. 1 means 100 percent usage.
# TYPE vllm:kv_cache_usage_perc gauge
vllm:kv_cache_usage_perc{engine="0",model_name="Qwen/Qwen3-8B"} 0.42
vllm:kv_cache_usage_perc{engine="1",model_name="Qwen/Qwen3-8B"} 0.55
vllm:num_requests_running{engine="0",model_name="Qwen/Qwen3-8B"} 37.0
`;
  const SGLANG = `# TYPE sglang:token_usage gauge
sglang:token_usage{engine_type="unified",model_name="qwen",pp_rank="0",tp_rank="0"} 0.91
`;

  it("reads vLLM's and SGLang's KV usage, the busiest engine's", () => {
    expect(kvUsage(VLLM)).toBe(0.55);
    expect(kvUsage(SGLANG)).toBe(0.91);
    expect(kvUsage("# nothing here\n")).toBeNull();
  });

  it("grows while the cache has room and the cap binds, cuts to a 70 % fill when over 80 %", () => {
    expect(nextCap({ cap: 40, load: 40, waiting: 5 }, 0.3, 256)).toBe(50);
    expect(nextCap({ cap: 40, load: 40, waiting: 0 }, 0.3, 256)).toBe(40);
    expect(nextCap({ cap: 40, load: 20, waiting: 5 }, 0.3, 256)).toBe(40);
    expect(nextCap({ cap: 250, load: 250, waiting: 5 }, 0.3, 256)).toBe(256);
    expect(nextCap({ cap: 100, load: 100, waiting: 5 }, 0.9, 256)).toBe(77);
    expect(nextCap({ cap: 100, load: 90, waiting: 5 }, 0.7, 256)).toBe(100);
  });
});

describe("the configured fleet", () => {
  const base = { MAX_INFLIGHT_GENERATIONS: 256 };

  it("takes one URL as today, several separated by commas, or INFERENCE_HOSTS", () => {
    expect(fleetHosts({ ...base, INFERENCE_BASE_URL: "http://a:8000/v1/" })).toEqual([
      {
        url: "http://a:8000/v1",
        name: "a:8000",
        weight: 1,
        maxInflight: 256,
        adaptive: false,
        price: null,
      },
    ]);
    expect(
      fleetHosts({ ...base, INFERENCE_BASE_URL: "http://a:8000/v1, http://b:8000/v1" }).map(
        (h) => h.url,
      ),
    ).toEqual(["http://a:8000/v1", "http://b:8000/v1"]);
    const hostsJson = JSON.stringify([
      {
        url: "http://a:8000/v1",
        name: "gpu-a",
        weight: 2,
        max_inflight: 0,
        adaptive: true,
        price: { prompt: 0.1, cached: 0.025, completion: 0.4 },
      },
      { url: "http://b:8000/v1" },
    ]);
    expect(
      fleetHosts({
        ...base,
        INFERENCE_BASE_URL: "unused",
        INFERENCE_HOSTS: hostsJson,
        // The price of every host without its own.
        INFERENCE_PRICE: '{"prompt": 0.2, "completion": 0.8}',
      }),
    ).toEqual([
      {
        url: "http://a:8000/v1",
        name: "gpu-a",
        weight: 2,
        maxInflight: Number.POSITIVE_INFINITY,
        adaptive: true,
        price: { prompt: 0.1, cached: 0.025, completion: 0.4 },
      },
      expect.objectContaining({ url: "http://b:8000/v1", price: { prompt: 0.2, completion: 0.8 } }),
    ]);
  });

  it("refuses a price that does not read, naming the var and field", () => {
    expect(() =>
      fleetHosts({
        ...base,
        INFERENCE_BASE_URL: "http://a:8000/v1",
        INFERENCE_PRICE: '{"prompt": -1, "completion": 1}',
      }),
    ).toThrow(/INFERENCE_PRICE: prompt: /);
    expect(() =>
      fleetHosts({ ...base, INFERENCE_BASE_URL: "http://a:8000/v1", INFERENCE_PRICE: "0.2" }),
    ).toThrow(/INFERENCE_PRICE: /);
    expect(() =>
      fleetHosts({ ...base, INFERENCE_BASE_URL: "http://a:8000/v1", INFERENCE_PRICE: "{" }),
    ).toThrow(/INFERENCE_PRICE is not JSON/);
  });

  it("refuses a fleet that does not read, naming the host and field", () => {
    expect(() => fleetHosts({ ...base, INFERENCE_BASE_URL: "http://a/v1,not a url" })).toThrow(
      /INFERENCE_BASE_URL: 1: /,
    );
    expect(() =>
      fleetHosts({
        ...base,
        INFERENCE_BASE_URL: "x",
        INFERENCE_HOSTS: '[{"url": "http://a/v1", "weight": -1}]',
      }),
    ).toThrow(/INFERENCE_HOSTS: 0\.weight/);
    expect(() => fleetHosts({ ...base, INFERENCE_BASE_URL: "http://a/v1,http://a/v1/" })).toThrow(
      /twice/,
    );
  });
});
