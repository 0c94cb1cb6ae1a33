-- `example_stats`: every example's history in training, by environment and environment version
-- (a change of rules starts a history afresh): what a curriculum, or a person choosing data,
-- reads. Training groups only (an evaluation's examples are held out); scored episodes only.
--   attempts: its landed groups; episodes: their scored episodes
--   mean_reward, reward_variance: over those episodes (population variance)
--   solve_rate: the share that succeeded (null where the environment gives no threshold)
--   last_policy_version, last_seen: its most recent group's version and landing time
CREATE VIEW `example_stats` AS
WITH scored AS (
  SELECT g.env, g.env_version, g.example_id, g.id AS group_id, e.score, e.success
  FROM groups g JOIN episodes e ON e.group_id = g.id
  WHERE g.kind = 'train' AND g.status = 'landed' AND e.score IS NOT NULL
),
latest AS (
  SELECT env, env_version, example_id, policy_version, finished_at,
    ROW_NUMBER() OVER (
      PARTITION BY env, env_version, example_id ORDER BY finished_at DESC, id DESC
    ) AS place
  FROM groups WHERE kind = 'train' AND status = 'landed'
)
SELECT s.env, s.env_version, s.example_id,
  COUNT(DISTINCT s.group_id) AS attempts,
  COUNT(*) AS episodes,
  AVG(s.score) AS mean_reward,
  AVG(s.success) AS solve_rate,
  MAX(0, AVG(s.score * s.score) - AVG(s.score) * AVG(s.score)) AS reward_variance,
  l.policy_version AS last_policy_version,
  l.finished_at AS last_seen
FROM scored s
JOIN latest l ON l.env = s.env AND l.env_version IS s.env_version
  AND l.example_id = s.example_id AND l.place = 1
GROUP BY s.env, s.env_version, s.example_id;
