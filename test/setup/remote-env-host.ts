// Vitest global setup (runs in Node): a real remote environment server over HTTP (guess-number
// behind the remote protocol, with faults on demand) and a URL where nothing listens. They reach
// workerd as REMOTE_ENVS, the way a deployment configures them.
import type { TestProject } from "vitest/node";
import { deadUrl, startRemoteEnvFixture } from "./remote-env-server";

export const REMOTE_ENV_TOKEN = "remote-env-test-secret";

declare module "vitest" {
  export interface ProvidedContext {
    remoteEnvs: string;
    remoteEnvUrl: string;
  }
}

export default async function setup(project: TestProject) {
  const fixture = await startRemoteEnvFixture(REMOTE_ENV_TOKEN);
  project.provide("remoteEnvUrl", fixture.url);
  project.provide(
    "remoteEnvs",
    JSON.stringify({ "guess-number-remote": fixture.url, "remote-down": await deadUrl() }),
  );
  return () => new Promise<void>((resolve) => fixture.server.close(() => resolve()));
}
