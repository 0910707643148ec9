-- When the client got the reply's first byte: from then on it is on its way up. ?1: run, ?2: request (0: any).
SELECT min(ts_ns) FROM slices WHERE run_id = ?1 AND layer = 8 AND name = 'first_byte' AND (?2 = 0 OR request = ?2)
