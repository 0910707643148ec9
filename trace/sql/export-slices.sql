-- The events that overlap the window [?2, ?3], in the order a trace is written. ?1: run.
SELECT id, ts_ns, dur_ns, layer, direction, name, request, step, clock, track, depth, kind, thread, args FROM slices
WHERE run_id = ?1 AND ts_ns <= ?3 AND ts_ns + coalesce(dur_ns, 0) >= ?2
ORDER BY ts_ns, depth, id
