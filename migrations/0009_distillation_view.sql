-- On-policy distillation, by run, environment, teacher and policy version: is the student
-- getting closer to the teacher? `reverse_kl` is each episode's mean over sampled tokens of
-- student_logprob - teacher_logprob (0 when the student samples as the teacher would); only
-- episodes the teacher scored count.
CREATE VIEW `distillation` AS
SELECT
  run_id,
  env,
  teacher_model,
  policy_version,
  COUNT(*) AS episodes,
  ROUND(AVG(reverse_kl), 6) AS reverse_kl,
  ROUND(MIN(reverse_kl), 6) AS reverse_kl_min,
  ROUND(MAX(reverse_kl), 6) AS reverse_kl_max,
  ROUND(AVG(score), 4) AS score_mean
FROM episodes
WHERE reverse_kl IS NOT NULL
GROUP BY run_id, env, teacher_model, policy_version;
