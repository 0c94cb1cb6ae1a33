/**
 * The run producer's stub, cast once to the interface its class implements, as
 * src/rollout/bindings.ts casts every stub below this layer (it says why): that file cannot name
 * this object's interface without importing from a layer above it.
 */
import type { ProducerApi } from "./run-producer";

/** The run's producer: one per run id. */
export function runProducer(env: Env, runId: string): ProducerApi {
  return env.PRODUCER.get(env.PRODUCER.idFromName(runId)) as unknown as ProducerApi;
}
