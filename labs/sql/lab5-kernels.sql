-- lab5-kernels.sql -- lab 5: each device kernel of run :run on the roofline,
-- one row a kernel name, every request together (v_kernel_time, layer 1):
-- its arithmetic intensity (FLOP per byte) and the rate it reached.
--
-- In the sqlite3 shell, on labs/out/lab5/lab5.db (run 1: tiny-hi, run 2: the 7B):
--   .param set :run 1
--   .read labs/sql/lab5-kernels.sql
SELECT name, coalesce(flops, 0) / bytes AS intensity, gflop_per_s   -- a copy has no FLOPs
FROM v_kernel_time WHERE run_id = :run AND layer = 1 AND bytes > 0 ORDER BY name;
