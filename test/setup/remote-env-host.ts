// Vitest global setup (runs in Node): a real remote environment server over HTTP (guess-number
// behind the remote protocol, with faults on demand) and a URL where nothing listens. They reach
// workerd as REMOTE_ENVS, the way a deployment configures them.
import type { TestProject } from "vitest/node";
import { RubricQuiz } from "../../fixtures/environments/rubric-quiz";
import { ToolAgentNative } from "../../src/environments/tool-agent-native";
import { deadUrl, startRemoteEnvFixture } from "./remote-env-server";
import { REMOTE_ENV_TOKEN } from "./remote-env-token";

declare module "vitest" {
  export interface ProvidedContext {
    remoteEnvs: string;
    remoteEnvUrl: string;
  }
}

export default async function setup(project: TestProject) {
  const fixture = await startRemoteEnvFixture(REMOTE_ENV_TOKEN);
  // Native tools over the protocol: the tools come with /start.
  const native = await startRemoteEnvFixture(REMOTE_ENV_TOKEN, {
    name: "tool-agent-native-remote",
    make: () => new ToolAgentNative(),
  });
  // A rubric over the protocol: /score answers each grade's components.
  const rubric = await startRemoteEnvFixture(REMOTE_ENV_TOKEN, {
    name: "rubric-quiz-remote",
    make: () => new RubricQuiz(),
  });
  project.provide("remoteEnvUrl", fixture.url);
  project.provide(
    "remoteEnvs",
    JSON.stringify({
      "guess-number-remote": fixture.url,
      "tool-agent-native-remote": native.url,
      "rubric-quiz-remote": rubric.url,
      "remote-down": await deadUrl(),
    }),
  );
  const close = (server: typeof fixture.server) =>
    new Promise<void>((resolve) => server.close(() => resolve()));
  return async () => {
    await close(fixture.server);
    await close(native.server);
    await close(rubric.server);
  };
}
