-- lab3-op-fit.sql -- lab 3: where the time of request :req's decode steps
-- goes, per slice of layer :layer: 1, the device's kernels (their time is
-- the device's: modeled on sim and analytic, GPU events on hip), or 4, the
-- ops (on cpu the op is the computation, on the host's clock). One point per
-- name: its median time (s) over the steps, its mean bytes; a line
-- time = a + bytes * slope through them by least squares (a stalled one
-- does not tip a median): a is the cost per kernel (or op) no byte
-- explains. And the rate they reached together: all their bytes over all
-- their time (beta_eff). Copies are not kernels: their bytes cross the
-- host link.
--
-- In the sqlite3 shell, on labs/out/lab3/lab3.db (runs 1, 2, 3: the device, cpu, the 7B):
--   .param set :run 1
--   .param set :req 2
--   .param set :layer 1
--   .read labs/sql/lab3-op-fit.sql
WITH dec AS (
  SELECT step FROM v_steps WHERE run_id = :run AND n_prefill = 0 AND slice_id IN
    (SELECT slice_id FROM v_step_requests WHERE run_id = :run AND request = :req)),
d AS (
  SELECT name, dur_ns * 1e-9 AS y, json_extract(args, '$.bytes') AS x FROM slices
  WHERE run_id = :run AND layer = :layer AND kind = 'slice' AND name NOT LIKE 'copy%'
    AND step IN (SELECT step FROM dec) AND json_extract(args, '$.bytes') IS NOT NULL),
r AS (SELECT *, row_number() OVER (PARTITION BY name ORDER BY y) AS i, count(*) OVER (PARTITION BY name) AS n FROM d),
o AS (SELECT name, avg(x) AS x, avg(CASE WHEN 2 * i - n BETWEEN 0 AND 2 THEN y END) AS y FROM r GROUP BY name),
f AS (SELECT count(*) AS n, sum(x) AS sx, sum(y) AS sy, sum(x * x) AS sxx, sum(x * y) AS sxy FROM o),
fit AS (SELECT *, (n * sxy - sx * sy) / (n * sxx - sx * sx) AS slope FROM f)
SELECT slope AS s_per_byte, (sy - slope * sx) / n AS op_overhead_s,
       (SELECT sum(x) / sum(y) FROM d) AS bytes_per_s FROM fit;
