-- The oldest request a run still holds (the cap deletes the oldest first). ?1: run.
SELECT min(request) FROM slices WHERE run_id = ?1 AND request IS NOT NULL
