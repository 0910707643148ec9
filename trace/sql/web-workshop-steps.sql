-- The engine's steps (layer 6's "step" slices), oldest first, after slice
-- ?2: id, ts_ns, dur_ns, step, tokens, n_prefill, n_decode, kv_blocks_used,
-- requests (a JSON array as text). ?1: run, ?3: how many.
SELECT id, ts_ns, coalesce(dur_ns, 0), step, json_extract(args, '$.tokens'), json_extract(args, '$.n_prefill'),
       json_extract(args, '$.n_decode'), json_extract(args, '$.kv_blocks_used'), json_extract(args, '$.requests')
FROM slices WHERE run_id = ?1 AND layer = 6 AND name = 'step' AND id > ?2 ORDER BY id LIMIT ?3
