/** What `GET /v1/runs/:run_id/producer` answers: where the run's producer has got to. */
import type { ProducerRequest } from "./producer-request";
import type { ProducerRow, ProducerStorage } from "./producer-storage";

export function producerView(producer: ProducerRow, store: ProducerStorage) {
  const request = producer.request as ProducerRequest;
  const counts = store.counts();
  const done = store.doneByEpoch();
  const signal = store.signalByEpoch();
  const examples = store.exampleCount();
  return {
    run_id: producer.runId,
    state: producer.state,
    /** Why it stopped: a DELETE's reason, or the refusal that would have refused every start. */
    reason: producer.reason,
    /** The last tick's fault (D1 or a group object not answering), until a tick goes through. */
    last_error: producer.lastError,
    /**
     * What its starts wait on while it runs: the run's budget spent (`budget_exhausted: ...`,
     * until POST /v1/runs/:id/budget raises it) or its token's quota (`quota_exceeded: ...`).
     */
    waiting: producer.waiting,
    env: request.env,
    env_version: producer.envVersion,
    dataset: request.dataset,
    dataset_sha256: producer.datasetSha256,
    examples,
    epochs: Array.from({ length: request.epochs }, (_, epoch) => ({
      epoch,
      examples_done: done.get(epoch) ?? 0,
      /** Examples one of whose groups this epoch landed with differing rewards. */
      examples_with_signal: signal.get(epoch) ?? 0,
      examples,
    })),
    groups_started: counts.starting + counts.running + counts.landed + counts.failed,
    groups_in_flight: counts.starting + counts.running,
    groups_landed: counts.landed,
    groups_failed: counts.failed,
    /** Landed with every episode scored the same: no GRPO signal. */
    groups_uniform: counts.uniform,
    /** Starts the environment refused (a 422 each), and the first few refusals' messages. */
    rejected: counts.rejected,
    rejections: store.rejections(10).map((r) => ({
      example_id: r.exampleId,
      epoch: r.epoch,
      message: r.detail,
    })),
    /** Example-epochs the pool sampler passed over (solved, or never solved, lately). */
    skipped: counts.skipped,
    /** Resamples started or waiting (dynamic sampling). */
    resampled: counts.resampled,
    /** Resamples waiting for room. */
    resamples_waiting: counts.pending,
    /** Resamples a stop left unsent, and starts it caught before any group had them. */
    cancelled: counts.cancelled,
    created_at: producer.createdAt,
    finished_at: producer.finishedAt,
  };
}

export type ProducerView = ReturnType<typeof producerView>;
