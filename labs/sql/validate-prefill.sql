-- validate-prefill.sql -- hipath validate: the prefill of requests :first to
-- :last of run :run (a wave of B prompts, in one step or a few): its device
-- time (v_steps.gpu_ns, modeled on sim and analytic) and its layer-1 slices
-- (kernels and copies, each with a launch latency), summed over its steps.
--
-- In the sqlite3 shell, on a trace of hipath validate (traces/validate/validate.db):
--   .param set :run 1
--   .param set :first 2
--   .param set :last 2
--   .read labs/sql/validate-prefill.sql
SELECT sum(gpu_ns) / 1e9 AS gpu_s, sum(n_device) AS device_slices, count(*) AS steps
FROM v_steps WHERE run_id = :run AND n_prefill > 0 AND slice_id IN
  (SELECT slice_id FROM v_step_requests WHERE run_id = :run AND request BETWEEN :first AND :last);
