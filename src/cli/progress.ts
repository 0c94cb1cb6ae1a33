/** A live progress bar for jobs, and the summary table printed when they end. */
import { SingleBar } from "cli-progress";
import Table from "cli-table3";
import { episodesPerSecond, type JobProgress, meanReward } from "./run-job";

function payload(progress: JobProgress) {
  const reward = meanReward(progress);
  return {
    eps: episodesPerSecond(progress).toFixed(1),
    reward: reward === null ? "  -  " : reward.toFixed(3),
    failures: progress.failedEpisodes,
  };
}

export class JobProgressBar {
  private readonly bar: SingleBar;

  constructor(label: string, total: number) {
    this.bar = new SingleBar({
      format: `${label} {bar} {value}/{total} groups | {eps} episodes/s | mean reward {reward} | failures {failures} | {duration_formatted}`,
      barCompleteChar: "█",
      barIncompleteChar: "░",
      hideCursor: true,
      // Without a terminal (CI, pipes) it still reports, every two seconds.
      noTTYOutput: true,
      notTTYSchedule: 2000,
    });
    this.bar.start(total, 0, { eps: "0.0", reward: "  -  ", failures: 0 });
  }

  update(progress: JobProgress): void {
    this.bar.update(progress.done, payload(progress));
  }

  stop(): void {
    this.bar.stop();
  }
}

/** No rule between rows: tables read like lists. */
export const COMPACT = { mid: "", "left-mid": "", "mid-mid": "", "right-mid": "" };

export function summaryTable(title: string, progress: JobProgress): string {
  const seconds = (Date.now() - progress.startedAt) / 1000;
  const reward = meanReward(progress);
  const table = new Table({ head: [title, ""], style: { head: [], border: [] }, chars: COMPACT });
  table.push(
    [
      "groups",
      `${progress.done} (${progress.done - progress.failedGroups} landed, ${progress.failedGroups} failed${progress.resumed ? `, ${progress.resumed} from an earlier run` : ""})`,
    ],
    ["episodes", `${progress.episodes} (${progress.failedEpisodes} failed)`],
    ["mean reward", reward === null ? "-" : reward.toFixed(3)],
    ["uniform groups", `${progress.uniformGroups} (every episode the same score)`],
    [
      "episodes/s",
      `${episodesPerSecond(progress).toFixed(1)}${progress.resumed ? " (this run's groups only)" : ""}`,
    ],
    ["elapsed", `${seconds.toFixed(1)} s`],
  );
  for (const [reason, count] of Object.entries(progress.failures).sort((a, b) => b[1] - a[1])) {
    table.push([`failed: ${reason}`, String(count)]);
  }
  return table.toString();
}
