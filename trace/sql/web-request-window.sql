-- The first and last ns of a request's events of layer ?3 and below
-- (8: all; 7: the server's own, not the client's). ?1: run, ?2: request, ?3: layer.
SELECT min(ts_ns), max(ts_ns + coalesce(dur_ns, 0)) FROM slices
WHERE run_id = ?1 AND request = ?2 AND layer <= ?3
