-- One event with its track's name. ?1: run, ?2: the event (slice id).
SELECT s.id, s.ts_ns, s.dur_ns, s.layer, s.direction, s.name, s.request, s.step, s.clock, s.track,
       s.depth, s.kind, s.thread, s.args, t.name
FROM slices s LEFT JOIN tracks t ON t.run_id = s.run_id AND t.layer = s.layer AND t.track = s.track
WHERE s.run_id = ?1 AND s.id = ?2
