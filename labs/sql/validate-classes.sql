-- validate-classes.sql -- hipath validate: the device time of requests :first
-- to :last of run :run, per kernel class (layer 1's arg `class`, sim.h):
-- with :batch = 0 summed over their prefill steps, else averaged over their
-- decode steps in which all :batch of them decoded. A class's seconds
-- include its launches' latency; `collective` the all-reduces and gathers
-- over a stage's :gpus GPUs (their time has no launch in it); `handoff` the
-- sends from one pipeline stage to the next (each once: its recv on the next
-- stage is the same time); `copy` the rest, the copies; a summary slice
-- (sim_summarize) counts as its arg `launches`, a kernel as 1. Each stage's
-- first GPU (tracks 1, 1 + :gpus, ...; track 0 the layer's own) stands for
-- the stage's GPUs: their shards are equal. The stages are summed: a row's
-- batch goes through them one after another (docs/parallel.md, the bubble).
-- The steps are read from the run's own step slices, not v_steps, whose
-- per-step totals over every run of the file grow with it (a query per row
-- of validate's table made the whole run quadratic).
--
-- In the sqlite3 shell, on a trace of hipath validate (traces/validate/validate.db):
--   .param set :run 1
--   .param set :first 2
--   .param set :last 2
--   .param set :batch 0
--   .param set :gpus 1
--   .read labs/sql/validate-classes.sql
WITH st AS (
  SELECT DISTINCT r.step FROM v_step_requests r JOIN slices s ON s.id = r.slice_id
  WHERE r.run_id = :run AND r.request BETWEEN :first AND :last
    AND CASE WHEN :batch = 0 THEN json_extract(s.args, '$.n_prefill') > 0
             ELSE json_extract(s.args, '$.n_prefill') = 0 AND json_extract(s.args, '$.n_decode') = :batch END),
k AS (
  SELECT coalesce(json_extract(args, '$.class'), CASE WHEN name IN ('allReduce', 'gather') THEN 'collective'
                                                      WHEN name = 'send' THEN 'handoff' ELSE 'copy' END) AS class,
         dur_ns / 1e9 AS s,
         coalesce(json_extract(args, '$.launches'), 1) AS n
  FROM slices WHERE run_id = :run AND layer = 1 AND (track <= 1 OR (track - 1) % :gpus = 0) AND name <> 'recv' AND kind = 'slice'
    AND step IN (SELECT step FROM st)),
per AS (SELECT count(*) AS steps, CASE WHEN :batch = 0 THEN 1.0 ELSE 1.0 / max(1, count(*)) END AS w FROM st)
SELECT steps,
  w * sum(CASE WHEN class = 'gemm_compute' THEN s ELSE 0 END) AS gemm_compute_s,
  w * sum(CASE WHEN class = 'gemm_compute' THEN n ELSE 0 END) AS gemm_compute_n,
  w * sum(CASE WHEN class = 'gemm_memory' THEN s ELSE 0 END) AS gemm_memory_s,
  w * sum(CASE WHEN class = 'gemm_memory' THEN n ELSE 0 END) AS gemm_memory_n,
  w * sum(CASE WHEN class = 'attention_prefill' THEN s ELSE 0 END) AS attention_prefill_s,
  w * sum(CASE WHEN class = 'attention_prefill' THEN n ELSE 0 END) AS attention_prefill_n,
  w * sum(CASE WHEN class = 'attention_decode' THEN s ELSE 0 END) AS attention_decode_s,
  w * sum(CASE WHEN class = 'attention_decode' THEN n ELSE 0 END) AS attention_decode_n,
  w * sum(CASE WHEN class = 'elementwise' THEN s ELSE 0 END) AS elementwise_s,
  w * sum(CASE WHEN class = 'elementwise' THEN n ELSE 0 END) AS elementwise_n,
  w * sum(CASE WHEN class = 'collective' THEN s ELSE 0 END) AS collective_s,
  w * sum(CASE WHEN class = 'handoff' THEN s ELSE 0 END) AS handoff_s,
  w * sum(CASE WHEN class = 'copy' THEN s ELSE 0 END) AS copy_s,
  w * sum(CASE WHEN class = 'copy' THEN n ELSE 0 END) AS copy_n
FROM k, per;
