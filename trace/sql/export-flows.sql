-- The arrows whose both ends overlap the window [?2, ?3]: flow id, from, to. ?1: run.
SELECT f.flow_id, f.from_slice, f.to_slice FROM flows f
JOIN slices a ON a.id = f.from_slice JOIN slices b ON b.id = f.to_slice
WHERE f.run_id = ?1 AND a.ts_ns <= ?3 AND a.ts_ns + coalesce(a.dur_ns, 0) >= ?2
  AND b.ts_ns <= ?3 AND b.ts_ns + coalesce(b.dur_ns, 0) >= ?2
