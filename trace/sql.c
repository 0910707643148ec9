/* sql.c -- the trace's readers' queries (sql.h, trace/sql/). */
#define TRACE_SQL_TEXT
#include "trace/sql.h"
#include <stddef.h>

const char *trace_sql(enum trace_sql q) { return TRACE_SQL[q].text; }
const char *trace_sql_file(enum trace_sql q) { return TRACE_SQL[q].file; }

sqlite3_stmt *trace_sql_prep(sqlite3 *db, enum trace_sql q, int n, const int64_t *v) {
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(db, TRACE_SQL[q].text, -1, &st, NULL) != SQLITE_OK) return NULL;
    for (int i = 0; i < n && i < sqlite3_bind_parameter_count(st); i++) sqlite3_bind_int64(st, i + 1, v[i]);
    return st;
}

int64_t trace_sql_scalar(sqlite3 *db, enum trace_sql q, int n, const int64_t *v, int64_t def) {
    sqlite3_stmt *st = trace_sql_prep(db, q, n, v);
    int64_t x = st && sqlite3_step(st) == SQLITE_ROW && sqlite3_column_type(st, 0) != SQLITE_NULL ? sqlite3_column_int64(st, 0) : def;
    sqlite3_finalize(st);
    return x;
}
