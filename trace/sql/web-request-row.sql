-- One request's window, events, and whether a client recorded its side. ?1: run, ?2: request.
SELECT min(ts_ns), max(ts_ns + coalesce(dur_ns, 0)), count(*), max(layer = 8) FROM slices
WHERE run_id = ?1 AND request = ?2
