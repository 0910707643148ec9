/*
 * export.h -- a window of a run, from the SQLite trace to a Perfetto file.
 */
#ifndef HIPATH_EXPORT_H
#define HIPATH_EXPORT_H

#include <stdint.h>

/* Every slice of run `run` in db that overlaps [t0, t1] (trace ns), the
 * flows between them, the counters and the named tracks, written to
 * out_path as a .pftrace by trace_perfetto.c. Thread names are not in the
 * database, so a thread's own tracks are named by layer and thread index.
 * *events: how many were written. 0, or -1 with a one-line reason. */
int trace_export_perfetto(const char *db, int64_t run, int64_t t0, int64_t t1, const char *out_path,
                          int64_t *events, char *err, int errlen);

#endif
