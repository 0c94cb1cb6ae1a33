/**
 * The stateless score worker: grades a finished group with the environment's `scoreEpisodes`,
 * handing each episode's hooks a judge (src/judges/) whose calls come back with its grade.
 */
import { WorkerEntrypoint } from "cloudflare:workers";
import { configFrom, judgeEndpoint } from "../config";
import { loadEnvironment } from "../environments/registry";
import { HostJudge, type JudgementRecord, type JudgeSlots } from "../judges/host-judge";
import {
  type EnvironmentEpisode,
  errorMessage,
  type ScoreOutcome,
  scoreGroup,
  type TaskExample,
} from "../sdk";
import { environmentsOf } from "./environments";

export interface ScoreRequest {
  env: string;
  example: TaskExample;
  episodes: EnvironmentEpisode[];
  /** How long the caller waits (ms): judges stop calling before it gives up on the answer. */
  timeoutMs: number;
}

/** One episode's grade (or why none), and every judge call made for it. */
export type ScoredEpisode = ScoreOutcome & { judgements: JudgementRecord[] };

/** What the group object calls. (Workers' RPC types cannot express our `unknown` JSON fields.) */
export interface ScoreWorkerApi {
  score(request: ScoreRequest): Promise<ScoredEpisode[]>;
}

/** Time kept back for the answer to travel home before the caller's deadline. */
const ANSWER_MARGIN_MS = 250;

export class ScoreWorker extends WorkerEntrypoint<Env> implements ScoreWorkerApi {
  /** One outcome per episode: a validated reward, or why that episode could not be graded. */
  async score(request: ScoreRequest): Promise<ScoredEpisode[]> {
    const judges = this.judges(request);
    try {
      const env = loadEnvironment(request.env, environmentsOf(this.env));
      const contexts = judges.map((judge) => ({ judge }));
      const outcomes = await scoreGroup(env, request.example, request.episodes, contexts);
      return outcomes.map((outcome, i) => ({ ...outcome, judgements: judges[i]?.records ?? [] }));
    } catch (error) {
      const failure = `scoring failed: ${errorMessage(error)}`;
      return request.episodes.map((_, i) => ({
        ok: false,
        error: failure,
        by: "scorer",
        judgements: judges[i]?.records ?? [],
      }));
    }
  }

  private judges(request: ScoreRequest): HostJudge[] {
    const config = configFrom(this.env);
    const timeoutMs = config.JUDGE_TIMEOUT_S * 1000;
    const settings = {
      ...judgeEndpoint(config),
      model: config.JUDGE_MODEL,
      timeoutMs,
      maxAttempts: config.JUDGE_MAX_ATTEMPTS,
      slots: this.slots(config.JUDGE_MAX_INFLIGHT, timeoutMs),
    };
    const deadlineAt = Date.now() + Math.max(0, request.timeoutMs - ANSWER_MARGIN_MS);
    return request.episodes.map(() => new HostJudge(settings, deadlineAt));
  }

  /** A slot of the deployment's judge gate for each call, leased a little past its deadline. */
  private slots(limit: number, callMs: number): JudgeSlots {
    const gate = this.env.JUDGE_GATE.get(this.env.JUDGE_GATE.idFromName("judges"));
    return {
      async hold(deadlineAt, call) {
        const ticket = crypto.randomUUID();
        const waitMs = deadlineAt - Date.now();
        if (!(await gate.acquire(ticket, limit, callMs + 5000, waitMs))) return null;
        try {
          return await call();
        } finally {
          await gate.release(ticket);
        }
      },
    };
  }
}
