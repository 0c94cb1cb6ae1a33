// One `vitest run` for everything: Workers-facing tests in workerd, CLI tests in Node. The SDK
// and environment suites run in both, which proves environment code is runtime-neutral.
import { cloudflareTest } from "@cloudflare/vitest-plugin";
import { defineConfig } from "vitest/config";

const portable = ["test/sdk/**/*.test.ts", "test/environments/**/*.test.ts"];

export default defineConfig({
  test: {
    projects: [
      {
        plugins: [cloudflareTest({ wrangler: { configPath: "./wrangler.toml" } })],
        test: { name: "workerd", include: [...portable, "test/worker/**/*.test.ts"] },
      },
      {
        test: {
          name: "node",
          environment: "node",
          include: [...portable, "test/cli/**/*.test.ts"],
        },
      },
    ],
  },
});
