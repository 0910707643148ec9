-- A run's named child tracks (a GPU's stream: "GPU 1/stream 0"). ?1: run, ?2: how many.
SELECT layer, track, name FROM tracks WHERE run_id = ?1 ORDER BY layer, track LIMIT ?2
