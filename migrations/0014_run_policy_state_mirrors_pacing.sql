-- `run_policy_state` again, as 0013 made it but for the note inside its body: its
-- `groups_unleased` restates the pacing rule, whose one definition is src/policy/pacing.ts. The
-- note is in the view's own text, so SQL users reading the schema (sqlite_master) see it too.
DROP VIEW IF EXISTS `run_policy_state`;
--> statement-breakpoint
CREATE VIEW `run_policy_state` AS
SELECT
  p.run_id,
  p.version,
  p.max_lag,
  p.paused,
  p.revision,
  p.updated_at,
  p.updated_by,
  COALESCE((SELECT SUM(r.in_flight) FROM run_pacing r WHERE r.run_id = p.run_id), 0) AS groups_in_flight,
  -- Mirrors src/policy/pacing.ts (`pacing.unleased` of GET /v1/runs/:id): unleased groups more
  -- than max_lag behind the run's version are not counted (src/policy/lag.ts, oldestWithinLag).
  COALESCE((SELECT SUM(r.unleased) FROM run_pacing r WHERE r.run_id = p.run_id
    AND (p.max_lag IS NULL OR r.policy_version >= p.version - p.max_lag)), 0) AS groups_unleased,
  (SELECT COUNT(*) FROM episodes e WHERE e.run_id = p.run_id AND e.failure_reason = 'stale_policy') AS stale_episodes,
  (SELECT COALESCE(SUM(e.turns), 0) FROM episodes e WHERE e.run_id = p.run_id AND e.failure_reason = 'stale_policy') AS stale_turns
FROM run_policies p;
