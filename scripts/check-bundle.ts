/**
 * `npm run bundle:check`: builds the deploy bundle exactly as `wrangler deploy` would (with
 * `--dry-run`, so nothing is uploaded), and fails unless it built, holds no Node-only module,
 * and fits the Workers size limit. Prints the sizes docs/deploying.md quotes. CI runs it.
 */
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { gzipSync } from "node:zlib";
import { wranglerCommand } from "../src/cli/local-stack";
import { PROJECT_ROOT } from "../src/cli/project";

/** Workers' size limit per Worker, uncompressed, on every plan (developers.cloudflare.com). */
const LIMIT_BYTES = 64 * 2 ** 20;
/** The limit it replaced, after compression, on the Free plan: the stricter of the two. */
const FORMER_FREE_COMPRESSED_BYTES = 3 * 2 ** 20;

const out = mkdtempSync(join(tmpdir(), "edgeroll-bundle-"));
try {
  const [command, args] = wranglerCommand("deploy", "--dry-run", "--outdir", out);
  const built = spawnSync(command, args, { cwd: PROJECT_ROOT, encoding: "utf8" });
  if (built.status !== 0) {
    console.error(`wrangler deploy --dry-run failed:\n${built.stdout}\n${built.stderr}`);
    process.exit(1);
  }
  const code = readFileSync(join(out, "index.js"));
  const gzip = gzipSync(code, { level: 9 }).length;
  // No nodejs_compat: a Node built-in would fail at deploy; say which one here instead.
  const nodeModules = [
    ...code.toString("utf8").matchAll(/(?:from|import|require)\s*\(?\s*["'](node:[\w/]+)["']/g),
  ].map((m) => m[1]);
  const kib = (n: number) => `${(n / 1024).toFixed(1)} KiB`;
  console.log(`deploy bundle: ${kib(code.length)}, ${kib(gzip)} gzipped`);
  console.log(
    `limit: ${kib(LIMIT_BYTES)} uncompressed (${((100 * code.length) / LIMIT_BYTES).toFixed(1)}% used); former Free-plan limit ${kib(FORMER_FREE_COMPRESSED_BYTES)} gzipped (${((100 * gzip) / FORMER_FREE_COMPRESSED_BYTES).toFixed(1)}% used)`,
  );
  const problems = [
    ...(nodeModules.length > 0
      ? [`Node-only modules in the bundle: ${[...new Set(nodeModules)].join(", ")}`]
      : []),
    ...(code.length > LIMIT_BYTES ? ["the bundle is over the Workers size limit"] : []),
    ...(gzip > FORMER_FREE_COMPRESSED_BYTES ? ["the bundle is over 3 MiB gzipped"] : []),
  ];
  if (problems.length > 0) {
    console.error(problems.join("\n"));
    process.exit(1);
  }
  console.log("no Node-only module in the bundle");
} finally {
  rmSync(out, { recursive: true, force: true });
}
