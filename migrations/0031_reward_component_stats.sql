-- `reward_component_stats`: each rubric component's values by run, environment (and its version),
-- policy version and kind: how a score breaks down, and how each part moves as the policy trains.
-- Over the episodes whose grade landed with components (a failed episode has none).
--   weight: the component's weight (0: a metric, recorded and never rewarded); a component
--     whose weight changed within one of these rows shows the largest, and `weights` says so
--   episodes, mean_value, min_value, max_value, value_variance (population)
--   weighted_mean: mean of weight x value, its share of the mean score
CREATE VIEW `reward_component_stats` AS
SELECT e.run_id, e.env, e.env_version, e.policy_version, g.kind, c.name,
  MAX(c.weight) AS weight,
  COUNT(DISTINCT c.weight) AS weights,
  COUNT(*) AS episodes,
  AVG(c.value) AS mean_value,
  MIN(c.value) AS min_value,
  MAX(c.value) AS max_value,
  MAX(0, AVG(c.value * c.value) - AVG(c.value) * AVG(c.value)) AS value_variance,
  AVG(c.weight * c.value) AS weighted_mean
FROM reward_components c
JOIN episodes e ON e.id = c.episode_id
JOIN groups g ON g.id = c.group_id
GROUP BY e.run_id, e.env, e.env_version, e.policy_version, g.kind, c.name;
