/**
 * The busy-fleet part: how much of the hosts' time an asynchronous training loop keeps them
 * generating, with a weight sync each step that holds (the generations in flight finish) or
 * interrupts (aborted at once, token-in turns continued after the resume). A producer keeps a
 * set number of groups in flight on a fleet of simulated hosts; each step the trainer waits for
 * a batch of groups to land, pauses the run, waits for idle, loads weights (a set time, hosts
 * idle by necessity), and resumes at the next version. The figure is the share of host-seconds
 * outside the weight loads with at least one generation running (each simulator counts its busy
 * time), so 1 is the physical limit.
 */
import { withStack } from "../reliability/harness";
import { EdgerollClient } from "../src/client/edgeroll-client";
import { type SimFleet, startSimFleet } from "../src/sim/fleet";
import { alternated, type Repeated, repeated } from "./repeats";
import { BENCH_MAX_INFLIGHT } from "./stack";

export interface BusyPlan {
  hosts: number;
  steps: number;
  /** Groups that land per training step. */
  groupsPerStep: number;
  /** Groups the producer keeps in flight. */
  inFlightGroups: number;
  groupSize: number;
  /** The longest generation, in tokens, streamed at `tokensPerS`; each group draws its own. */
  tokens: number;
  tokensPerS: number;
  /** How long each weight load keeps the hosts, ms. */
  loadMs: number;
  repeats: number;
}

export interface BusyResult {
  /** Busy host-seconds over host-seconds outside the loads, per repeat. */
  hold: Repeated;
  interrupt: Repeated;
  /** Each mode's mean stall per step (pause to nothing in flight), ms, per repeat. */
  holdStallMs: Repeated;
  interruptStallMs: Repeated;
  plan: BusyPlan;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * How often each producer slot asks whether its group has landed. Each ask is a D1 read and a
 * call on the group's object, on workerd's one thread: at 50 ms, 16 slots made 320 a second,
 * load that slowed the pauses they were measuring (an interrupted stall of 190-310 ms a step,
 * where one sync alone takes about 80). A slot noticing a landing later leaves its hosts busy
 * with the other slots' generations.
 */
const SLOT_POLL_MS = 250;

/** One training loop of `plan.steps` steps; the busy fraction and the mean stall. */
async function oneLoop(
  client: EdgerollClient,
  fleet: SimFleet,
  plan: BusyPlan,
  runId: string,
  interrupt: boolean,
  random: () => number,
): Promise<{ busy: number; stallMs: number }> {
  await client.setPolicy(runId, { version: 0 });
  const generationMs = (plan.tokens / plan.tokensPerS) * 1000;
  let landed = 0;
  let stopping = false;
  // The producer: each slot starts a group, waits for it to land, and starts the next.
  const slot = async (s: number) => {
    for (let i = 0; !stopping; i++) {
      const tokens = Math.round(plan.tokens * (0.2 + 0.8 * random()));
      const { group_id: id } = await client.startGroup({
        env: "marathon",
        example: {
          id: `${runId}-${s}-${i}`,
          input: "Go.",
          metadata: { turns: 1, reply_bytes: 20 },
        },
        group_size: plan.groupSize,
        run_id: runId,
        generation: "tokens",
        sampling: { model: "sim", seed: s * 1000 + i + 1, max_completion_tokens: tokens },
      });
      await client.waitForGroup(id, { intervalMs: SLOT_POLL_MS, timeoutMs: generationMs * 10 });
      landed++;
    }
  };
  const slots = Array.from({ length: plan.inFlightGroups }, (_, s) => slot(s));
  const busyOf = () => fleet.hosts.reduce((n, h) => n + h.stats().busyMs, 0);
  // Measured from the first step's start: the producer has filled the hosts by then.
  while (landed < plan.groupsPerStep) await sleep(20);
  const busyBefore = busyOf();
  const started = Date.now();
  let loadsMs = 0;
  let stallsMs = 0;
  for (let step = 1; step <= plan.steps; step++) {
    while (landed < (step + 1) * plan.groupsPerStep) await sleep(20);
    const pausedAt = Date.now();
    const answer = await client.setPolicy(runId, { version: step, paused: true, interrupt });
    if (answer.in_flight_generations !== 0)
      await client.waitIdle(runId, { intervalMs: 20, timeoutMs: generationMs * 3 });
    const loadAt = Date.now();
    stallsMs += loadAt - pausedAt;
    await sleep(plan.loadMs);
    loadsMs += Date.now() - loadAt;
    await client.setPolicy(runId, { version: step, paused: false });
  }
  const busy = busyOf() - busyBefore;
  const outsideLoads = plan.hosts * (Date.now() - started - loadsMs);
  stopping = true;
  await Promise.all(slots);
  return { busy: busy / outsideLoads, stallMs: stallsMs / plan.steps };
}

export async function measureBusyFleet(
  plan: BusyPlan,
  say: (line: string) => void = () => {},
): Promise<BusyResult> {
  const fleet = await startSimFleet(plan.hosts, {
    longTokens: plan.tokens,
    latency: { msPerToken: 1000 / plan.tokensPerS },
  });
  // Seeded, so reruns draw the same generation lengths.
  let seed = 11;
  const random = () => {
    seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31;
    return seed / 2 ** 31;
  };
  try {
    return await withStack(
      {
        inferenceUrl: fleet.baseUrl,
        vars: { MAX_INFLIGHT_GENERATIONS: String(BENCH_MAX_INFLIGHT) },
      },
      async (stack) => {
        const client = new EdgerollClient({
          baseUrl: stack.apiUrl,
          token: stack.tokens.admin,
          attempts: 5,
        });
        const busy = { hold: [] as number[], interrupt: [] as number[] };
        const stalls = { hold: [] as number[], interrupt: [] as number[] };
        for (let r = 0; r < plan.repeats; r++) {
          const loop = (interrupt: boolean) =>
            oneLoop(
              client,
              fleet,
              plan,
              `busy-${r}-${interrupt ? "cut" : "hold"}`,
              interrupt,
              random,
            );
          const { a: held, b: cut } = await alternated(
            r,
            () => loop(false),
            () => loop(true),
          );
          busy.hold.push(held.busy);
          busy.interrupt.push(cut.busy);
          stalls.hold.push(held.stallMs);
          stalls.interrupt.push(cut.stallMs);
          say(
            `busy fleet, repeat ${r + 1}: ${held.busy.toFixed(3)} held (stall ${held.stallMs.toFixed(0)} ms a step), ${cut.busy.toFixed(3)} interrupted (${cut.stallMs.toFixed(0)} ms)`,
          );
        }
        return {
          hold: repeated(busy.hold),
          interrupt: repeated(busy.interrupt),
          holdStallMs: repeated(stalls.hold),
          interruptStallMs: repeated(stalls.interrupt),
          plan,
        };
      },
    );
  } finally {
    await fleet.close();
  }
}
