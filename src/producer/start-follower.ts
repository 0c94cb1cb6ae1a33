/**
 * What became of a producer's starts: each tick reads its groups' landings from D1 (a uniform one
 * gets a resample planned while it has attempts left), and after a stop, a start the stop caught
 * unanswered is looked for under its key, so the producer's counts end true.
 */
import { groupOutcomes } from "../db/queries";
import { rolloutGroup } from "../rollout/bindings";
import { newGroupId } from "../rollout/group-ids";
import type { ProducerRow, ProducerStorage, StartRow } from "./producer-storage";
import { producerKey } from "./production-plan";

/** The idempotency key a start of example `exampleId` is sent under (production-plan.ts). */
export function startKey(
  producer: ProducerRow,
  start: StartRow,
  exampleId: string,
): Promise<string> {
  return producerKey(producer.runId, producer.planDigest, {
    epoch: start.epoch,
    exampleId,
    attempt: start.attempt,
  });
}

export class StartFollower {
  constructor(
    private readonly store: ProducerStorage,
    private readonly env: Env,
    private readonly storage: DurableObjectStorage,
  ) {}

  /**
   * Reads the outcome of the producer's groups in flight; a uniform one is resampled while it has
   * attempts left. `mine` says the producer that asked is still the one stored (a tick awaits D1,
   * and a DELETE and a new POST may come meanwhile).
   */
  async followLandings(maxResamples: number, mine: () => boolean): Promise<void> {
    const running = this.store.withStatus("running").filter((s) => s.groupId !== null);
    if (running.length === 0) return;
    const rows = await groupOutcomes(
      this.env.DB,
      running.map((s) => s.groupId as string),
    );
    if (!mine()) return;
    const byGroup = new Map(rows.map((r) => [r.id, r]));
    for (const start of running) {
      const outcome = byGroup.get(start.groupId as string);
      const status = outcome?.status;
      if (status !== "landed" && status !== "failed") continue;
      const uniform = status === "landed" && outcome?.uniform === true;
      this.storage.transactionSync(() => {
        this.store.landed(start.key, status, uniform);
        if (uniform && start.attempt < maxResamples) this.planResample(start);
      });
    }
  }

  /**
   * After a stop, each start written but never answered: `running` if a group has its key (in D1,
   * or still only in its object), else `cancelled`. Only asked while no send is on the wire.
   */
  async settleUnanswered(producer: ProducerRow, mine: () => boolean): Promise<void> {
    for (const start of this.store.withStatus("starting")) {
      const exampleId = this.store.example(start.pos).id;
      const groupId = await newGroupId(await startKey(producer, start, exampleId));
      const [known] = await groupOutcomes(this.env.DB, [groupId]);
      const live = known ?? (await rolloutGroup(this.env, groupId).status());
      if (!mine()) return;
      if (live === null) this.store.mark(start.key, "cancelled");
      else this.store.mark(start.key, "running", { groupId });
    }
  }

  private planResample(start: StartRow): void {
    const attempt = start.attempt + 1;
    const exampleId = this.store.example(start.pos).id;
    // The key is computed when the resample is sent; here it only has to be unique and stable.
    this.store.plan(
      `pending:${start.epoch}:${start.pos}:${attempt}:${exampleId}`,
      { epoch: start.epoch, pos: start.pos, attempt },
      "pending",
    );
  }
}
