-- The runs, newest first. ?1: how many.
SELECT id FROM runs ORDER BY id DESC LIMIT ?1
