/* db_index.h -- a trace database's indexes, made now rather than at close. */
#ifndef HIPATH_DB_INDEX_H
#define HIPATH_DB_INDEX_H

/* The schema's indexes and those a reader of time windows and flows needs
 * (slices by time, flows by either end), if missing. 0, or -1 with a reason. */
int trace_db_index(const char *path, char *err, int errlen);

#endif
