-- The scheduler's decisions of note (layer 6's instants), oldest first,
-- after slice ?2: id, ts_ns, name (preempt, resume, prefix_cache_hit),
-- request, tokens (preempt: the computed tokens it loses; resume: the
-- tokens it computes again, its cached ones aside; prefix_cache_hit: the cached tokens it skips),
-- blocks (preempt: those freed; prefix_cache_hit: those shared).
-- ?1: run, ?3: how many.
SELECT id, ts_ns, name, request,
       CASE name WHEN 'preempt' THEN json_extract(args, '$.computed_tokens') WHEN 'resume' THEN json_extract(args, '$.tokens') - json_extract(args, '$.cached_tokens')
                 ELSE json_extract(args, '$.cached_tokens') END,
       CASE name WHEN 'preempt' THEN json_extract(args, '$.blocks') WHEN 'prefix_cache_hit' THEN json_extract(args, '$.cached_blocks') END
FROM slices WHERE run_id = ?1 AND layer = 6 AND name IN ('preempt', 'resume', 'prefix_cache_hit') AND id > ?2
ORDER BY id LIMIT ?3
