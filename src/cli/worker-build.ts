/**
 * Whether the Worker builds, as wrangler dev's log says. wrangler reports a failed build (its
 * esbuild errors) and keeps watching the sources, but holds every request until a build
 * succeeds: nothing answers, and the report is easy to miss in its output. This reads the
 * report into problems (file, line, message) and notices when a later build succeeds (wrangler
 * then starts or reloads its local server), so the stack can say both at once.
 */
import {
  BUILD_FAILED,
  type BuildProblem,
  describeProblem,
  stripAnsi,
  wranglerBuildProblems,
} from "./build-problems";

export type BuildState =
  | { ok: true }
  | {
      ok: false;
      problems: BuildProblem[];
      /** wrangler's report, colours stripped, for when no problem could be read from it. */
      report: string[];
    };

export type BuildFailure = Extract<BuildState, { ok: false }>;

/** `the Worker does not build: src/environments/x.ts:3:7: Unexpected "return"` */
export function buildFailureMessage(failure: BuildFailure): string {
  const what =
    failure.problems.length > 0
      ? failure.problems.map(describeProblem).join("; ")
      : "wrangler dev's output above says why";
  return `the Worker does not build: ${what}`;
}

/** wrangler logs these once a bundle built (the first time, and after each change). */
const BUILT =
  /Starting local server\.\.\.|Reloading local server\.\.\.|Local server updated and ready/;

/** How long after a report's last line it is taken as complete (it comes in one burst). */
const SETTLE_MS = 300;

export class WorkerBuild {
  state: BuildState = { ok: true };
  private report: string[] | null = null;
  private expected = 0;
  private timer: ReturnType<typeof setTimeout> | null = null;

  constructor(private readonly onChange: (state: BuildState) => void = () => {}) {}

  /** One line of wrangler's output. */
  feed(raw: string): void {
    const line = stripAnsi(raw);
    const failed = BUILD_FAILED.exec(line);
    if (failed) {
      this.finish();
      this.report = [line];
      this.expected = Number(failed[1]);
      this.arm();
      return;
    }
    if (BUILT.test(line)) {
      this.finish();
      if (!this.state.ok) this.set({ ok: true });
      return;
    }
    if (this.report === null) return;
    this.report.push(line);
    if (wranglerBuildProblems(this.report).length >= this.expected) this.finish();
    else this.arm();
  }

  /** Stops waiting for the rest of a report. */
  dispose(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
  }

  private arm(): void {
    this.dispose();
    this.timer = setTimeout(() => this.finish(), SETTLE_MS);
    this.timer.unref?.();
  }

  private finish(): void {
    this.dispose();
    const report = this.report;
    if (report === null) return;
    this.report = null;
    this.set({ ok: false, problems: wranglerBuildProblems(report), report });
  }

  private set(state: BuildState): void {
    this.state = state;
    this.onChange(state);
  }
}
