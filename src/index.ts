/**
 * The edgeroll Worker: the HTTP API, the group Durable Objects, the fleet scheduler and the
 * stateless step and score workers, all in one deployable Worker.
 */
import { app } from "./app";

export { ScoreWorker } from "./env-workers/score-worker";
export { StepWorker } from "./env-workers/step-worker";
export { FleetScheduler } from "./fleet/fleet-scheduler";
export { JudgeGate } from "./judges/judge-gate";
export { RunProducer } from "./producer/run-producer";
export { RolloutGroup } from "./rollout/group-object";
export { Lander } from "./rollout/lander";

export default app satisfies ExportedHandler<Env>;
