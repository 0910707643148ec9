-- A run's requests, newest first: their window, events, and whether a
-- client recorded its side (layer 8). ?1: run, ?2: ids below this, ?3: how many.
SELECT request, min(ts_ns), max(ts_ns + coalesce(dur_ns, 0)), count(*), max(layer = 8) FROM slices
WHERE run_id = ?1 AND request IS NOT NULL AND request < ?2
GROUP BY request ORDER BY request DESC LIMIT ?3
