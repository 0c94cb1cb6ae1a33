// Bindings the test configuration adds to the Worker's own.
import type { D1Migration } from "cloudflare:test";

declare global {
  namespace Cloudflare {
    interface Env {
      TEST_MIGRATIONS: D1Migration[];
      /** The remote environment fixture (test/setup/remote-env-host.ts), for its counters. */
      TEST_REMOTE_ENV_URL: string;
      /** The fleet tests' control of the simulated hosts (test/setup/inference-fleet.ts). */
      TEST_FLEET_CONTROL_URL: string;
    }
  }
}
