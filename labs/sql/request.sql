-- request.sql -- what the labs measure about one request :req of run :run:
-- its prompt as tokenized (layer 7), its latency (v_request_latency), its
-- engine steps (v_steps, joined through v_step_requests): the prefill, and
-- the decode steps' means, medians and slopes; its KV blocks (layer 6).
-- Times in seconds. Step times are medians (the middle row, or the mean of
-- the two middle ones): a step now and then stalls while its thread writes
-- out a full trace buffer, which a mean would count.
--
-- In the sqlite3 shell, on a lab's database (labs/out/labN/labN.db):
--   .param set :run 1
--   .param set :req 2
--   .read labs/sql/request.sql
WITH steps AS (
  SELECT v.* FROM v_steps v JOIN v_step_requests r ON r.run_id = v.run_id AND r.slice_id = v.slice_id
  WHERE v.run_id = :run AND r.request = :req),
pre AS (SELECT * FROM steps WHERE n_prefill > 0),
dec AS (
  SELECT *, row_number() OVER (ORDER BY gpu_ns) AS gpu_i, row_number() OVER (ORDER BY dur_ns) AS dur_i,
         count(*) OVER () AS n
  FROM steps WHERE n_prefill = 0),
lat AS (SELECT * FROM v_request_latency WHERE run_id = :run AND request = :req)
SELECT
  (SELECT json_extract(args, '$.tokens') FROM slices
   WHERE run_id = :run AND layer = 7 AND name = 'tokenize' AND request = :req) AS prompt_tokens,
  (SELECT ttft_ns / 1e9 FROM lat) AS ttft_s,
  (SELECT e2e_ns / 1e9 FROM lat) AS e2e_s,
  (SELECT count(*) FROM steps) AS passes,
  -- the prefill step
  (SELECT sum(op_flops) FROM pre) AS prefill_flops,
  (SELECT sum(op_bytes) FROM pre) AS prefill_bytes,
  (SELECT sum(gpu_ns) / 1e9 FROM pre) AS prefill_gpu_s,
  (SELECT sum(dur_ns) / 1e9 FROM pre) AS prefill_s,
  -- a decode step: layer-4 ops and their FLOPs and bytes, layer-3 launches
  avg(n_ops) AS ops_per_step,
  avg(op_flops) AS flops_per_step,
  avg(op_bytes) AS bytes_per_step,
  avg(weight_bytes) AS weight_bytes_per_step,
  avg(attention_bytes) AS kv_bytes_per_step,
  avg(n_launches) AS launches_per_step,
  avg(CASE WHEN 2 * gpu_i - n BETWEEN 0 AND 2 THEN gpu_ns / 1e9 END) AS gpu_s,
  avg(CASE WHEN 2 * dur_i - n BETWEEN 0 AND 2 THEN dur_ns / 1e9 END) AS step_s,
  -- least squares of the step time, and of its device time, against the step number (the
  -- context grows by one a step): seconds per token of context
  (count(*) * sum(step * dur_ns * 1e-9) - sum(step) * sum(dur_ns * 1e-9))
    / (count(*) * sum(step * step) - sum(step) * sum(step)) AS step_s_slope,
  (count(*) * sum(step * gpu_ns * 1e-9) - sum(step) * sum(gpu_ns * 1e-9))
    / (count(*) * sum(step * step) - sum(step) * sum(step)) AS gpu_s_slope,
  -- KV blocks: the prompt's in one kv_alloc, then one per new block; all given back in kv_free
  (SELECT count(*) FROM slices WHERE run_id = :run AND name = 'kv_alloc' AND request = :req) AS kv_allocs,
  (SELECT json_extract(args, '$.blocks') FROM slices
   WHERE run_id = :run AND name = 'kv_free' AND request = :req) AS kv_blocks_end
FROM dec;
