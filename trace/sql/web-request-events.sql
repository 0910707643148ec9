-- How many events a request's window holds: its own and those of no request. ?1: run, ?2: request.
SELECT count(*) FROM slices
WHERE run_id = ?1 AND (request IS NULL OR request = ?2) AND ts_ns BETWEEN
  (SELECT min(ts_ns) FROM slices WHERE run_id = ?1 AND request = ?2) AND
  (SELECT max(ts_ns + coalesce(dur_ns, 0)) FROM slices WHERE run_id = ?1 AND request = ?2)
