-- request-layers.sql -- each layer's slices in request :req's window (its
-- start to its end, v_request_latency) of run :run, one row a layer, in
-- seconds. top_s: the layer's top-level (depth 0) slices, any clock, so
-- layers overlap (a step holds layers 5 to 1); top_measured_s: those timed
-- by a host clock; all_s: every slice, nested ones too (layer 1: device
-- time, layer 3: launches); up_bytes: what its slices carried back up
-- (layer 2: the D2H copies); scaled_s: the part of its kernels' time that
-- the wave model scales with the device's peak and bandwidth, waves x
-- wave_s, without the launch latency (layer 1 on sim and analytic).
--
-- In the sqlite3 shell, on a lab's database (labs/out/labN/labN.db):
--   .param set :run 1
--   .param set :req 2
--   .read labs/sql/request-layers.sql
WITH w AS (SELECT start_ns AS t0, start_ns + e2e_ns AS t1 FROM v_request_latency WHERE run_id = :run AND request = :req)
SELECT s.layer,
       sum(CASE WHEN s.depth = 0 THEN s.dur_ns END) / 1e9 AS top_s,
       sum(CASE WHEN s.depth = 0 AND s.clock = 'measured' THEN s.dur_ns END) / 1e9 AS top_measured_s,
       sum(s.dur_ns) / 1e9 AS all_s,
       sum(CASE WHEN s.direction = 'up' THEN json_extract(s.args, '$.bytes') END) AS up_bytes,
       sum(json_extract(s.args, '$.waves') * json_extract(s.args, '$.wave_s')) AS scaled_s
FROM slices s, w
WHERE s.run_id = :run AND s.kind = 'slice' AND s.ts_ns BETWEEN w.t0 AND w.t1
GROUP BY s.layer ORDER BY s.layer DESC;
