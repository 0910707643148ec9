-- The engine's steps (layer 6's "step" slices), oldest first, after slice
-- ?2: id, ts_ns, dur_ns, step, tokens, n_prefill, n_decode, kv_blocks_used,
-- prefill_tokens, decode_tokens, requests (the ids in it), chunks (its
-- prefills' pieces, {"req", "from", "to", "of"}), each a JSON array as text.
-- ?1: run, ?3: how many.
SELECT id, ts_ns, coalesce(dur_ns, 0), step, json_extract(args, '$.tokens'), json_extract(args, '$.n_prefill'),
       json_extract(args, '$.n_decode'), json_extract(args, '$.kv_blocks_used'), json_extract(args, '$.prefill_tokens'),
       json_extract(args, '$.decode_tokens'), json_extract(args, '$.requests'), json_extract(args, '$.chunks')
FROM slices WHERE run_id = ?1 AND layer = 6 AND name = 'step' AND id > ?2 ORDER BY id LIMIT ?3
