-- The arrows of a request's window: its own hops and the steps' (ends of no
-- request), each with both ends' columns as web-events-drawn.sql's.
-- ?1: run, ?2: the window's start, ?3: its end, ?4: request, ?5: how many.
SELECT f.from_slice, f.to_slice,
       a.id, a.ts_ns, coalesce(a.dur_ns, 0), a.layer, a.name, a.clock, a.direction, a.depth, a.kind = 'instant', a.track,
       b.id, b.ts_ns, coalesce(b.dur_ns, 0), b.layer, b.name, b.clock, b.direction, b.depth, b.kind = 'instant', b.track
FROM slices a JOIN flows f ON f.run_id = a.run_id AND f.from_slice = a.id JOIN slices b ON b.id = f.to_slice
WHERE a.run_id = ?1 AND a.ts_ns BETWEEN ?2 AND ?3 AND b.ts_ns BETWEEN ?2 AND ?3
  AND (a.request IS NULL OR a.request = ?4) AND (b.request IS NULL OR b.request = ?4)
LIMIT ?5
