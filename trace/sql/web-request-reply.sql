-- A request's reply: the text of its SSE chunks, in order. ?1: run, ?2: request.
SELECT group_concat(t, '') FROM (SELECT json_extract(args, '$.text') AS t FROM slices
  WHERE run_id = ?1 AND request = ?2 AND layer = 6 AND name = 'sse_chunk' ORDER BY ts_ns)
