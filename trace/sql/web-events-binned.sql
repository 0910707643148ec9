-- The rest of web-events-drawn.sql's window, counted per layer, track (each
-- GPU's stream), clock and pixel column x of ?7: layer, clock, x, count,
-- busy ns, track. The same parameters.
SELECT layer, clock, CAST((max(ts_ns, ?2) - ?2) * ?7 / (?3 - ?2) AS INTEGER) AS x, count(*),
       sum(min(ts_ns + coalesce(dur_ns, 0), ?3) - max(ts_ns, ?2)), track FROM slices
WHERE run_id = ?1 AND ts_ns BETWEEN ?5 AND ?3 AND ts_ns + coalesce(dur_ns, 0) >= ?2 AND (request IS NULL OR request = ?6)
  AND NOT ((kind = 'slice' AND dur_ns >= ?4) OR (kind = 'instant' AND layer >= 6))
GROUP BY layer, track, clock, x
