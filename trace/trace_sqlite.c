/*
 * trace_sqlite.c -- the SQLite sink. One database holds many runs.
 *
 * Each flush is one transaction of prepared statements. WAL mode and a busy
 * timeout let several processes append to one database at once; a killed
 * process leaves every committed flush intact. A database of another schema
 * version is refused before anything is written to it.
 */
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "trace/trace_sink.h"

enum { ST_SLICE, ST_END, ST_FLOW_OUT, ST_FLOW_IN, ST_COUNTER, ST_TRACK, NST };
static const char *st_sql[NST] = {
    [ST_SLICE] = "INSERT INTO slices(run_id, ts_ns, dur_ns, layer, direction, name, request,"
                 " step, clock, track, depth, kind, thread) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)",
    [ST_END] = "UPDATE slices SET dur_ns = ?1 - ts_ns WHERE id = ?2",
    [ST_FLOW_OUT] = "INSERT INTO flows(run_id, flow_id, from_slice) VALUES (?,?,?)"
                    " ON CONFLICT(run_id, flow_id) DO UPDATE SET from_slice = excluded.from_slice",
    [ST_FLOW_IN] = "INSERT INTO flows(run_id, flow_id, to_slice) VALUES (?,?,?)"
                   " ON CONFLICT(run_id, flow_id) DO UPDATE SET to_slice = excluded.to_slice",
    [ST_COUNTER] = "INSERT INTO counters(run_id, ts_ns, layer, track, name, value, request, step,"
                   " clock) VALUES (?,?,?,?,?,?,?,?,?)",
    [ST_TRACK] = "INSERT OR REPLACE INTO tracks(run_id, layer, track, name) VALUES (?,?,?,?)",
};

struct tsql {
    sqlite3 *db;
    sqlite3_stmt *st[NST];
    sqlite3_stmt *args[TRACE_MAX_ARGS];  /* [n-1] inserts n args; made on first use */
    int64_t run_id;
    int failed;          /* a statement of this transaction failed */
    char why[256];
};

static int fail(tsql *s, const char *what, char *err, int errlen)
{
    if (err && errlen > 0) snprintf(err, errlen, "%s: %s", what, sqlite3_errmsg(s->db));
    return -1;
}

static int exec(tsql *s, const char *sql, char *err, int errlen)
{
    return sqlite3_exec(s->db, sql, NULL, NULL, NULL) == SQLITE_OK ? 0 : fail(s, sql, err, errlen);
}

/* First column of the first row as an integer, or -1 with err set. */
static int64_t query_int(tsql *s, const char *sql, char *err, int errlen)
{
    sqlite3_stmt *st;
    int64_t v = -1;
    if (sqlite3_prepare_v2(s->db, sql, -1, &st, NULL) != SQLITE_OK) return fail(s, sql, err, errlen);
    if (sqlite3_step(st) == SQLITE_ROW) v = sqlite3_column_int64(st, 0);
    else fail(s, sql, err, errlen);
    sqlite3_finalize(st);
    return v;
}

/* Two processes opening one new file race to switch it to WAL, and SQLite
 * answers BUSY there without calling the busy handler: wait and retry. */
static int set_wal(tsql *s, char *err, int errlen)
{
    for (int i = 0; i < 3000; i++) {
        if (query_int(s, "PRAGMA journal_mode=WAL", err, errlen) >= 0) return 0;
        int rc = sqlite3_errcode(s->db) & 0xff;
        if (rc != SQLITE_BUSY && rc != SQLITE_LOCKED) return -1;
        usleep(10000);
    }
    return -1;
}

/* 0: the schema is ours (or the file is empty: *fresh = 1); -1: refuse. */
static int check_schema(tsql *s, const char *path, int *fresh, char *err, int errlen)
{
    int64_t version = query_int(s, "PRAGMA user_version", err, errlen);
    int64_t tables = version < 0 ? -1 : query_int(s, "SELECT count(*) FROM sqlite_master", err, errlen);
    if (version < 0 || tables < 0) return -1;
    *fresh = version == 0 && tables == 0;
    if (*fresh || version == TRACE_SCHEMA_VERSION) return 0;
    if (version == 0)
        snprintf(err, errlen, "%s: not a hipath trace database (tables but no schema version);"
                 " refusing to touch it", path);
    else
        snprintf(err, errlen, "%s: trace schema version %lld, this hipath writes version %d;"
                 " use another file (it was not modified)", path, (long long)version,
                 TRACE_SCHEMA_VERSION);
    return -1;
}

static void git_rev(char *out, size_t n)
{
#ifdef HIPATH_GIT_REV
    snprintf(out, n, "%s", HIPATH_GIT_REV);
#else
    snprintf(out, n, "unknown");
    FILE *f = popen("git rev-parse --short HEAD 2>/dev/null", "r");
    if (!f) return;
    char line[64];
    if (fgets(line, sizeof line, f) && line[0] != '\n') {
        line[strcspn(line, "\n")] = 0;
        snprintf(out, n, "%s", line);
    }
    pclose(f);
#endif
}

static int insert_run(tsql *s, const trace_run_info *info, uint64_t t0_unix, char *err, int errlen)
{
    char rev[64];
    git_rev(rev, sizeof rev);
    sqlite3_stmt *st;
    const char *sql = "INSERT INTO runs(command, model, device, clock_domain, started_at,"
                      " started_unix_ns, pid, hipath_git_rev) VALUES (?1,?2,?3,?4,"
                      " strftime('%Y-%m-%dT%H:%M:%fZ', ?5 / 1e9, 'unixepoch'), ?5, ?6, ?7)";
    if (sqlite3_prepare_v2(s->db, sql, -1, &st, NULL) != SQLITE_OK) return fail(s, "runs", err, errlen);
    sqlite3_bind_text(st, 1, info->command, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(st, 2, info->model, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(st, 3, info->device, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(st, 4, info->clock_domain, -1, SQLITE_TRANSIENT);
    sqlite3_bind_int64(st, 5, (int64_t)t0_unix);
    sqlite3_bind_int64(st, 6, getpid());
    sqlite3_bind_text(st, 7, rev, -1, SQLITE_TRANSIENT);
    int rc = sqlite3_step(st) == SQLITE_DONE ? 0 : fail(s, "runs", err, errlen);
    sqlite3_finalize(st);
    s->run_id = sqlite3_last_insert_rowid(s->db);
    return rc;
}

/* Schema (if the file is new) and the run row, in one write transaction so
 * that two processes starting on one new file do not both create tables. */
static int start_run(tsql *s, const char *path, const trace_run_info *info, uint64_t t0_unix,
                     char *err, int errlen)
{
    int fresh;
    if (exec(s, "BEGIN IMMEDIATE", err, errlen)) return -1;
    int rc = check_schema(s, path, &fresh, err, errlen);
    if (!rc && fresh) {
        char set_version[64];
        snprintf(set_version, sizeof set_version, "PRAGMA user_version = %d", TRACE_SCHEMA_VERSION);
        rc = exec(s, trace_schema_sql, err, errlen) || exec(s, set_version, err, errlen) ? -1 : 0;
    }
    if (!rc && !fresh) rc = exec(s, trace_index_sql, err, errlen);
    if (!rc) rc = exec(s, trace_views_sql, err, errlen);   /* additive: no version bump */
    if (!rc) rc = insert_run(s, info, t0_unix, err, errlen);
    if (!rc) rc = exec(s, "COMMIT", err, errlen);
    if (rc) sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
    return rc;
}

tsql *tsql_open(const char *path, const trace_run_info *info, uint64_t t0_unix_ns,
                char *err, int errlen)
{
    tsql *s = calloc(1, sizeof *s);
    if (!s) { snprintf(err, errlen, "%s: out of memory", path); return NULL; }
    int fresh;
    /* NOMUTEX: only the holder of the sink lock uses the connection */
    if (sqlite3_open_v2(path, &s->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX,
                        NULL) != SQLITE_OK) {
        fail(s, path, err, errlen);
        goto bad;
    }
    sqlite3_busy_timeout(s->db, 30000);
    /* check before WAL: switching the journal mode writes to the file */
    if (check_schema(s, path, &fresh, err, errlen)) goto bad;
    if (exec(s, "PRAGMA synchronous=NORMAL", err, errlen) ||
        set_wal(s, err, errlen) ||
        exec(s, "PRAGMA cache_size=-65536", err, errlen) ||
        start_run(s, path, info, t0_unix_ns, err, errlen))
        goto bad;
    for (int i = 0; i < NST; i++)
        if (sqlite3_prepare_v3(s->db, st_sql[i], -1, SQLITE_PREPARE_PERSISTENT, &s->st[i], NULL) != SQLITE_OK) {
            fail(s, st_sql[i], err, errlen);
            goto bad;
        }
    return s;
bad:
    tsql_close(s, NULL, 0);
    return NULL;
}

int64_t tsql_run_id(const tsql *s) { return s->run_id; }

static int step(tsql *s, sqlite3_stmt *st)
{
    int rc = sqlite3_step(st);
    sqlite3_reset(st);
    if (rc == SQLITE_DONE) return 0;
    if (!s->failed) snprintf(s->why, sizeof s->why, "%s", sqlite3_errmsg(s->db));
    s->failed = 1;
    return -1;
}

static void bind_opt(sqlite3_stmt *st, int i, int64_t v)
{
    if (v < 0) sqlite3_bind_null(st, i);
    else sqlite3_bind_int64(st, i, v);
}

/* If BEGIN fails, the events are refused rather than autocommitted one by one. */
int tsql_begin(tsql *s, char *err, int errlen)
{
    s->failed = exec(s, "BEGIN IMMEDIATE", err, errlen) != 0;
    return s->failed ? -1 : 0;
}

static void insert_counter(tsql *s, const trace_event *e)
{
    sqlite3_stmt *st = s->st[ST_COUNTER];
    sqlite3_bind_int64(st, 1, s->run_id);
    sqlite3_bind_int64(st, 2, (int64_t)e->ts);
    sqlite3_bind_int(st, 3, e->w.layer);
    sqlite3_bind_int(st, 4, e->w.track);
    sqlite3_bind_text(st, 5, e->name, -1, SQLITE_STATIC);
    sqlite3_bind_double(st, 6, e->value);
    bind_opt(st, 7, e->w.req);
    bind_opt(st, 8, e->w.step);
    sqlite3_bind_text(st, 9, trace_clock_name(e->w.clock), -1, SQLITE_STATIC);
    step(s, st);
}

/* Row id of the new slice, or -1. */
static int64_t insert_slice(tsql *s, const trace_event *e)
{
    sqlite3_stmt *st = s->st[ST_SLICE];
    sqlite3_bind_int64(st, 1, s->run_id);
    sqlite3_bind_int64(st, 2, (int64_t)e->ts);
    if (e->kind == EV_BEGIN) sqlite3_bind_null(st, 3);
    else sqlite3_bind_int64(st, 3, e->kind == EV_SLICE ? (int64_t)e->dur : 0);
    sqlite3_bind_int(st, 4, e->w.layer);
    sqlite3_bind_text(st, 5, trace_dir_name(e->w.dir), -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 6, e->name, -1, SQLITE_STATIC);
    bind_opt(st, 7, e->w.req);
    bind_opt(st, 8, e->w.step);
    sqlite3_bind_text(st, 9, trace_clock_name(e->w.clock), -1, SQLITE_STATIC);
    sqlite3_bind_int(st, 10, e->w.track);
    sqlite3_bind_int(st, 11, e->depth);
    sqlite3_bind_text(st, 12, e->kind == EV_INSTANT ? "instant" : "slice", -1, SQLITE_STATIC);
    sqlite3_bind_int(st, 13, e->thread);
    return step(s, st) ? -1 : sqlite3_last_insert_rowid(s->db);
}

static void insert_flow(tsql *s, int which, uint64_t id, int64_t slice)
{
    sqlite3_stmt *st = s->st[which];
    sqlite3_bind_int64(st, 1, s->run_id);
    sqlite3_bind_int64(st, 2, (int64_t)id);
    sqlite3_bind_int64(st, 3, slice);
    step(s, st);
}

/* A track name that cannot be stored is reported, not a reason to lose
 * the events around it. */
static void name_track(tsql *s, const trace_event *e)
{
    sqlite3_stmt *st = s->st[ST_TRACK];
    sqlite3_bind_int64(st, 1, s->run_id);
    sqlite3_bind_int(st, 2, e->w.layer);
    sqlite3_bind_int(st, 3, e->w.track);
    sqlite3_bind_text(st, 4, e->name, -1, SQLITE_STATIC);
    if (sqlite3_step(st) != SQLITE_DONE) fprintf(stderr, "trace db: track name: %s\n", sqlite3_errmsg(s->db));
    sqlite3_reset(st);
}

/* All args of an event in one statement: per row, a statement of its own
 * costs more than the row. */
static void insert_args(tsql *s, const trace_event *e, int64_t slice)
{
    sqlite3_stmt **st = &s->args[e->nargs - 1];
    if (!*st) {
        char sql[64 + 16 * TRACE_MAX_ARGS] = "INSERT INTO args(slice_id, key, value) VALUES ";
        for (int i = 0, n = strlen(sql); i < e->nargs; i++)
            n += snprintf(sql + n, sizeof sql - n, "%s(?1,?%d,?%d)", i ? "," : "", 2 + 2 * i, 3 + 2 * i);
        if (sqlite3_prepare_v3(s->db, sql, -1, SQLITE_PREPARE_PERSISTENT, st, NULL) != SQLITE_OK) {
            snprintf(s->why, sizeof s->why, "%s", sqlite3_errmsg(s->db));
            s->failed = 1;
            return;
        }
    }
    sqlite3_bind_int64(*st, 1, slice);
    for (int i = 0; i < e->nargs; i++) {
        const trace_arg *a = &e->args[i];
        sqlite3_bind_text(*st, 2 + 2 * i, a->key ? a->key : "", -1, SQLITE_STATIC);
        if (a->type == ARG_INT) sqlite3_bind_int64(*st, 3 + 2 * i, a->i);
        else if (a->type == ARG_DOUBLE) sqlite3_bind_double(*st, 3 + 2 * i, a->d);
        else sqlite3_bind_text(*st, 3 + 2 * i, a->s, -1, SQLITE_STATIC);
    }
    step(s, *st);
}

void tsql_event(tsql *s, const trace_event *e)
{
    if (s->failed) return;
    if (e->kind == EV_TRACK) { name_track(s, e); return; }
    if (e->kind == EV_COUNTER) { insert_counter(s, e); return; }
    int64_t slice;
    if (e->kind == EV_END) {
        slice = *e->row;
        if (slice < 0) return;  /* its begin was not stored */
        sqlite3_bind_int64(s->st[ST_END], 1, (int64_t)e->ts);
        sqlite3_bind_int64(s->st[ST_END], 2, slice);
        step(s, s->st[ST_END]);
    } else {
        if ((slice = insert_slice(s, e)) < 0) return;
        if (e->kind == EV_BEGIN) *e->row = slice;
    }
    if (e->nargs) insert_args(s, e, slice);
    for (int i = 0; i < e->nout; i++) insert_flow(s, ST_FLOW_OUT, e->out[i], slice);
    for (int i = 0; i < e->nin; i++) insert_flow(s, ST_FLOW_IN, e->in[i], slice);
}

int tsql_commit(tsql *s, char *err, int errlen)
{
    if (s->failed) {
        sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
        if (err && errlen > 0) snprintf(err, errlen, "trace db: %s (flush rolled back)", s->why);
        return -1;
    }
    if (!exec(s, "COMMIT", err, errlen)) return 0;
    sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
    return -1;
}


int tsql_close(tsql *s, char *err, int errlen)
{
    int rc = 0;
    if (s->run_id > 0) {
        char sql[128];
        snprintf(sql, sizeof sql, "UPDATE runs SET ended_at = strftime('%%Y-%%m-%%dT%%H:%%M:%%fZ','now')"
                 " WHERE id = %lld", (long long)s->run_id);
        rc = exec(s, "BEGIN IMMEDIATE", err, errlen) || exec(s, trace_index_sql, err, errlen) ||
             exec(s, sql, err, errlen) || exec(s, "COMMIT", err, errlen) ? -1 : 0;
        if (rc) sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
    }
    for (int i = 0; i < NST; i++) sqlite3_finalize(s->st[i]);
    for (int i = 0; i < TRACE_MAX_ARGS; i++) sqlite3_finalize(s->args[i]);
    sqlite3_close(s->db);
    free(s);
    return rc;
}
