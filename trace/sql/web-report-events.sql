-- The server's events a client's report is placed at (and any client
-- events already there): name, ts_ns, the request's body bytes.
-- ?1: run, ?2: request, ?3: how many.
SELECT name, ts_ns, json_extract(args, '$.bytes') FROM slices
WHERE run_id = ?1 AND request = ?2 AND (layer = 8 OR (layer = 6 AND name IN ('http_request', 'sse_chunk', 'sse_done')))
ORDER BY ts_ns LIMIT ?3
