/*
 * cap.c -- the server's trace is kept under a size (--trace-cap-mb), so a
 * day of a workshop cannot fill the disk: every CHECK_S seconds, when the
 * pages in use pass the cap, the oldest quarter of the events (slices,
 * their arrows, counters: by insertion, so older runs go first) is deleted
 * in one transaction, and SQLite reuses the freed pages. The file then
 * stays near the cap: at most what CHECK_S seconds of serving add above it.
 */
#include "web/server/web_int.h"
#include "trace/db_error.h"
#include <stdio.h>
#include <time.h>

#define CHECK_S 2

static int64_t one(sqlite3 *db, const char *sql) {
    sqlite3_stmt *st;
    int64_t v = 0;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW) v = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    return v;
}

/* The oldest quarter of one table's rows, and the arrows of deleted slices. */
static const char TRIM[] =
    "BEGIN IMMEDIATE;"
    "CREATE TEMP TABLE IF NOT EXISTS cut(slices INTEGER, counters INTEGER);"
    "DELETE FROM temp.cut;"
    "INSERT INTO temp.cut VALUES ((SELECT id FROM slices ORDER BY id LIMIT 1 OFFSET (SELECT count(*) / 4 FROM slices)),"
    "  (SELECT id FROM counters ORDER BY id LIMIT 1 OFFSET (SELECT count(*) / 4 FROM counters)));"
    "DELETE FROM flows WHERE from_slice < (SELECT slices FROM temp.cut) OR to_slice < (SELECT slices FROM temp.cut);"
    "DELETE FROM slices WHERE id < (SELECT slices FROM temp.cut);"
    "DELETE FROM counters WHERE id < (SELECT counters FROM temp.cut);"
    "COMMIT;";

static int64_t used(sqlite3 *db) {
    return (one(db, "PRAGMA page_count") - one(db, "PRAGMA freelist_count")) * one(db, "PRAGMA page_size");
}

/* A quarter at a time until the pages in use are under the cap again. */
static void trim(web *w) {
    sqlite3 *db = NULL;
    if (sqlite3_open_v2(w->db, &db, SQLITE_OPEN_READWRITE, NULL) != SQLITE_OK) { sqlite3_close(db); return; }
    sqlite3_busy_timeout(db, 30000);
    int64_t before = used(db), cap = (int64_t)(w->cap_mb * 1048576);
    for (int round = 0; round < 16 && used(db) > cap; round++) {
        char why[256];
        int rc = sqlite3_exec(db, TRIM, NULL, NULL, NULL);
        if (rc != SQLITE_OK) fprintf(stderr, "hipath: trace cap: %s\n", trace_db_why(db, why, sizeof why));
        if (rc != SQLITE_OK) sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
        if (rc != SQLITE_OK) break;
        if (!round) fprintf(stderr, "hipath: the trace passed %g MiB (%.3g MB in use): its oldest events are being deleted\n",
                            w->cap_mb, before / 1e6);
    }
    /* The WAL back to nothing, once, waiting 1 s at most: under a writer
     * that never pauses a TRUNCATE checkpoint waits out the whole busy
     * timeout, and one after every round held this thread for minutes
     * while the trace grew (60 students on an analytic 8B: 1.6 GB in use
     * against a 256 MiB cap). If it cannot, the writer's own checkpoints
     * reuse the WAL. */
    if (used(db) < before) {
        sqlite3_busy_timeout(db, 1000);
        sqlite3_exec(db, "PRAGMA wal_checkpoint(TRUNCATE)", NULL, NULL, NULL);
    }
    sqlite3_close(db);
}

static void *capper(void *arg) {
    web *w = arg;
    pthread_mutex_lock(&w->cap_mu);
    while (!w->stopping) {
        struct timespec t;
        clock_gettime(CLOCK_REALTIME, &t);
        t.tv_sec += CHECK_S;
        pthread_cond_timedwait(&w->cap_cv, &w->cap_mu, &t);
        if (w->stopping) break;
        pthread_mutex_unlock(&w->cap_mu);
        trim(w);
        pthread_mutex_lock(&w->cap_mu);
    }
    pthread_mutex_unlock(&w->cap_mu);
    return NULL;
}

int web_cap_start(web *w) {
    pthread_mutex_init(&w->cap_mu, NULL);
    pthread_cond_init(&w->cap_cv, NULL);
    if (pthread_create(&w->capper, NULL, capper, w)) return -1;
    w->capping = 1;
    return 0;
}

void web_cap_stop(web *w) {
    if (!w->capping) return;
    pthread_mutex_lock(&w->cap_mu);
    w->stopping = 1;
    pthread_cond_signal(&w->cap_cv);
    pthread_mutex_unlock(&w->cap_mu);
    pthread_join(w->capper, NULL);
    w->capping = 0;
}
