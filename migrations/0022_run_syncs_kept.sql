-- `run_syncs` gains `kept_tokens`: what the run's interrupted token-in turns had received and
-- kept, continued under the resumed version (`discarded_tokens`: what other interrupted
-- generations had produced and was dropped). The rest as 0020 defined it.
DROP VIEW `run_syncs`;
--> statement-breakpoint
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
    AS discarded_tokens,
  (SELECT COALESCE(SUM(e.kept_tokens), 0) FROM episodes e WHERE e.run_id = s.run_id)
    AS kept_tokens
FROM policy_syncs s
GROUP BY s.run_id;
