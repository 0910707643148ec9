-- Whose an event is, and when. ?1: run, ?2: the event (slice id).
SELECT request, ts_ns FROM slices WHERE run_id = ?1 AND id = ?2
