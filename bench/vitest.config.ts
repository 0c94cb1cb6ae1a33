// The workerd part of `npm run bench`: landing and serving, with real local D1.

import { resolve } from "node:path";
import { cloudflareTest, readD1Migrations } from "@cloudflare/vitest-plugin";
import { defineConfig } from "vitest/config";

const root = resolve(import.meta.dirname, "..");

export default defineConfig({
  plugins: [
    cloudflareTest(async () => ({
      wrangler: { configPath: resolve(root, "wrangler.toml") },
      miniflare: {
        bindings: {
          API_TOKENS: JSON.stringify({ "test-token-all-roles": ["producer", "trainer", "reader"] }),
          TEST_MIGRATIONS: await readD1Migrations(resolve(root, "migrations")),
          BENCH_GROUPS: process.env.BENCH_GROUPS ?? "200",
          BENCH_REPEATS: process.env.BENCH_REPEATS ?? "1",
        },
      },
    })),
  ],
  test: {
    root: import.meta.dirname,
    include: ["workerd/**/*.test.ts"],
    setupFiles: [resolve(root, "test/setup/d1-migrations.ts")],
    testTimeout: 600_000,
  },
});
