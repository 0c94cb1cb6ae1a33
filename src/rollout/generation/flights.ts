/**
 * A group's generations in flight: each sent, not yet answered, and abortable on its own. A
 * weight sync interrupts them, all of the run's at once (a pause with `interrupt`) or those on
 * one host (a rolling sync); a group cancelled as stale aborts them through its own signal.
 */

import type { StreamProgress } from "../../inference/stream";

/** A generation on its way: what aborts it, and whether an interrupt did. */
export interface Flight {
  /** Aborted if the group is cancelled, or an interrupt reaches it. */
  signal: AbortSignal;
  /** Whether an interrupt aborted it (so the turn goes out again, not a failure). */
  interrupted(): boolean;
  /** The call moved to another host (a failure there): a host's interrupt follows it. */
  movedTo(host: string): void;
}

interface InFlight {
  host: string;
  abort: AbortController;
  /** The stream its call is reading, if any: an interrupt drains it before the abort. */
  progress: StreamProgress;
  interrupted: boolean;
  /** Detaches its abort from the group's cancellation once it is over. */
  detach: () => void;
}

/**
 * How long an interrupt waits for its generations to record what they kept: they do within
 * moments (a write), so this only bounds a generation that never reports.
 */
const RECORD_WAIT_MS = 2000;

export class Flights {
  private readonly flying = new Map<number, InFlight>();
  /** Generations an interrupt aborted that have not yet recorded what it left of them. */
  private readonly unrecorded = new Map<number, () => void>();

  /**
   * An episode's generation goes out to `host`; `landed` once it is over, however it ended. Its
   * call puts the stream it reads in `progress`.
   */
  takeOff(idx: number, host: string, cancel: AbortSignal, progress: StreamProgress): Flight {
    this.landed(idx);
    // One controller per generation, listening to the group's cancellation: a composite
    // signal made per call would stay attached to the group's long-lived one.
    const abort = new AbortController();
    const onCancel = () => abort.abort(cancel.reason);
    if (cancel.aborted) onCancel();
    else cancel.addEventListener("abort", onCancel, { once: true });
    const flight: InFlight = {
      host,
      abort,
      progress,
      interrupted: false,
      detach: () => cancel.removeEventListener("abort", onCancel),
    };
    this.flying.set(idx, flight);
    return {
      signal: abort.signal,
      interrupted: () => flight.interrupted,
      movedTo: (to) => {
        flight.host = to;
      },
    };
  }

  landed(idx: number): void {
    this.flying.get(idx)?.detach();
    this.flying.delete(idx);
  }

  /**
   * Interrupts every generation in flight (`host` given: only those on it). Resolves once each
   * has recorded what the abort left of it (`recorded`), so a crash after the sync's answer
   * loses none of the tokens kept.
   */
  interrupt(host: string | null = null): Promise<void> {
    const recorded: Promise<void>[] = [];
    for (const [idx, flight] of this.flying) {
      if (host !== null && flight.host !== host) continue;
      recorded.push(new Promise<void>((resolve) => this.unrecorded.set(idx, resolve)));
      flight.interrupted = true;
      const abort = () => flight.abort.abort(new Error("interrupted for a weight sync"));
      // A stream being read is read on while its bytes arrive at once (what the host sent before
      // the cut, not yet read on a busy thread), then aborted; any other call at once.
      if (flight.progress.stream) flight.progress.stream.drain(abort);
      else abort();
      this.landed(idx);
    }
    if (recorded.length === 0) return Promise.resolve();
    let giveUp = () => {};
    const bound = new Promise<void>((resolve) => {
      giveUp = resolve;
    });
    const timer = setTimeout(giveUp, RECORD_WAIT_MS);
    return Promise.race([Promise.all(recorded).then(() => {}), bound]).finally(() =>
      clearTimeout(timer),
    );
  }

  /** What an interrupt left of the episode's generation is recorded (or it was not cut). */
  recorded(idx: number): void {
    this.unrecorded.get(idx)?.();
    this.unrecorded.delete(idx);
  }

  /** Generations in flight (`host` given: on it), not counting those an interrupt aborted. */
  count(host: string | null = null): number {
    if (host === null) return this.flying.size;
    let n = 0;
    for (const flight of this.flying.values()) if (flight.host === host) n++;
    return n;
  }
}
