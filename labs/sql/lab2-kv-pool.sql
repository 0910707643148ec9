-- lab2-kv-pool.sql -- lab 2 (b): what the server of run :run held. The
-- weights and the KV pool from the runtime's memory counters, the pool in
-- blocks from the first kv_alloc (the warm-up's: its free blocks plus its
-- own), and the most requests running at once.
--
-- In the sqlite3 shell, on labs/out/lab2/lab2.db:
--   .param set :run 1
--   .read labs/sql/lab2-kv-pool.sql
SELECT
  (SELECT max(value) FROM counters WHERE run_id = :run AND name = 'mem_weights_bytes') AS weights_bytes,
  (SELECT max(value) FROM counters WHERE run_id = :run AND name = 'mem_kv_bytes') AS kv_pool_bytes,
  (SELECT json_extract(args, '$.free_blocks') + json_extract(args, '$.seq_blocks') FROM slices
   WHERE id = (SELECT min(id) FROM slices WHERE run_id = :run AND name = 'kv_alloc')) AS pool_blocks,
  (SELECT max(value) FROM counters WHERE run_id = :run AND name = 'running') AS max_running;
