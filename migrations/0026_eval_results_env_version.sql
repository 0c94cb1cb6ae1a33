-- Environment versions are recorded (0025): evaluations are split by the one they ran.
DROP VIEW IF EXISTS `eval_results`;
--> statement-breakpoint
-- `eval_results`: each evaluated policy version's metrics, one row per run, environment, the
-- environment's version (null for groups from before versions were recorded), policy version
-- and k (1, 2, 4, ... up to the group size). An example is one eval group; its measured episodes
-- are those scored and sampled wholly at the group's version (an episode whose turns went out at
-- another version, or that failed, is counted in `unmeasured_episodes` and nowhere else). An
-- example counts at k when it has at least k measured episodes.
--   pass_at_k: the unbiased estimator 1 - C(n-c, k) / C(n, k) per example (n measured, c
--     successes), averaged; the ratio is the product over j < k of (n-c-j) / (n-j).
--   maj_at_k: the majority answer of the example's first k measured episodes (by index; a tie
--     goes to the answer given first), scored by its episode's success, averaged over the
--     examples whose environment exposes an answer (`answer` in the score's metadata); else null.
--   avg_reward, avg_success: each example's mean over its measured episodes, averaged (the
--     same for every k: avg@k's unbiased estimate is the mean over all n).
-- GET /v1/runs/:id/evals returns these rows; docs/querying.md has examples.
CREATE VIEW `eval_results` AS
WITH RECURSIVE
  ks(k) AS (SELECT 1 UNION ALL SELECT k * 2 FROM ks WHERE k < 256),
  evaluated AS (
    SELECT e.group_id, g.run_id, g.env, g.env_version, g.policy_version, e.idx, e.score,
      COALESCE(e.success, 0) AS success,
      json_extract(e.reward_metadata, '$.answer') AS answer,
      e.score IS NOT NULL
        AND COALESCE(e.policy_version_min, g.policy_version) = g.policy_version
        AND COALESCE(e.policy_version_max, g.policy_version) = g.policy_version AS measured
    FROM episodes e JOIN groups g ON g.id = e.group_id
    WHERE g.kind = 'eval'
  ),
  measured AS (
    SELECT *, ROW_NUMBER() OVER (PARTITION BY group_id ORDER BY idx) AS rank
    FROM evaluated WHERE measured
  ),
  examples AS (
    SELECT group_id, run_id, env, env_version, policy_version, COUNT(*) AS n, SUM(success) AS c,
      AVG(score) AS reward, AVG(success) AS success_rate
    FROM measured GROUP BY group_id
  ),
  totals AS (
    SELECT run_id, env, env_version, policy_version, COUNT(*) AS episodes,
      SUM(measured) AS measured
    FROM evaluated GROUP BY run_id, env, env_version, policy_version
  ),
  misses(group_id, k, j, p) AS (
    SELECT x.group_id, ks.k, 0, 1.0 FROM examples x JOIN ks ON ks.k <= x.n
    UNION ALL
    SELECT m.group_id, m.k, m.j + 1, m.p * (x.n - x.c - m.j) / (x.n - m.j)
    FROM misses m JOIN examples x ON x.group_id = m.group_id
    WHERE m.j < m.k AND m.p > 0
  ),
  all_miss AS (SELECT group_id, k, MIN(p) AS p FROM misses GROUP BY group_id, k),
  votes AS (
    SELECT m.group_id, ks.k, m.answer, COUNT(*) AS votes, MIN(m.rank) AS first_rank
    FROM measured m JOIN ks ON m.rank <= ks.k JOIN examples x ON x.group_id = m.group_id
    WHERE m.answer IS NOT NULL AND ks.k <= x.n
    GROUP BY m.group_id, ks.k, m.answer
  ),
  majority AS (
    SELECT v.group_id, v.k, m.success,
      ROW_NUMBER() OVER (PARTITION BY v.group_id, v.k ORDER BY v.votes DESC, v.first_rank) AS place
    FROM votes v JOIN measured m ON m.group_id = v.group_id AND m.rank = v.first_rank
  )
SELECT x.run_id, x.env, x.env_version, x.policy_version, ks.k,
  COUNT(*) AS examples,
  SUM(x.n) AS episodes,
  AVG(x.reward) AS avg_reward,
  AVG(x.success_rate) AS avg_success,
  AVG(1.0 - a.p) AS pass_at_k,
  AVG(v.success) AS maj_at_k,
  t.episodes - t.measured AS unmeasured_episodes
FROM examples x
JOIN ks ON ks.k <= x.n
JOIN all_miss a ON a.group_id = x.group_id AND a.k = ks.k
LEFT JOIN majority v ON v.group_id = x.group_id AND v.k = ks.k AND v.place = 1
JOIN totals t ON t.run_id = x.run_id AND t.env = x.env AND t.env_version IS x.env_version
  AND t.policy_version = x.policy_version
GROUP BY x.run_id, x.env, x.env_version, x.policy_version, ks.k;
