/*
 * db_index.c -- the indexes a reader needs while the trace is still being
 * written (the web front end reads the server's own trace as it serves).
 * A new file otherwise gets its indexes only when its run closes
 * (trace_schema.c): cheaper for a run that is measured, too late for a
 * server that is read while it runs.
 */
#include "trace/db_index.h"
#include "trace/db_error.h"
#include "trace/trace_sink.h"
#include <sqlite3.h>
#include <stdio.h>

/* A window of time, and the arrows from and to a slice. */
static const char reader_index_sql[] =
"CREATE INDEX IF NOT EXISTS slices_run_ts ON slices(run_id, ts_ns);\n"
"CREATE INDEX IF NOT EXISTS flows_from ON flows(run_id, from_slice);\n"
"CREATE INDEX IF NOT EXISTS flows_to ON flows(run_id, to_slice);\n";

int trace_db_index(const char *path, char *err, int errlen) {
    sqlite3 *db = NULL;
    char why[256];
    int rc = sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE, NULL);
    if (rc == SQLITE_OK) sqlite3_busy_timeout(db, 30000);
    if (rc == SQLITE_OK) rc = sqlite3_exec(db, trace_index_sql, NULL, NULL, NULL);
    if (rc == SQLITE_OK) rc = sqlite3_exec(db, reader_index_sql, NULL, NULL, NULL);
    if (rc != SQLITE_OK) snprintf(err, errlen, "trace db %s: indexes: %s", path, trace_db_why(db, why, sizeof why));
    sqlite3_close(db);
    return rc == SQLITE_OK ? 0 : -1;
}
