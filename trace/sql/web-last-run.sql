-- The trace's newest run.
SELECT max(id) FROM runs
