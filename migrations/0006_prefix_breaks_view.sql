-- Drift between what the model produced and what the host was sent next: sampled turns whose
-- prompt did not start with the previous turn's prompt + completion, by run, environment, the
-- model the host reported, and the policy version. Only turns with tokens count, and the rate is
-- over the turns that could break (every one but an episode's first).
CREATE VIEW `prefix_breaks` AS
SELECT
  e.run_id,
  e.env,
  m.model,
  e.policy_version,
  COUNT(DISTINCT e.id) AS episodes,
  COUNT(*) AS turns,
  SUM(m.prefix_break) AS breaks,
  ROUND(1.0 * SUM(m.prefix_break) / MAX(SUM(m.turn > 0), 1), 4) AS break_rate
FROM messages m
JOIN episodes e ON e.id = m.episode_id
WHERE m.sampled = 1 AND m.prefix_break IS NOT NULL
GROUP BY e.run_id, e.env, m.model, e.policy_version;
