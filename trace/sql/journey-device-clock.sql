-- Whether the device's time is modeled: layer 1's slices are. ?1: run.
SELECT 1 FROM slices WHERE run_id = ?1 AND layer = 1 AND clock = 'modeled' LIMIT 1
