-- lab4-batch.sql -- lab 4: one batch, requests :first to :last of run :run,
-- sent at once (B = :batch of them). Over their decode steps, and over
-- `together`, those in which all B decoded at once: step times and device
-- times (medians: the middle row, or the mean of the two middle ones;
-- gpu_s is the layer-1 time of a step, modeled on sim), layer-4 ops and
-- layer-1 slices (kernels and copies) per step; the requests' median TTFT
-- and the time from the first start to the last end, in seconds.
--
-- In the sqlite3 shell, on labs/out/lab4/lab4.db (B = 4: requests 5 to 8):
--   .param set :run 1
--   .param set :first 5
--   .param set :last 8
--   .param set :batch 4
--   .read labs/sql/lab4-batch.sql
WITH dec AS (
  SELECT * FROM v_steps WHERE run_id = :run AND n_prefill = 0 AND slice_id IN
    (SELECT slice_id FROM v_step_requests WHERE run_id = :run AND request BETWEEN :first AND :last)),
every AS (SELECT dur_ns, row_number() OVER (ORDER BY dur_ns) AS i, count(*) OVER () AS n FROM dec),
together AS (SELECT *, row_number() OVER (ORDER BY dur_ns) AS i, row_number() OVER (ORDER BY gpu_ns) AS gpu_i,
                   count(*) OVER () AS n FROM dec WHERE n_decode = :batch),
req AS (
  SELECT *, row_number() OVER (ORDER BY ttft_ns) AS i, count(*) OVER () AS n
  FROM v_request_latency WHERE run_id = :run AND request BETWEEN :first AND :last)
SELECT
  (SELECT avg(CASE WHEN 2 * i - n BETWEEN 0 AND 2 THEN dur_ns / 1e9 END) FROM together) AS step_s,
  (SELECT avg(CASE WHEN 2 * gpu_i - n BETWEEN 0 AND 2 THEN gpu_ns / 1e9 END) FROM together) AS gpu_s,
  (SELECT avg(n_ops) FROM together) AS ops_per_step,
  (SELECT avg(n_device) FROM together) AS device_slices_per_step,
  (SELECT avg(CASE WHEN 2 * i - n BETWEEN 0 AND 2 THEN dur_ns / 1e9 END) FROM every) AS tpot_s,
  (SELECT avg(CASE WHEN 2 * i - n BETWEEN 0 AND 2 THEN ttft_ns / 1e9 END) FROM req) AS ttft_s,
  (SELECT (max(start_ns + e2e_ns) - min(start_ns)) / 1e9 FROM req) AS span_s;
