/**
 * What a group's episodes share while they run: its spec and storage, its run's policy as it
 * follows it, and the parts of the world its turns call — the inference host (with the in-flight
 * limit and the group's token policy) and the step worker that runs the environment.
 */
import type { Config } from "../config";
import type { StepWorkerApi } from "../env-workers/step-worker";
import type { HostPermits } from "../fleet/host-permits";
import type { TokenPolicy } from "./generation/token-policy";
import type { SeamsCache } from "./generation/token-prompt";
import type { GroupSpec } from "./group-spec";
import type { PolicyWatch } from "./policy-watch";
import type { GroupStorage } from "./storage/group-storage";

/** Where a group's generations go, and how. */
export interface GenerationContext {
  /** The key every host of the fleet takes (INFERENCE_API_KEY). */
  apiKey: string | undefined;
  /**
   * The group's side of the fleet scheduler: each episode's permit names the host its
   * generations go to, and bounds what is in flight toward that host.
   */
  permits: HostPermits;
  /** What it asks of, records and lands of the host's tokens. */
  tokens: TokenPolicy;
  /** Token-in generation: the host template's seams, measured once for the group. */
  seams: SeamsCache;
}

export interface GroupRuntime {
  spec: GroupSpec;
  store: GroupStorage;
  config: Config;
  /** Asynchronous RL: the run's policy as the group follows it, and each turn's version. */
  policy: PolicyWatch;
  /** Resolves in the group's next write turn, shared by its episodes (write-turn.ts). */
  writeTurn: () => Promise<void>;
  generation: GenerationContext;
  /** Runs the environment's code: opening and stepping episodes. */
  environment: StepWorkerApi;
}
