/**
 * How a group ends, once every episode has: the teacher scores the student's tokens (on-policy
 * distillation), the score worker grades, credit is assigned, then the token object and the rows
 * land. Each step is recorded before the next begins, so a retry after a failed grading or
 * landing picks up at the step that failed; the object deletes its storage only once both the
 * token object and the rows are durable.
 */
import { type Config, priceBook } from "../config";
import { teachEpisodes } from "../distill/teacher-scoring";
import type { HostPermits } from "../fleet/host-permits";
import { errorMessage } from "../sdk";
import { backoffDelayMs } from "../utils/backoff";
import { lander, scoreWorker } from "./bindings";
import type { TokenPolicy } from "./generation/token-policy";
import type { GroupSpec } from "./group-spec";
import { landedVersions } from "./landed-versions";
import { type LandingOutcome, landGroup, landingPayload } from "./landing";
import { END, failed } from "./outcomes";
import type { PolicyWatch } from "./policy-watch";
import { assignCredit, failUngraded, scoreEpisodes } from "./rewards";
import type { GroupStorage } from "./storage/group-storage";
import { storeTokenObject, tokenLanding } from "./token-landing";

/** Retries of D1 and the score worker back off up to five minutes. */
export const retryDelayMs = (attempt: number) =>
  backoffDelayMs(attempt, { baseMs: 1000, maxMs: 300_000 });

export interface FinishContext {
  env: Env;
  config: Config;
  store: GroupStorage;
  policy: PolicyWatch;
  tokens: TokenPolicy;
  /** The group's permits, which the teacher holds too when it is the inference host itself. */
  permits: HostPermits | null;
}

export type FinishResult =
  /** Both the token object and the rows are durable: the object may delete its storage. */
  | { kind: "landed" }
  /** A step failed, or is waiting; its timer is set and the alarm tries again. */
  | { kind: "retrying" };

const RETRYING: FinishResult = { kind: "retrying" };

export async function finishGroup(ctx: FinishContext): Promise<FinishResult> {
  const { store, config } = ctx;
  let group = store.group.get();
  if (group.phase === "running") {
    store.group.setPhase("scoring");
    group = store.group.get();
  }
  if (group.phase === "scoring") {
    if (store.timers.isSet({ kind: "score" })) return RETRYING;
    await distill(ctx, group.spec);
    const scored = await scoreEpisodes(
      store,
      group.spec,
      scoreWorker(ctx.env),
      config.SCORE_TIMEOUT_S * 1000,
    );
    if (!scored.ok) {
      const attempts = store.group.countAttempt("score", scored.error);
      if (attempts < config.MAX_SCORE_ATTEMPTS) {
        store.timers.set({ kind: "score" }, Date.now() + retryDelayMs(attempts));
        return RETRYING;
      }
      failUngraded(store, `${scored.error} (gave up after ${attempts} attempts)`);
    }
    assignCredit(store, group.spec);
  }
  if (store.timers.isSet({ kind: "land" })) return RETRYING;
  const landed = await land(ctx, group.spec);
  if (landed.ok) return { kind: "landed" };
  // The transcripts and tokens stay here until both are durable.
  const attempts = store.group.countAttempt("land", landed.error);
  store.timers.set({ kind: "land" }, Date.now() + retryDelayMs(attempts));
  return RETRYING;
}

/** Tokens first, then the rows: a group D1 shows as landed always has its token object. */
async function land(ctx: FinishContext, spec: GroupSpec): Promise<LandingOutcome> {
  const versions = landedVersions(
    ctx.policy,
    spec.request.policy_version,
    ctx.store.interrupted.history(),
  );
  const tokens = tokenLanding(spec, ctx.store.tokens, ctx.tokens, versions);
  const stored = tokens ? await storeTokenObject(ctx.env.TOKENS, tokens) : { ok: true as const };
  if (!stored.ok) return stored;
  try {
    const payload = landingPayload(ctx.store, tokens, priceBook(ctx.config), versions);
    const landed = await landGroup(ctx.env.DB, lander(ctx.env), payload);
    return landed.ok ? landed : { ok: false, error: `D1: ${landed.error}` };
  } catch (error) {
    // The lander itself was unreachable.
    return { ok: false, error: `D1: ${errorMessage(error)}` };
  }
}

/** On-policy distillation: the teacher scores the student's tokens before rewards are. */
async function distill(ctx: FinishContext, spec: GroupSpec): Promise<void> {
  const { store, config, permits } = ctx;
  const { teacher } = spec.request;
  if (spec.request.algorithm !== "opd" || teacher === undefined) return;
  const failures = await teachEpisodes({
    model: teacher.model,
    tokens: store.tokens,
    config,
    candidates: store.episodes
      .all()
      .filter((e) => e.state !== "failed")
      .map((e) => e.idx),
    underLimit: async (idx, score) => {
      // A teacher of its own is not the host MAX_INFLIGHT_GENERATIONS protects.
      if (permits === null || config.TEACHER_BASE_URL !== undefined) return score();
      await permits.hold(idx, config.TEACHER_TIMEOUT_S * 1000 + 60_000);
      try {
        return await score();
      } finally {
        permits.drop(idx);
      }
    },
  });
  for (const [idx, problem] of failures) store.finish(idx, failed(END.teacher_failed, problem));
}
