/**
 * A figure measured more than once: its median, its spread and every repeat, so that no figure
 * the bench publishes rests on one run without saying so.
 */

export interface Repeated {
  median: number;
  min: number;
  max: number;
  /** Every repeat, in the order measured. */
  runs: number[];
}

export function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  if (sorted.length === 0) return Number.NaN;
  return sorted.length % 2
    ? (sorted[mid] as number)
    : ((sorted[mid - 1] as number) + (sorted[mid] as number)) / 2;
}

export function repeated(runs: readonly number[]): Repeated {
  const finite = runs.filter(Number.isFinite);
  return {
    median: median(finite),
    min: finite.length > 0 ? Math.min(...finite) : Number.NaN,
    max: finite.length > 0 ? Math.max(...finite) : Number.NaN,
    runs: [...runs],
  };
}

/** `f` over each repeat of a list of runs, as one repeated figure. */
export function over<T>(runs: readonly T[], f: (run: T) => number): Repeated {
  return repeated(runs.map(f));
}

/**
 * The order of two parts in repeat `r`: alternated, so warm-up and drift fall on both alike.
 * Even repeats run `a` first.
 */
export async function alternated<A, B>(
  r: number,
  a: () => Promise<A>,
  b: () => Promise<B>,
): Promise<{ a: A; b: B; first: "a" | "b" }> {
  if (r % 2 === 0) {
    const first = await a();
    return { a: first, b: await b(), first: "a" };
  }
  const first = await b();
  return { a: await a(), b: first, first: "b" };
}

/** A repeated figure as results.json holds it: `name`, `name_runs` and `name_spread`. */
export type RepeatedKeys<N extends string> = { [K in N]: number | null } & {
  [K in `${N}_runs`]: number[];
} & { [K in `${N}_spread`]: [number, number] | null };

export function keysOf<N extends string>(name: N, figure: Repeated | null): RepeatedKeys<N> {
  return {
    [name]: figure === null || !Number.isFinite(figure.median) ? null : figure.median,
    [`${name}_runs`]: figure?.runs ?? [],
    [`${name}_spread`]:
      figure === null || !Number.isFinite(figure.min) ? null : [figure.min, figure.max],
  } as RepeatedKeys<N>;
}
