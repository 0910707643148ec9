-- The slices that overlap the window [?2, ?3]: start, end, layer,
-- direction; the request ?4's and those of no request (?4 = 0: all). ?1: run.
SELECT ts_ns, ts_ns + dur_ns, layer, direction FROM slices
WHERE run_id = ?1 AND kind = 'slice' AND dur_ns > 0 AND ts_ns < ?3 AND ts_ns + dur_ns > ?2
  AND (?4 = 0 OR request IS NULL OR request = ?4)
