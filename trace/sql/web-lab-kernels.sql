-- A lab's kernels per run, the roofline's points: run_id, device, model,
-- name, clock, n, total_ns, flops, bytes. ?1: how many.
SELECT k.run_id, r.device, r.model, k.name, k.clock, k.n, k.total_ns, k.flops, k.bytes
FROM v_kernel_time k JOIN runs r ON r.id = k.run_id
WHERE k.layer = 1 AND k.flops IS NOT NULL AND k.bytes > 0 ORDER BY k.run_id, k.total_ns DESC LIMIT ?1
