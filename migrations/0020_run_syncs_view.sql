-- `run_syncs`: each run's weight syncs (docs/async-rl.md). A sync's stall is the time from its
-- pause to the first moment the run had nothing in flight (`policy_syncs`); a sync still
-- waiting counts in `syncs` but in no stall. `discarded_tokens`: what the run's interrupted
-- generations had produced and was dropped.
CREATE VIEW `run_syncs` AS
SELECT s.run_id,
  COUNT(*) AS syncs,
  SUM(s.interrupt) AS interrupted,
  COUNT(s.idle_at) AS idle,
  CAST(ROUND(AVG((julianday(s.idle_at) - julianday(s.paused_at)) * 86400000)) AS INTEGER)
    AS stall_ms_mean,
  CAST(ROUND(MAX((julianday(s.idle_at) - julianday(s.paused_at)) * 86400000)) AS INTEGER)
    AS stall_ms_max,
  (SELECT COALESCE(SUM(e.discarded_tokens), 0) FROM episodes e WHERE e.run_id = s.run_id)
    AS discarded_tokens
FROM policy_syncs s
GROUP BY s.run_id;
