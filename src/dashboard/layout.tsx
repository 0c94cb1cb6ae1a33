/** The page shell: one stylesheet, a header, no script. */
import type { Child } from "hono/jsx";

const STYLE = `
:root { color-scheme: light; --ink: #111827; --muted: #6b7280; --line: #e5e7eb; --bg: #f9fafb; }
* { box-sizing: border-box; }
body { margin: 0; font: 14px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; color: var(--ink); background: var(--bg); }
header { background: #111827; color: white; padding: 10px 24px; display: flex; gap: 20px; align-items: baseline; }
header a { color: white; text-decoration: none; font-weight: 600; }
header span { color: #9ca3af; }
main { padding: 18px 24px 48px; max-width: 1280px; }
h1 { font-size: 20px; margin: 4px 0 14px; } h2 { font-size: 16px; margin: 26px 0 8px; }
table { border-collapse: collapse; background: white; border: 1px solid var(--line); width: 100%; }
th, td { text-align: left; padding: 5px 10px; border-bottom: 1px solid var(--line); white-space: nowrap; }
th { font-weight: 600; color: var(--muted); font-size: 12px; text-transform: uppercase; letter-spacing: .03em; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; }
a { color: #1d4ed8; }
.cards { display: flex; gap: 12px; flex-wrap: wrap; }
.card { background: white; border: 1px solid var(--line); border-radius: 8px; padding: 10px 14px; min-width: 130px; }
.card b { display: block; font-size: 20px; }
.card span { color: var(--muted); font-size: 12px; }
.charts { display: flex; gap: 16px; flex-wrap: wrap; align-items: flex-start; }
.chart { background: white; border: 1px solid var(--line); border-radius: 8px; padding: 10px 12px; margin: 0; }
.chart figcaption { font-weight: 600; margin-bottom: 6px; }
.chart .axis { stroke: #9ca3af; } .chart .track { fill: #f3f4f6; }
.chart .tick { font-size: 10px; fill: var(--muted); text-anchor: middle; } .chart .label { font-size: 11px; fill: var(--ink); }
.legend { list-style: none; padding: 0; margin: 6px 0 0; display: flex; flex-wrap: wrap; gap: 4px 12px; font-size: 12px; }
.swatch { display: inline-block; width: 10px; height: 10px; border-radius: 2px; margin-right: 4px; }
.pill { display: inline-block; padding: 1px 8px; border-radius: 999px; font-size: 12px; background: #e5e7eb; }
.pill.landed, .pill.completed, .pill.acked { background: #d1fae5; } .pill.failed { background: #fee2e2; }
.pill.truncated, .pill.parked { background: #fef3c7; } .pill.running, .pill.scoring, .pill.leased { background: #dbeafe; }
.transcript { display: flex; flex-direction: column; gap: 8px; max-width: 980px; }
.message { background: white; border: 1px solid var(--line); border-left: 4px solid #9ca3af; border-radius: 6px; padding: 8px 12px; }
.message.sampled { border-left-color: #2563eb; } .message.env { border-left-color: #059669; } .message.system { border-left-color: #7c3aed; }
.message .meta { color: var(--muted); font-size: 12px; display: flex; gap: 12px; flex-wrap: wrap; margin-bottom: 4px; }
.message .role { font-weight: 700; color: var(--ink); }
.message pre { white-space: pre-wrap; word-break: break-word; margin: 0; font: 13px/1.45 ui-monospace, SFMono-Regular, Menlo, monospace; }
.tool { background: #f3f4f6; border-radius: 4px; padding: 6px 8px; margin-top: 6px; }
.tool-pair { display: grid; grid-template-columns: 1fr 1fr; gap: 8px; }
.tool-pair > div { background: #f3f4f6; border-radius: 4px; padding: 6px 8px; margin-top: 6px; }
.credit b { color: var(--ink); }
.empty { color: var(--muted); }
.note { color: var(--muted); font-size: 0.85em; max-width: 60em; }
.warn { color: #b45309; }
tr.warn td { background: #fff7ed; }
`;

export function Layout(props: { title: string; children: Child }) {
  return (
    <html lang="en">
      <head>
        <meta charset="utf-8" />
        <meta name="viewport" content="width=device-width, initial-scale=1" />
        <title>{`${props.title} · edgeroll`}</title>
        <style>{STYLE}</style>
      </head>
      <body>
        <header>
          <a href="/">edgeroll</a>
          <span>multi-turn RL rollouts</span>
        </header>
        <main>{props.children}</main>
      </body>
    </html>
  );
}

export function Pill(props: { value: string | null }) {
  return <span class={`pill ${props.value ?? ""}`}>{props.value ?? "-"}</span>;
}

export function fmt(value: number | null | undefined, digits = 3): string {
  return value === null || value === undefined
    ? "-"
    : Number.isInteger(value)
      ? String(value)
      : value.toFixed(digits);
}
