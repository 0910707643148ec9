-- A request's window as the timeline draws it one by one: its own events and
-- those of no request that are a pixel wide or more (?4 ns), and the few
-- instants of layers 8-6. Columns: id, ts_ns, dur_ns, layer, name, clock,
-- direction, depth, instant, track. ?1: run, ?2: from, ?3: to, ?4: a pixel's
-- ns, ?5: the window's start, ?6: request, ?7: how many.
SELECT id, ts_ns, coalesce(dur_ns, 0), layer, name, clock, direction, depth, kind = 'instant', track FROM slices
WHERE run_id = ?1 AND ts_ns BETWEEN ?5 AND ?3 AND ts_ns + coalesce(dur_ns, 0) >= ?2 AND (request IS NULL OR request = ?6)
  AND ((kind = 'slice' AND dur_ns >= ?4) OR (kind = 'instant' AND layer >= 6))
ORDER BY ts_ns LIMIT ?7
