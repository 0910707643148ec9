-- A request's latency where it was measured: at the client when a client
-- recorded its side (v_request_latency), else at the server, from layer 6's
-- events. Columns: at, ttft_ns, tpot_ns, tokens, e2e_ns. ?1: run, ?2: request.
SELECT 'client', ttft_ns, tpot_ns, n_tokens, e2e_ns FROM v_request_latency WHERE run_id = ?1 AND request = ?2
UNION ALL
SELECT 'server',
       min(ts_ns) FILTER (WHERE name = 'sse_chunk') - min(ts_ns) FILTER (WHERE name = 'http_request'),
       (max(ts_ns) FILTER (WHERE name = 'sse_chunk') - min(ts_ns) FILTER (WHERE name = 'sse_chunk')) * 1.0 /
         nullif(count(*) FILTER (WHERE name = 'sse_chunk') - 1, 0),
       count(*) FILTER (WHERE name = 'sse_chunk'),
       max(ts_ns) FILTER (WHERE name = 'sse_done') - min(ts_ns) FILTER (WHERE name = 'http_request')
FROM slices WHERE run_id = ?1 AND request = ?2 AND layer = 6
LIMIT 1
