-- One run as the runs table holds it. ?1: the run.
SELECT id, command, model, device, clock_domain, started_at, ended_at FROM runs WHERE id = ?1
