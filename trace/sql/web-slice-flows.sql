-- The events an event's arrows go to (?3 = 0) or come from (?3 = 1):
-- id, layer, name, request. ?1: run, ?2: the event, ?4: how many.
SELECT s.id, s.layer, s.name, s.request FROM flows f JOIN slices s
  ON s.id = CASE ?3 WHEN 0 THEN f.to_slice ELSE f.from_slice END
WHERE f.run_id = ?1 AND CASE ?3 WHEN 0 THEN f.from_slice ELSE f.to_slice END = ?2
LIMIT ?4
