-- A run's named child tracks. ?1: run.
SELECT layer, track, name FROM tracks WHERE run_id = ?1
