/** What the fleet scheduler object offers the groups and the API, and what it answers. */
import type { FleetHost } from "./hosts-config";

/** Where one episode may go: the group's side of a routing decision. */
export interface Route {
  /** Orders the hosts for this group (rendezvous hashing): the group's id. */
  key: string;
  /** The episode's own host when it has one, then its group's home host. */
  preferred: (string | null)[];
  /**
   * The run's policy as the group knows it: a host that declared a version older than
   * `version - maxLag` gets none of this run's episodes. Null: any version will do.
   */
  policy: { version: number; maxLag: number | null } | null;
  /** Not this host (it just failed the episode), unless no other can take it. */
  avoid: string | null;
  /** The model its generations ask for: what a host's learned capabilities are kept by. */
  model: string;
  /**
   * An evaluation group's pinned version: its episodes go only to hosts serving it (or that
   * declared none), first within EVAL_SHARE of each host's cap (eval-share.ts). Null: training.
   */
  eval: number | null;
}

/** A permit: the host an episode's generations go to while it holds it. */
export interface Grant {
  host: string;
  /** The version the host serves, as its trainer declared it; null if never declared. */
  policyVersion: number | null;
  /** False once the host refused the token fields for this model; null while nobody knows. */
  tokenFields: false | null;
}

export interface HostFailure {
  host: string;
  at: number;
  /** When this group last saw the host answer (0: never); it tells a streak from a blip. */
  okAt: number;
  error: string;
  /** The host did not answer at all (refused, reset, timed out): try another host next. */
  unreachable: boolean;
}

export type HostState = "healthy" | "ejected" | "probing" | "paused";

/** One host as `GET /v1/hosts` shows it. */
export interface HostView {
  url: string;
  name: string;
  state: HostState;
  /** Episodes holding a permit on it (each has at most one generation in flight). */
  in_flight: number;
  /** Of those, evaluation groups' episodes. */
  eval_in_flight: number;
  /** Its `max_inflight`; null for no limit. */
  cap: number | null;
  weight: number;
  policy_version: number | null;
  last_error: string | null;
  /** Episodes waiting for a permit anywhere in the fleet (the same figure on every host). */
  waiting: number;
}

export interface FleetApi {
  acquire(ticket: string, group: string, leaseMs: number, route: Route): Promise<Grant | null>;
  acquireMany(
    asks: readonly { ticket: string; preferred: string | null }[],
    group: string,
    leaseMs: number,
    route: Route,
  ): Promise<{ ticket: string; grant: Grant }[]>;
  releaseMany(
    group: string,
    tickets: readonly string[],
    answeredAt?: Readonly<Record<string, number>>,
  ): Promise<void>;
  releaseGroup(group: string): Promise<void>;
  reportFailure(
    ticket: string,
    group: string,
    leaseMs: number,
    route: Route,
    failure: HostFailure,
  ): Promise<Grant | null>;
  learnTokenFieldsRefused(host: string, model: string): Promise<void>;
  setHost(
    url: string,
    change: { paused?: boolean | undefined; policyVersion?: number | null | undefined },
  ): Promise<HostView | null>;
  hosts(): Promise<HostView[]>;
  /** The groups with an episode on the host now (a rolling sync's interrupt tells them). */
  groupsOn(url: string): Promise<string[]>;
  useHosts(hosts: readonly FleetHost[]): Promise<void>;
}
