-- Views for the questions people ask of episode logs first. Query them with
-- `wrangler d1 execute edgeroll --local --command "SELECT * FROM run_summary"`.

-- Reward, success rate, turns and tokens per run and environment.
CREATE VIEW `run_summary` AS
SELECT
  run_id,
  env,
  COUNT(DISTINCT group_id) AS groups,
  COUNT(*) AS episodes,
  SUM(status = 'failed') AS failed,
  SUM(status = 'truncated') AS truncated,
  ROUND(AVG(score), 4) AS mean_reward,
  ROUND(AVG(success), 4) AS success_rate,
  ROUND(AVG(turns), 2) AS mean_turns,
  ROUND(AVG(total_tokens), 1) AS mean_total_tokens,
  SUM(COALESCE(prompt_tokens, 0) + COALESCE(completion_tokens, 0)) AS tokens_processed,
  MIN(created_at) AS first_episode,
  MAX(finished_at) AS last_episode
FROM episodes
GROUP BY run_id, env;
--> statement-breakpoint

-- The same per environment, across runs.
CREATE VIEW `env_summary` AS
SELECT
  env,
  COUNT(DISTINCT run_id) AS runs,
  COUNT(DISTINCT group_id) AS groups,
  COUNT(*) AS episodes,
  SUM(status = 'failed') AS failed,
  ROUND(AVG(score), 4) AS mean_reward,
  ROUND(AVG(success), 4) AS success_rate,
  ROUND(AVG(turns), 2) AS mean_turns,
  ROUND(AVG(total_tokens), 1) AS mean_total_tokens,
  ROUND(AVG(latency_ms), 0) AS mean_latency_ms
FROM episodes
GROUP BY env;
--> statement-breakpoint

-- Why episodes failed, most frequent first, with one detail to start from.
CREATE VIEW `failures_by_reason` AS
SELECT
  env,
  failure_reason AS reason,
  COUNT(*) AS episodes,
  MAX(finished_at) AS last_seen,
  MAX(failure_detail) AS example_detail
FROM episodes
WHERE status = 'failed'
GROUP BY env, failure_reason
ORDER BY episodes DESC;
--> statement-breakpoint

-- Every group ever started, accounted for: in flight, landed, served (leased now), acked,
-- parked (poison) or failed.
CREATE VIEW `group_accounting` AS
SELECT
  id AS group_id,
  run_id,
  env,
  policy_version,
  status,
  delivery_state,
  deliveries,
  uniform,
  CASE
    WHEN status IN ('running', 'scoring') THEN 'in_flight'
    WHEN status = 'failed' THEN 'failed'
    WHEN delivery_state = 'acked' THEN 'acked'
    WHEN delivery_state = 'parked' THEN 'parked'
    WHEN delivery_state = 'leased' AND lease_expires_at > strftime('%Y-%m-%dT%H:%M:%fZ', 'now') THEN 'served'
    ELSE 'landed'
  END AS accounting,
  created_at,
  finished_at,
  acked_at
FROM groups;
--> statement-breakpoint

-- Groups by where they are on their way to a trainer.
CREATE VIEW `groups_by_delivery` AS
SELECT run_id, accounting, COUNT(*) AS groups, SUM(uniform) AS uniform_groups
FROM group_accounting
GROUP BY run_id, accounting;
--> statement-breakpoint

-- Is the policy getting better? Reward and success by the policy version that sampled.
CREATE VIEW `reward_by_policy_version` AS
SELECT
  run_id,
  env,
  policy_version,
  COUNT(*) AS episodes,
  ROUND(AVG(score), 4) AS mean_reward,
  ROUND(AVG(success), 4) AS success_rate,
  ROUND(AVG(turns), 2) AS mean_turns,
  MIN(created_at) AS first_seen
FROM episodes
WHERE status != 'failed'
GROUP BY run_id, env, policy_version
ORDER BY run_id, env, policy_version;
