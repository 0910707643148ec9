/* db_error.c -- a SQLite error as a user should read it. */
#include "trace/db_error.h"
#include <errno.h>
#include <stdio.h>
#include <string.h>

const char *trace_db_why(sqlite3 *db, char *buf, size_t len) {
    int rc = sqlite3_extended_errcode(db) & 0xff;
    /* SQLite keeps the errno of its last I/O error until the next one: only an I/O error's is this error's */
    int e = rc == SQLITE_IOERR || rc == SQLITE_CANTOPEN ? sqlite3_system_errno(db) : 0;
    const char *msg = sqlite3_errmsg(db), *sys = e ? strerror(e) : "";
    if (rc == SQLITE_FULL || e == ENOSPC) snprintf(buf, len, "disk full (%s%s%s)", msg, e ? ": " : "", sys);
    else snprintf(buf, len, "%s%s%s%s", msg, e ? " (" : "", sys, e ? ")" : "");
    return buf;
}
