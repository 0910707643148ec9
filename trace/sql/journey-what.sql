-- What each layer did to the data, one statement a row of the journey table,
-- in its order (trace/journey.c: WHAT): each reads temp.s, the request's
-- events (journey-scope.sql), and ?1, the run.
-- 8 down
SELECT 'POST ' || a.value || ' B of JSON to /v1/chat/completions' FROM s JOIN args a ON a.slice_id = s.id WHERE s.run_id = ?1 AND s.layer = 8 AND s.name = 'build' AND a.key = 'bytes';
-- 7 down
SELECT 'chat template + BPE -> ' || max(CASE a.key WHEN 'tokens' THEN a.value END) || ' ids ' || coalesce(max(CASE a.key WHEN 'ids' THEN a.value END), '') FROM s JOIN args a ON a.slice_id = s.id WHERE s.run_id = ?1 AND s.layer = 7 AND s.name = 'tokenize' AND s.request IS NOT NULL;
-- 6 down
SELECT 'queued, admitted; ' || count(*) || ' engine steps (1 prefill + ' || (count(*) - 1) || ' decode), ' || (SELECT max(a.value) FROM s t JOIN args a ON a.slice_id = t.id WHERE t.run_id = ?1 AND t.name = 'kv_alloc' AND a.key = 'seq_blocks') || ' KV block(s)' FROM s WHERE run_id = ?1 AND layer = 6 AND name = 'step';
-- 5 down
SELECT count(DISTINCT s.id) || ' forward passes; ids [' || max(CASE a.key WHEN 'tokens' THEN a.value END) || '] -> x [' || max(CASE a.key WHEN 'tokens' THEN a.value END) || ', ' || max(CASE a.key WHEN 'dim' THEN a.value END) || '] f32, weights ' || max(CASE a.key WHEN 'w_dtype' THEN a.value END) FROM s JOIN args a ON a.slice_id = s.id WHERE s.run_id = ?1 AND s.layer = 5 AND s.name = 'forward';
-- 4 down
SELECT count(DISTINCT s.id) || ' ops: ' || printf('%.3g', sum(CASE a.key WHEN 'flops' THEN a.value END) / 1e9) || ' GFLOP, ' || printf('%.3g', sum(CASE a.key WHEN 'bytes' THEN a.value END) / 1e6) || ' MB moved' FROM s JOIN args a ON a.slice_id = s.id WHERE s.run_id = ?1 AND s.layer = 4 AND s.direction = 'down';
-- 3 down
SELECT count(DISTINCT s.id) || ' kernel launches, ' || sum(CASE a.key WHEN 'wavefronts' THEN a.value END) || ' wavefronts' FROM s JOIN args a ON a.slice_id = s.id WHERE s.run_id = ?1 AND s.layer = 3;
-- 2 down
SELECT count(*) || ' copies H2D, ' || printf('%.3g', coalesce(sum(a.value), 0) / 1e6) || ' MB' || coalesce((SELECT '; ' || count(*) FILTER (WHERE c.name = 'ncclAllReduce') || ' ncclAllReduce, ' || count(*) FILTER (WHERE c.name = 'gather') || ' gather (' || max(json_extract(c.args, '$.library')) || ')' FROM s c WHERE c.run_id = ?1 AND c.layer = 2 AND c.name IN ('ncclAllReduce', 'gather') HAVING count(*)), '') FROM s JOIN args a ON a.slice_id = s.id WHERE s.run_id = ?1 AND s.layer = 2 AND s.direction = 'down' AND s.kind = 'slice' AND s.step IS NOT NULL AND a.key = 'bytes' AND s.name NOT IN ('ncclAllReduce', 'gather');
-- 1 down
SELECT count(*) || ' kernels and copies on ' || coalesce(c.gpus || ' GPUs of ', '') || (SELECT device FROM runs WHERE id = ?1) || coalesce(' (' || (SELECT json_extract(args, '$.name') FROM slices WHERE run_id = ?1 AND name = 'code_object_load') || ')', '') || coalesce(', joined by ' || c.link, '') || ', ' || (CASE WHEN min(s.clock) = 'modeled' THEN 'modeled' ELSE 'measured' END) || coalesce('; ' || (c.n / c.gpus) || ' allReduce (' || printf('%.3g', c.bytes / c.gpus / 1e6) || ' MB, ' || printf('%.3g', c.ns / c.gpus / 1e6) || ' ms)', '') FROM s, (SELECT max(json_extract(args, '$.gpus')) AS gpus, max(json_extract(args, '$.link')) AS link, count(*) FILTER (WHERE name = 'allReduce') AS n, sum(json_extract(args, '$.bytes')) FILTER (WHERE name = 'allReduce') AS bytes, sum(dur_ns) FILTER (WHERE name = 'allReduce') AS ns FROM s WHERE run_id = ?1 AND layer = 1 AND name IN ('allReduce', 'gather')) c WHERE s.run_id = ?1 AND s.layer = 1;
-- 1 up
SELECT count(*) || ' copies D2H (logits), ' || printf('%.3g', coalesce(sum(a.value), 0) / 1e3) || ' kB' FROM s JOIN args a ON a.slice_id = s.id WHERE s.run_id = ?1 AND s.layer = 1 AND s.direction = 'up' AND a.key = 'bytes';
-- 2 up
SELECT count(*) || ' copies D2H, ' || printf('%.3g', coalesce(sum(a.value), 0) / 1e3) || ' kB' FROM s JOIN args a ON a.slice_id = s.id WHERE s.run_id = ?1 AND s.layer = 2 AND s.direction = 'up' AND a.key = 'bytes';
-- 4 up
SELECT count(*) || ' tokens sampled at temperature ' || printf('%g', max(CASE a.key WHEN 'temperature' THEN a.value END)) || (SELECT CASE WHEN count(*) THEN ', each replaced by the forced reply''s id (--reply)' ELSE '' END FROM s  WHERE run_id = ?1 AND name = 'teacher_forced') FROM s JOIN args a ON a.slice_id = s.id AND a.key = 'temperature' WHERE s.run_id = ?1 AND s.layer = 4 AND s.name = 'sample';
-- 7 up
SELECT count(*) || ' ids -> ' || quote(group_concat(a.value, '')) FROM (SELECT * FROM s WHERE run_id = ?1 AND layer = 7 AND direction = 'up' ORDER BY ts_ns) s JOIN args a ON a.slice_id = s.id AND a.key = 'text';
-- 6 up
SELECT count(*) || ' SSE chunks, then data: [DONE]' FROM s WHERE run_id = ?1 AND layer = 6 AND name = 'sse_chunk';
-- 8 up
SELECT 'first byte, ' || count(*) || ' deltas rendered: ' || quote(group_concat(a.value, '')) FROM (SELECT * FROM s WHERE run_id = ?1 AND layer = 8 AND name = 'token' ORDER BY ts_ns) s JOIN args a ON a.slice_id = s.id AND a.key = 'text';
