-- The counters' samples in the window [?2, ?3]. ?1: run.
SELECT ts_ns, layer, track, name, value, clock FROM counters WHERE run_id = ?1 AND ts_ns BETWEEN ?2 AND ?3 ORDER BY ts_ns
