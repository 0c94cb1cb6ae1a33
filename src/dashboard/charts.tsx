/** Plots as server-rendered SVG: no script, no build step, readable in any browser. */

const PALETTE = [
  "#2563eb",
  "#d97706",
  "#059669",
  "#dc2626",
  "#7c3aed",
  "#0891b2",
  "#65a30d",
  "#db2777",
];

/**
 * The i-th series' colour: the palette's eight, then hues a golden angle apart (each new one
 * as far as it can be from those before it), so twenty runs are twenty colours, not a palette
 * that repeats after eight.
 */
export function color(i: number): string {
  if (i < PALETTE.length) return PALETTE[i] as string;
  const n = i - PALETTE.length;
  const hue = Math.round((n * 137.508 + 15) % 360);
  const lightness = [42, 55, 34][n % 3];
  return `hsl(${hue} 70% ${lightness}%)`;
}

export interface Bin {
  label: string;
  count: number;
}

/** Equal-width bins over [min, max] (a single bin when every value is the same). */
export function binValues(values: readonly number[], bins = 10): Bin[] {
  if (values.length === 0) return [];
  const min = Math.min(...values);
  const max = Math.max(...values);
  if (min === max) return [{ label: String(min), count: values.length }];
  const width = (max - min) / bins;
  const digits = max - min < 2 ? 2 : 1;
  const counts = new Array<number>(bins).fill(0);
  for (const v of values) {
    const bin = Math.min(Math.floor((v - min) / width), bins - 1);
    counts[bin] = (counts[bin] ?? 0) + 1;
  }
  return counts.map((count, i) => ({ label: (min + i * width).toFixed(digits), count }));
}

export function Histogram(props: { title: string; bins: Bin[]; fill: string; testId: string }) {
  const [w, h, pad] = [260, 120, 18];
  const top = Math.max(1, ...props.bins.map((b) => b.count));
  const bw = (w - 2 * pad) / Math.max(props.bins.length, 1);
  return (
    <figure class="chart" data-testid={props.testId}>
      <figcaption>{props.title}</figcaption>
      <svg
        viewBox={`0 0 ${w} ${h + 16}`}
        width={w}
        height={h + 16}
        role="img"
        aria-label={props.title}
      >
        <line x1={pad} y1={h} x2={w - pad} y2={h} class="axis" />
        {props.bins.map((b, i) => {
          const bh = ((h - pad) * b.count) / top;
          return (
            <g>
              <rect
                x={pad + i * bw + 1}
                y={h - bh}
                width={Math.max(bw - 2, 1)}
                height={bh}
                fill={props.fill}
              >
                <title>{`${b.label}: ${b.count}`}</title>
              </rect>
              {i % Math.ceil(props.bins.length / 5) === 0 ? (
                <text x={pad + i * bw + bw / 2} y={h + 12} class="tick">
                  {b.label}
                </text>
              ) : null}
            </g>
          );
        })}
      </svg>
    </figure>
  );
}

/** Horizontal bars for shares in [0, 1], e.g. success rate per environment. */
export function ShareBars(props: {
  title: string;
  rows: { label: string; value: number }[];
  testId: string;
}) {
  const [w, row] = [320, 22];
  const labelW = 110;
  return (
    <figure class="chart" data-testid={props.testId}>
      <figcaption>{props.title}</figcaption>
      <svg
        viewBox={`0 0 ${w} ${row * props.rows.length + 4}`}
        width={w}
        height={row * props.rows.length + 4}
        role="img"
        aria-label={props.title}
      >
        {props.rows.map((r, i) => (
          <g>
            <text x={0} y={i * row + 15} class="label">
              {r.label}
            </text>
            <rect x={labelW} y={i * row + 4} width={w - labelW - 40} height={14} class="track" />
            <rect
              x={labelW}
              y={i * row + 4}
              width={(w - labelW - 40) * r.value}
              height={14}
              fill={color(i)}
            />
            <text x={w - 36} y={i * row + 15} class="label">
              {`${Math.round(r.value * 100)}%`}
            </text>
          </g>
        ))}
      </svg>
    </figure>
  );
}

export interface Series {
  name: string;
  points: { x: number; y: number }[];
}

/** Lines over integer x, e.g. mean reward by policy version, one line per run and env. */
export function LineChart(props: {
  title: string;
  series: Series[];
  xLabel: string;
  testId: string;
}) {
  const [w, h, pad] = [420, 180, 30];
  const points = props.series.flatMap((s) => s.points);
  const [x0, x1] = [Math.min(...points.map((p) => p.x)), Math.max(...points.map((p) => p.x))];
  const [y0, y1] = [Math.min(0, ...points.map((p) => p.y)), Math.max(1, ...points.map((p) => p.y))];
  const sx = (x: number) => pad + ((x - x0) / Math.max(x1 - x0, 1)) * (w - 2 * pad);
  const sy = (y: number) => h - pad - ((y - y0) / Math.max(y1 - y0, 1e-9)) * (h - 2 * pad);
  return (
    <figure class="chart" data-testid={props.testId}>
      <figcaption>{props.title}</figcaption>
      <svg viewBox={`0 0 ${w} ${h}`} width={w} height={h} role="img" aria-label={props.title}>
        <line x1={pad} y1={h - pad} x2={w - pad} y2={h - pad} class="axis" />
        <line x1={pad} y1={pad} x2={pad} y2={h - pad} class="axis" />
        <text x={w / 2} y={h - 2} class="tick">
          {props.xLabel}
        </text>
        {[...new Set(points.map((p) => p.x))].map((x) => (
          <text x={sx(x)} y={h - pad + 12} class="tick">
            {String(x)}
          </text>
        ))}
        <text x={4} y={sy(y1) + 4} class="label">
          {y1.toFixed(1)}
        </text>
        <text x={4} y={sy(y0) + 4} class="label">
          {y0.toFixed(1)}
        </text>
        {props.series.map((s, i) => (
          <g>
            <polyline
              points={s.points.map((p) => `${sx(p.x)},${sy(p.y)}`).join(" ")}
              fill="none"
              stroke={color(i)}
              stroke-width={2}
            />
            {s.points.map((p) => (
              <circle cx={sx(p.x)} cy={sy(p.y)} r={3.5} fill={color(i)}>
                <title>{`${s.name} v${p.x}: ${p.y.toFixed(3)}`}</title>
              </circle>
            ))}
          </g>
        ))}
      </svg>
      <ul class="legend">
        {props.series.map((s, i) => (
          <li>
            <span class="swatch" style={`background:${color(i)}`} />
            {s.name}
          </li>
        ))}
      </ul>
    </figure>
  );
}
