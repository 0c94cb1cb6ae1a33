-- Asynchronous RL. What feeds the trainer, by run and by the version leases filter on (the
-- group's lowest sampled version, else the one it started at): groups in flight, and groups
-- landed and not yet leased. Uniform groups are left out: leases skip them unless asked, so
-- they never drain. GET /v1/runs/:id reports it as `pacing`.
CREATE VIEW `run_pacing` AS
SELECT
  run_id,
  COALESCE(policy_version_min, policy_version) AS policy_version,
  SUM(status = 'running') AS in_flight,
  SUM(status = 'landed') AS unleased
FROM groups
WHERE status = 'running' OR (status = 'landed' AND delivery_state = 'available' AND uniform = 0)
GROUP BY run_id, COALESCE(policy_version_min, policy_version);
--> statement-breakpoint

-- Each run's policy as its trainer set it, with what it costs and what is waiting: groups in
-- flight, unleased groups still within max_lag, and the work cancelled as stale (episodes that
-- ended `stale_policy`, and the turns they had sampled).
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
  COALESCE((SELECT SUM(r.unleased) FROM run_pacing r WHERE r.run_id = p.run_id
    AND (p.max_lag IS NULL OR r.policy_version >= p.version - p.max_lag)), 0) AS groups_unleased,
  (SELECT COUNT(*) FROM episodes e WHERE e.run_id = p.run_id AND e.failure_reason = 'stale_policy') AS stale_episodes,
  (SELECT COALESCE(SUM(e.turns), 0) FROM episodes e WHERE e.run_id = p.run_id AND e.failure_reason = 'stale_policy') AS stale_turns
FROM run_policies p;
