// Vitest global setup (runs in Node): a real OpenAI-compatible HTTP server — edgeroll's
// simulator — for the Worker under test to call. Its URL reaches workerd as INFERENCE_BASE_URL.
import type { TestProject } from "vitest/node";
import { startSimulator } from "../../src/sim/server";

declare module "vitest" {
  export interface ProvidedContext {
    inferenceUrl: string;
  }
}

export default async function setup(project: TestProject) {
  const simulator = await startSimulator();
  project.provide("inferenceUrl", simulator.url);
  return () => simulator.close();
}
