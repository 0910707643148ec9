-- lab12-gpus.sql -- lab 12: each GPU (a layer-1 track) over the steps that
-- requests :first to :last of run :run were in; every figure modeled (no
-- host time). busy_share: its kernels' and copies' time (the hand-offs, send
-- and recv, left out) over the window's span on every GPU: 1/M on each of M
-- stages when one request crosses a pipeline. Per decode step of the window,
-- on average: the bytes its kernels read and wrote, its stream's time, its
-- all-reduces and all-to-alls (how many, how long), its grouped expert
-- matmuls (moe_gemm), its hand-offs (send); and the MoE dispatch's rows this
-- GPU's experts took in the window's first step (the prefill).
--
-- In the sqlite3 shell, on labs/out/lab12/lab12.db (run 1: TP 8, request 2; run
-- 2: PP 8, request 1 alone, then 2-9 together; runs 3, 4: EP 8, request 2):
--   .param set :run 2
--   .param set :first 2
--   .param set :last 9
--   .read labs/sql/lab12-gpus.sql
WITH st AS (   -- layer 6's step slices, each naming its requests (v_steps is the same, slower)
  SELECT DISTINCT step, json_extract(args, '$.n_prefill') AS n_prefill
  FROM slices, json_each(json_extract(slices.args, '$.requests')) AS r
  WHERE run_id = :run AND layer = 6 AND name = 'step' AND r.value BETWEEN :first AND :last),
dec AS (SELECT step FROM st WHERE n_prefill = 0),
s AS (
  SELECT track, step, name, ts_ns, dur_ns, json_extract(args, '$.bytes') AS bytes, json_extract(args, '$.waves') AS waves,
         step IN (SELECT step FROM dec) AS decode
  FROM slices WHERE run_id = :run AND layer = 1 AND kind = 'slice' AND step IN (SELECT step FROM st)),
span AS (SELECT (max(ts_ns + dur_ns) - min(ts_ns)) / 1e9 AS span_s FROM s),
n AS (SELECT max(count(*), 1) AS steps FROM dec),
rows AS (  -- layer 4's moe_dispatch in the window's first step: each GPU's rows, summed over the layers
  SELECT value AS rows, key + 1 AS track FROM slices, json_each('[' || replace(json_extract(args, '$.gpu_rows'), ' ', ',') || ']')
  WHERE run_id = :run AND layer = 4 AND name = 'moe_dispatch' AND step = (SELECT min(step) FROM st))
SELECT s.track AS track,
       sum(CASE WHEN name NOT IN ('send', 'recv') THEN dur_ns END) / 1e9 AS busy_s,
       (SELECT span_s FROM span) AS span_s,
       sum(CASE WHEN name NOT IN ('send', 'recv') THEN dur_ns END) / 1e9 / (SELECT span_s FROM span) AS busy_share,
       coalesce(sum(CASE WHEN decode AND waves IS NOT NULL THEN bytes END), 0) / (SELECT steps FROM n) AS bytes_step,
       coalesce(sum(CASE WHEN decode THEN dur_ns END), 0) / 1e9 / (SELECT steps FROM n) AS stream_step_s,
       coalesce(sum(decode AND name = 'allReduce'), 0) * 1.0 / (SELECT steps FROM n) AS all_reduces,
       coalesce(sum(CASE WHEN decode AND name = 'allReduce' THEN dur_ns END), 0) / 1e9 / (SELECT steps FROM n) AS all_reduce_s,
       coalesce(sum(decode AND name = 'allToAll'), 0) * 1.0 / (SELECT steps FROM n) AS all_to_alls,
       coalesce(sum(CASE WHEN decode AND name = 'allToAll' THEN dur_ns END), 0) / 1e9 / (SELECT steps FROM n) AS all_to_all_s,
       coalesce(sum(CASE WHEN decode AND name = 'moe_gemm' THEN dur_ns END), 0) / 1e9 / (SELECT steps FROM n) AS moe_gemm_s,
       coalesce(sum(decode AND name = 'send'), 0) * 1.0 / (SELECT steps FROM n) AS sends,
       coalesce(sum(CASE WHEN decode AND name = 'send' THEN dur_ns END), 0) / 1e9 / (SELECT steps FROM n) AS send_s,
       (SELECT sum(rows) FROM rows WHERE rows.track = s.track) AS prefill_rows
FROM s GROUP BY s.track ORDER BY s.track;
