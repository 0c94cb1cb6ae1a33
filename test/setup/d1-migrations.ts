// Runs before each workerd test file: applies the D1 migrations, as `wrangler d1 migrations
// apply` does for a real database.
import { applyD1Migrations } from "cloudflare:test";
import { env } from "cloudflare:workers";

await applyD1Migrations(env.DB, env.TEST_MIGRATIONS);
