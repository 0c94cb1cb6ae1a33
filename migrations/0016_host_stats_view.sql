-- `host_stats`: each inference host's share of each run (src/fleet/). `requests` are the sampled
-- turns it answered plus the calls that failed on it (no answer, an error status, a timeout:
-- `groups.host_failures`); latency is a sampled turn's, from its first send to its answer.
-- `cache_hit_rate` is cached over prompt tokens, for hosts that report cached tokens at all
-- (vLLM with --enable-prompt-tokens-details, SGLang with --enable-cache-report). Both leave the
-- field out when nothing was cached, so once a host has reported any, a turn without it counts
-- as 0 cached; for a host that never reports, it is null.
CREATE VIEW `host_stats` AS
WITH answered AS (
  SELECT m.host, g.run_id, m.prompt_tokens, m.cached_tokens, m.latency_ms,
    ROW_NUMBER() OVER (PARTITION BY m.host, g.run_id ORDER BY m.latency_ms) AS latency_rank,
    COUNT(*) OVER (PARTITION BY m.host, g.run_id) AS n
  FROM messages m JOIN groups g ON g.id = m.group_id
  WHERE m.sampled = 1 AND m.host IS NOT NULL
),
answers AS (
  SELECT host, run_id,
    COUNT(*) AS answers,
    COALESCE(SUM(prompt_tokens), 0) AS prompt_tokens,
    CASE WHEN COUNT(cached_tokens) > 0 THEN COALESCE(SUM(cached_tokens), 0) END AS cached_tokens,
    MIN(CASE WHEN latency_rank >= 0.5 * n THEN latency_ms END) AS latency_ms_p50,
    MIN(CASE WHEN latency_rank >= 0.99 * n THEN latency_ms END) AS latency_ms_p99
  FROM answered
  GROUP BY host, run_id
),
failures AS (
  SELECT f.key AS host, g.run_id, SUM(f.value) AS failures
  FROM groups g, json_each(g.host_failures) f
  WHERE g.host_failures IS NOT NULL
  GROUP BY f.key, g.run_id
)
SELECT a.host, a.run_id,
  a.answers + COALESCE(f.failures, 0) AS requests,
  COALESCE(f.failures, 0) AS failures,
  a.prompt_tokens,
  a.cached_tokens,
  CAST(a.cached_tokens AS REAL) / NULLIF(a.prompt_tokens, 0) AS cache_hit_rate,
  a.latency_ms_p50,
  a.latency_ms_p99
FROM answers a LEFT JOIN failures f ON f.host = a.host AND f.run_id = a.run_id
UNION ALL
SELECT f.host, f.run_id, f.failures, f.failures, 0, NULL, NULL, NULL, NULL
FROM failures f
WHERE NOT EXISTS (SELECT 1 FROM answers a WHERE a.host = f.host AND a.run_id = f.run_id);
