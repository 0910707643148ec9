-- Every request after ?2, from layer 6's events: request, arrived_ns,
-- owner, ttft_s, tokens, latency_s, finish, refused (its status),
-- cached_tokens (the prefix cache's, at its admission), preempted (times).
-- ?1: run, ?3: how many.
SELECT request, min(ts_ns) FILTER (WHERE name = 'http_request'),
       max(json_extract(args, '$.owner')) FILTER (WHERE name = 'http_request'),
       max(json_extract(args, '$.ttft_s')) FILTER (WHERE name = 'first_token'),
       max(json_extract(args, '$.generated')) FILTER (WHERE name = 'finish'),
       max(json_extract(args, '$.latency_s')) FILTER (WHERE name = 'finish'),
       max(json_extract(args, '$.finish')) FILTER (WHERE name = 'finish'),
       max(json_extract(args, '$.status')) FILTER (WHERE name = 'reject'),
       max(json_extract(args, '$.cached_tokens')) FILTER (WHERE name = 'admit'),
       count(*) FILTER (WHERE name = 'preempt')
FROM slices WHERE run_id = ?1 AND layer = 6 AND name IN ('http_request', 'first_token', 'finish', 'reject', 'admit', 'preempt')
  AND request > ?2
GROUP BY request ORDER BY request LIMIT ?3
