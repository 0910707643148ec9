/*
 * sql.h -- the queries hipath's own readers run on a trace (the journey, a
 * Perfetto export, the web page's JSON): one file each in trace/sql/,
 * embedded at build (scripts/embed-sql.sh), named by their file:
 * TSQL_WEB_REQUESTS is trace/sql/web-requests.sql.
 */
#ifndef HIPATH_TRACE_SQL_H_API
#define HIPATH_TRACE_SQL_H_API

#include "trace/trace_sql.h"   /* made by the Makefile: enum trace_sql */
#include <sqlite3.h>
#include <stdint.h>

/* The query's text; its file's path. */
const char *trace_sql(enum trace_sql q);
const char *trace_sql_file(enum trace_sql q);
/* q prepared on db, its parameters ?1..?n bound to v[0..n) (those it has);
 * NULL when it cannot be prepared (sqlite3_errmsg(db) says why). */
sqlite3_stmt *trace_sql_prep(sqlite3 *db, enum trace_sql q, int n, const int64_t *v);
#define TSQL_PREP(db, q, ...) \
    trace_sql_prep(db, q, (int)(sizeof (int64_t[]){ __VA_ARGS__ } / sizeof(int64_t)), (int64_t[]){ __VA_ARGS__ })
/* The first column of its first row, as a whole number; def when there is none. */
int64_t trace_sql_scalar(sqlite3 *db, enum trace_sql q, int n, const int64_t *v, int64_t def);

#endif
