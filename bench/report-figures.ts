/**
 * Reading a run's figures back from results.json, and saying them: a median with its spread and
 * repeats, and whether it meets its target (a single run is never judged).
 */
import type { Repeated } from "./repeats";
import type { Results } from "./results";

/** A repeated figure read back from results.json's three keys. */
export interface Figure {
  median: number | null;
  runs: number[];
  spread: [number, number] | null;
}

type Keyed = Record<string, unknown>;

export function figure(r: Results, key: string): Figure {
  const k: Keyed = r;
  return {
    median: (k[key] as number | null | undefined) ?? null,
    runs: (k[`${key}_runs`] as number[] | undefined) ?? [],
    spread: (k[`${key}_spread`] as [number, number] | null | undefined) ?? null,
  };
}

/** The figure at C of a by-C key. */
export function figureAt(r: Results, key: string, c: number | string): Figure {
  const k: Keyed = r;
  const of = <T>(suffix: string) => (k[`${key}${suffix}`] as Record<string, T> | undefined)?.[c];
  return {
    median: of<number | null>("") ?? null,
    runs: of<number[]>("_runs") ?? [],
    spread: of<[number, number] | null>("_spread") ?? null,
  };
}

/** A figure as a part measured it, before results.json. */
export const fromRepeated = (r: Repeated): Figure => ({
  median: Number.isFinite(r.median) ? r.median : null,
  runs: r.runs,
  spread: Number.isFinite(r.min) ? [r.min, r.max] : null,
});

export const fmt = (n: number | null | undefined, digits = 2) =>
  n === null || n === undefined || !Number.isFinite(n) ? "—" : n.toFixed(digits);

/** "0.52 (0.48–0.57, 6 runs)", or "0.52 (one run)". */
export function withSpread(f: Figure, digits = 2): string {
  if (f.median === null) return "—";
  if (f.runs.length <= 1) return `${fmt(f.median, digits)} (one run)`;
  return `${fmt(f.median, digits)} (${fmt(f.spread?.[0], digits)}–${fmt(f.spread?.[1], digits)}, ${f.runs.length} runs)`;
}

export interface Target {
  label: string;
  meets: (value: number) => boolean;
}

export const atLeast = (n: number): Target => ({ label: `≥ ${n}`, meets: (v) => v >= n });
export const atMost = (n: number): Target => ({ label: `≤ ${n}`, meets: (v) => v <= n });
export const under = (n: number): Target => ({ label: `< ${n}`, meets: (v) => v < n });

/** Every repeat met the target (none measured: false). */
export function metInEveryRun(f: Figure, target: Target): boolean {
  return f.runs.length > 0 && f.runs.every((v) => Number.isFinite(v) && target.meets(v));
}

/** Met by the median, with how many repeats met it; a single run settles nothing. */
export function verdict(f: Figure, target: Target | null): string {
  if (target === null || f.median === null) return "";
  if (f.runs.length <= 1) return "one run: not settled";
  const k = f.runs.filter((v) => Number.isFinite(v) && target.meets(v)).length;
  return `${target.meets(f.median) ? "yes" : "**no**"} (${k} of ${f.runs.length} runs)`;
}
