/** What the Worker calls on a group's object, and what it answers (bindings.ts hands out the stub). */
import type { Spend } from "../costs/spend";
import type { KnownPolicy } from "../policy/known-policy";
import type { GroupSpec } from "./group-spec";
import type { EndReason, EpisodeState, FailureReason } from "./outcomes";
import type { StartCaps } from "./registration";

/** A start's answer; `over_quota` and `over_max_groups`: refused by its caps, nothing kept. */
export type StartResult =
  | { outcome: "created" | "existing" }
  | { outcome: "conflict" }
  | { outcome: "over_quota" | "over_max_groups" };

export interface RolloutGroupApi {
  start(
    spec: GroupSpec,
    runPolicy?: KnownPolicy | null,
    caps?: StartCaps | null,
  ): Promise<StartResult>;
  status(): Promise<LiveGroupStatus | null>;
  /**
   * The run's policy changed: follow it (resume, abort the generations in flight at an
   * interrupting pause, or cancel a group gone stale). Answers its generations still in flight.
   */
  policyChanged(policy: KnownPolicy): Promise<number>;
  /** Its generations in flight: sent, not yet answered, not aborted by an interrupt. */
  inFlightGenerations(): Promise<number>;
  /**
   * What it has spent so far (in-flight-spend.ts), and its generations in flight; null once it
   * holds no group (it landed, or never started): its rows in D1 count instead.
   */
  spend(): Promise<{ spend: Spend; inFlightGenerations: number } | null>;
  /**
   * The fleet changed under the group's episodes (a host ejected, paused, or serving another
   * version): each checks its host with the fleet scheduler before its next generation.
   */
  hostsChanged(): Promise<void>;
  /**
   * A rolling sync interrupts the host: the group's generations in flight there are aborted (and
   * sent again elsewhere, or there once it is resumed). Answers those still in flight on it.
   */
  hostInterrupted(host: string): Promise<number>;
}

/**
 * An episode of a live group, its fields named as its landed D1 row names them (db/schema.ts),
 * so that one view (views/group-view.ts) shows either.
 */
export interface LiveEpisode {
  id: string;
  idx: number;
  status: EpisodeState;
  turns: number;
  endReason: EndReason | null;
  failureReason: FailureReason | null;
  failureDetail: string | null;
  redispatches: number;
  score: number | null;
  advantage: number | null;
  /** When a parked generation will be retried (ms since the epoch), if it is parked. */
  retryAt: number | null;
}

export interface LiveGroupStatus {
  spec: GroupSpec;
  status: "running" | "scoring";
  warnings: string[];
  episodes: LiveEpisode[];
  lastError: string | null;
  /** The versions its generations were sent at so far (nulls before the first). */
  policySpan: { min: number | null; max: number | null };
  /** Its run is paused for a weight sync: new generations wait. */
  paused: boolean;
}
