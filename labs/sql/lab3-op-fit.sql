-- lab3-op-fit.sql -- lab 3: where the time of request :req's decode steps
-- goes, per layer-4 op. One point per op name: its median time (s) over the
-- steps, its mean bytes; a line time = a + bytes / beta_eff through them by
-- least squares (a stalled op does not tip a median). a is the host's cost
-- per op that no byte explains.
--
-- In the sqlite3 shell, on labs/out/lab3/lab3.db (runs 1, 2, 3: the device, cpu, the 7B):
--   .param set :run 1
--   .param set :req 2
--   .read labs/sql/lab3-op-fit.sql
WITH dec AS (
  SELECT step FROM v_steps WHERE run_id = :run AND n_prefill = 0 AND slice_id IN
    (SELECT slice_id FROM v_step_requests WHERE run_id = :run AND request = :req)),
d AS (
  SELECT name, dur_ns * 1e-9 AS y, json_extract(args, '$.bytes') AS x FROM slices
  WHERE run_id = :run AND layer = 4 AND direction = 'down' AND step IN (SELECT step FROM dec)
    AND json_extract(args, '$.bytes') IS NOT NULL),
r AS (SELECT *, row_number() OVER (PARTITION BY name ORDER BY y) AS i, count(*) OVER (PARTITION BY name) AS n FROM d),
o AS (SELECT name, avg(x) AS x, avg(CASE WHEN 2 * i - n BETWEEN 0 AND 2 THEN y END) AS y FROM r GROUP BY name),
f AS (SELECT count(*) AS n, sum(x) AS sx, sum(y) AS sy, sum(x * x) AS sxx, sum(x * y) AS sxy FROM o),
fit AS (SELECT *, (n * sxy - sx * sy) / (n * sxx - sx * sx) AS slope FROM f)
SELECT slope AS s_per_byte, (sy - slope * sx) / n AS op_overhead_s FROM fit;
