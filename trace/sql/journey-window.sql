-- The request's window: its client's `request` slice (?2 = 0: the run's first). ?1: run.
SELECT ts_ns, ts_ns + dur_ns FROM slices
WHERE run_id = ?1 AND layer = 8 AND name = 'request' AND dur_ns IS NOT NULL AND (?2 = 0 OR request = ?2)
ORDER BY ts_ns LIMIT 1
