-- lab8-step.sql -- lab 8: the decode steps in which the :batch requests
-- :first to :last of run :run all decoded, on GPU 0's stream (layer 1,
-- track 1: the GPUs hold equal shards, so one stands for all), per step on
-- average, in seconds; every figure modeled (no host time). step_s: the
-- stream's busy time; the collectives (allReduce, gather) and copies; the
-- kernels (the slices with waves), their waves x wave_s (the work the wave
-- model times), of it the replicated kernels' (rmsnorm, add: x is whole on
-- every GPU), and launch_s, what the kernels take beyond their waves (each
-- one's launch latency).
--
-- In the sqlite3 shell, on labs/out/lab8/lab8.db (runs 1-3: 2, 4, 8 x H100,
-- runs 4-7: 1, 2, 4, 8 x MI300X; in each, request 1 is the warm-up, request
-- 2 the one measured):
--   .param set :run 1
--   .param set :first 2
--   .param set :last 2
--   .param set :batch 1
--   .read labs/sql/lab8-step.sql
WITH st AS (
  SELECT step FROM v_steps WHERE run_id = :run AND n_prefill = 0 AND n_decode = :batch AND slice_id IN
    (SELECT slice_id FROM v_step_requests WHERE run_id = :run AND request BETWEEN :first AND :last)),
s AS (
  SELECT step, name, dur_ns / 1e9 AS t, json_extract(args, '$.waves') * json_extract(args, '$.wave_s') AS w
  FROM slices WHERE run_id = :run AND layer = 1 AND track = 1 AND kind = 'slice' AND step IN (SELECT step FROM st)),
per AS (
  SELECT step, sum(t) AS step_s,
         sum(name = 'allReduce') AS all_reduces,
         coalesce(sum(CASE WHEN name = 'allReduce' THEN t END), 0) AS all_reduce_s,
         coalesce(sum(CASE WHEN name = 'gather' THEN t END), 0) AS gather_s,
         coalesce(sum(CASE WHEN name LIKE 'copy%' THEN t END), 0) AS copies_s,
         sum(w IS NOT NULL) AS kernels,
         sum(w) AS waves_s,
         coalesce(sum(CASE WHEN name IN ('rmsnorm', 'add') THEN w END), 0) AS replicated_s,
         sum(CASE WHEN w IS NOT NULL THEN t - w END) AS launch_s
  FROM s GROUP BY step)
SELECT count(*) AS steps, avg(step_s) AS step_s, avg(all_reduces) AS all_reduces, avg(all_reduce_s) AS all_reduce_s,
       avg(gather_s) AS gather_s, avg(copies_s) AS copies_s, avg(kernels) AS kernels, avg(waves_s) AS waves_s,
       avg(replicated_s) AS replicated_s, avg(launch_s) AS launch_s
FROM per;
