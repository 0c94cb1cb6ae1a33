-- A run's bill (docs/costs.md). Landed groups only: a group still in flight is in
-- `GET /v1/runs/:run_id` (its object's own count), and lands here with all its rows at once.
--
-- `run_costs`: one row per run.
--   groups (started, in flight included), groups_in_flight, episodes
--   prompt_tokens (cached ones included), cached_tokens, sampled_tokens (completions kept),
--   teacher_tokens (on-policy distillation's prefills), judge_tokens (prompt + completion),
--   env_seconds (opening, step and score calls, remote ones included), generations (calls that
--   answered), retries (attempts beyond a turn's first), discarded_tokens (cut by an interrupting
--   pause, not kept), usd (every call at its host's price), unpriced_calls (calls on a host with
--   no price: they add $0)
-- Episodes landed before the ledger: what their messages say (a judgement then kept no usage, and
-- no call was priced: each counts as unpriced).
UPDATE `episodes` SET
  `generations` = (SELECT COUNT(*) FROM messages m WHERE m.episode_id = episodes.id AND m.sampled = 1),
  `cached_tokens` = (SELECT COALESCE(SUM(m.cached_tokens), 0) FROM messages m
    WHERE m.episode_id = episodes.id AND m.sampled = 1),
  `retries` = (SELECT COALESCE(SUM(MAX(COALESCE(m.attempts, 1) - 1, 0)), 0) FROM messages m
    WHERE m.episode_id = episodes.id AND m.sampled = 1),
  `unpriced_calls` = (SELECT COUNT(*) FROM messages m WHERE m.episode_id = episodes.id AND m.sampled = 1)
    + (SELECT COUNT(*) FROM judgements j WHERE j.episode_id = episodes.id);
--> statement-breakpoint
CREATE VIEW `run_costs` AS
SELECT g.run_id,
  g.groups,
  g.groups_in_flight,
  COALESCE(e.episodes, 0) AS episodes,
  COALESCE(e.prompt_tokens, 0) AS prompt_tokens,
  COALESCE(e.cached_tokens, 0) AS cached_tokens,
  COALESCE(e.sampled_tokens, 0) AS sampled_tokens,
  COALESCE(e.teacher_tokens, 0) AS teacher_tokens,
  COALESCE(e.judge_tokens, 0) AS judge_tokens,
  (COALESCE(e.env_ms, 0) + g.score_ms) / 1000.0 AS env_seconds,
  COALESCE(e.generations, 0) AS generations,
  COALESCE(e.retries, 0) AS retries,
  COALESCE(e.discarded_tokens, 0) AS discarded_tokens,
  COALESCE(e.usd, 0) AS usd,
  COALESCE(e.unpriced_calls, 0) AS unpriced_calls
FROM (
  SELECT run_id, COUNT(*) AS groups, SUM(status = 'running') AS groups_in_flight,
    SUM(score_ms) AS score_ms
  FROM groups GROUP BY run_id
) g
LEFT JOIN (
  SELECT run_id, COUNT(*) AS episodes,
    SUM(COALESCE(prompt_tokens, 0)) AS prompt_tokens,
    SUM(cached_tokens) AS cached_tokens,
    SUM(COALESCE(completion_tokens, 0)) AS sampled_tokens,
    SUM(teacher_tokens) AS teacher_tokens,
    SUM(judge_tokens) AS judge_tokens,
    SUM(env_ms) AS env_ms,
    SUM(generations) AS generations,
    SUM(retries) AS retries,
    SUM(discarded_tokens) AS discarded_tokens,
    SUM(usd) AS usd,
    SUM(unpriced_calls) AS unpriced_calls
  FROM episodes
  -- A landed group's only: one too large for a D1 batch lands in several, its row last.
  WHERE group_id IN (SELECT id FROM groups WHERE status != 'running')
  GROUP BY run_id
) e ON e.run_id = g.run_id;
--> statement-breakpoint
-- `run_costs_by_host`: a run's generations by the host that answered them (judge and teacher
-- calls are in `judgements` and `run_costs`). cache_hit_rate: cached over prompt tokens.
CREATE VIEW `run_costs_by_host` AS
SELECT e.run_id, m.host,
  COUNT(*) AS generations,
  SUM(COALESCE(m.prompt_tokens, 0)) AS prompt_tokens,
  SUM(COALESCE(m.cached_tokens, 0)) AS cached_tokens,
  SUM(COALESCE(m.completion_tokens, 0)) AS sampled_tokens,
  SUM(COALESCE(m.attempts, 1) - 1) AS retries,
  CAST(SUM(COALESCE(m.cached_tokens, 0)) AS REAL) / MAX(1, SUM(COALESCE(m.prompt_tokens, 0)))
    AS cache_hit_rate,
  SUM(COALESCE(m.usd, 0)) AS usd,
  SUM(m.usd IS NULL) AS unpriced_calls
FROM messages m
JOIN episodes e ON e.id = m.episode_id
WHERE m.sampled = 1
GROUP BY e.run_id, m.host;
--> statement-breakpoint
-- `run_costs_by_env`: `run_costs` by environment, its version and the groups' kind (`train` or
-- `eval`: what evaluation cost beside training).
CREATE VIEW `run_costs_by_env` AS
SELECT g.run_id, g.env, g.env_version, g.kind,
  COUNT(*) AS groups,
  SUM(g.status = 'running') AS groups_in_flight,
  COALESCE(SUM(e.episodes), 0) AS episodes,
  COALESCE(SUM(e.prompt_tokens), 0) AS prompt_tokens,
  COALESCE(SUM(e.cached_tokens), 0) AS cached_tokens,
  COALESCE(SUM(e.sampled_tokens), 0) AS sampled_tokens,
  COALESCE(SUM(e.teacher_tokens), 0) AS teacher_tokens,
  COALESCE(SUM(e.judge_tokens), 0) AS judge_tokens,
  (COALESCE(SUM(e.env_ms), 0) + SUM(g.score_ms)) / 1000.0 AS env_seconds,
  COALESCE(SUM(e.generations), 0) AS generations,
  COALESCE(SUM(e.retries), 0) AS retries,
  COALESCE(SUM(e.discarded_tokens), 0) AS discarded_tokens,
  COALESCE(SUM(e.usd), 0) AS usd,
  COALESCE(SUM(e.unpriced_calls), 0) AS unpriced_calls
FROM groups g
LEFT JOIN (
  SELECT group_id, COUNT(*) AS episodes,
    SUM(COALESCE(prompt_tokens, 0)) AS prompt_tokens,
    SUM(cached_tokens) AS cached_tokens,
    SUM(COALESCE(completion_tokens, 0)) AS sampled_tokens,
    SUM(teacher_tokens) AS teacher_tokens,
    SUM(judge_tokens) AS judge_tokens,
    SUM(env_ms) AS env_ms,
    SUM(generations) AS generations,
    SUM(retries) AS retries,
    SUM(discarded_tokens) AS discarded_tokens,
    SUM(usd) AS usd,
    SUM(unpriced_calls) AS unpriced_calls
  FROM episodes GROUP BY group_id
) e ON e.group_id = g.id AND g.status != 'running'
GROUP BY g.run_id, g.env, g.env_version, g.kind;
--> statement-breakpoint
-- `run_costs_by_policy_version`: a run's generations by the policy version that sent each one
-- (`messages.policy_version`): what each checkpoint cost to sample from.
CREATE VIEW `run_costs_by_policy_version` AS
SELECT e.run_id, m.policy_version,
  COUNT(*) AS generations,
  SUM(COALESCE(m.prompt_tokens, 0)) AS prompt_tokens,
  SUM(COALESCE(m.cached_tokens, 0)) AS cached_tokens,
  SUM(COALESCE(m.completion_tokens, 0)) AS sampled_tokens,
  SUM(COALESCE(m.usd, 0)) AS usd
FROM messages m
JOIN episodes e ON e.id = m.episode_id
WHERE m.sampled = 1
GROUP BY e.run_id, m.policy_version;
