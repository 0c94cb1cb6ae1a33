/** What the Worker calls on a group's object, and what it answers (bindings.ts hands out the stub). */
import type { GroupSpec } from "./group-spec";

export type StartResult = { outcome: "created" | "existing" } | { outcome: "conflict" };

export interface RolloutGroupApi {
  start(spec: GroupSpec): Promise<StartResult>;
  status(): Promise<LiveGroupStatus | null>;
}

/** An episode as a status view shows it; states and reasons as strings, as D1 holds them. */
export interface EpisodeStatus {
  episode_id: string;
  index: number;
  state: string;
  turns: number;
  end_reason: string | null;
  failure_reason: string | null;
  failure_detail: string | null;
  redispatches: number;
  /** When a parked generation will be retried (ISO time), if it is parked. */
  retry_at: string | null;
  score: number | null;
  advantage: number | null;
}

export interface LiveGroupStatus {
  spec: GroupSpec;
  status: "running" | "scoring";
  warnings: string[];
  episodes: EpisodeStatus[];
  lastError: string | null;
}
