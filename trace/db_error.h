/* db_error.h -- why a call on a SQLite database failed, in one line. */
#ifndef HIPATH_DB_ERROR_H
#define HIPATH_DB_ERROR_H

#include <sqlite3.h>
#include <stddef.h>

/* SQLite's message for db's last error, and the system's reason when it
 * was an I/O error. A full disk reads "disk full" whichever way SQLite
 * saw it: SQLITE_FULL, or an I/O error with errno ENOSPC (growing the WAL
 * index, say), which SQLite calls a "disk I/O error". Returns buf. */
const char *trace_db_why(sqlite3 *db, char *buf, size_t len);

#endif
