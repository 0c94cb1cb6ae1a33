/**
 * What `npm run bench` measures and how much of it: the full plan, or `--quick`'s (a smoke run
 * of every part, whose figures are not published). The parts' own scripts (`bench:sync`, …)
 * take their sizes from here, so a part run alone measures what the full run does.
 */
export function benchPlan(quick: boolean) {
  return quick
    ? {
        overhead: { groups: 4, repeats: 2, warmUps: 1 },
        sweep: { concurrencies: [8, 64], turns: 6, rounds: 1 },
        growthTurns: 10,
        landing: { groups: 50, repeats: 2 },
        tokens: { groups: 4, repeats: 2 },
        remote: { groups: 4, repeats: 2 },
        tokenIn: { groups: 4, repeats: 1 },
        fleet: { hosts: 4, groups: 4, groupSize: 4, turns: 4, repeats: 1, kvBlocks: 20_000 },
        sync: { groups: 4, tokens: 200, tokensPerS: 100, repeats: 1 },
        busy: {
          hosts: 4,
          steps: 2,
          groupsPerStep: 4,
          inFlightGroups: 4,
          groupSize: 2,
          tokens: 100,
          tokensPerS: 100,
          loadMs: 200,
          repeats: 1,
        },
        signal: { examples: 16, groupSize: 4, temperature: 1, maxResamples: 4, repeats: 1 },
      }
    : {
        overhead: { groups: 32, repeats: 6, warmUps: 2 },
        sweep: { concurrencies: [8, 64, 256, 1024], turns: 12, rounds: 3 },
        growthTurns: 50,
        landing: { groups: 600, repeats: 4 },
        tokens: { groups: 16, repeats: 4 },
        remote: { groups: 16, repeats: 4 },
        tokenIn: { groups: 16, repeats: 3 },
        fleet: { hosts: 4, groups: 32, groupSize: 8, turns: 8, repeats: 3, kvBlocks: 20_000 },
        // 20-s generations: 2,000 tokens at 100 a second, started 0.56 s apart. Five repeats: an
        // interrupted stall varies 60-110 ms from run to run, so three left the ratio's median
        // to one noisy pair.
        sync: { groups: 32, tokens: 2000, tokensPerS: 100, repeats: 5 },
        // 20 steps on 4 hosts; generations of 1.2 to 6 s (up to 600 tokens at 100 a second).
        busy: {
          hosts: 4,
          steps: 20,
          groupsPerStep: 16,
          inFlightGroups: 16,
          groupSize: 4,
          tokens: 600,
          tokensPerS: 100,
          loadMs: 500,
          repeats: 2,
        },
        // exact-answer slips with probability 0.15 at temperature 1: a group of 4 lands uniform
        // about half the time (0.85^4 + 0.15^4 = 0.52).
        signal: { examples: 128, groupSize: 4, temperature: 1, maxResamples: 4, repeats: 3 },
      };
}

export type BenchPlan = ReturnType<typeof benchPlan>;
