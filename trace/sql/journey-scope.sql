-- The events the journey reads, as temp.s: the run's (?2 = 0), or the
-- window [?3, ?4] of request ?2: its own events and those of no request.
-- ?1: run.
CREATE TEMP TABLE s AS SELECT * FROM slices
WHERE run_id = ?1 AND (?2 = 0 OR (ts_ns BETWEEN ?3 AND ?4 AND (request IS NULL OR request = ?2)))
