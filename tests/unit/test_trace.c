/*
 * test_trace.c -- the trace subsystem, checked by reading its SQLite output
 * back with plain SQL on the raw rows (not through the code under test).
 *
 * With an argument it is instead a helper for the shell checks:
 *   test_trace perfetto OUT.pftrace   record the two-thread scenario
 *   test_trace loop DB PFTRACE        record + flush batches of 100 forever,
 *                                     printing each committed batch number
 *   test_trace write DB N             record N slices, then close
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <pthread.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "trace/perfetto_trace.pb-c.h"
#include "trace/trace.h"

#define N_BULK 60000  /* > one ring's worth, so the recording thread flushes itself */

static trace_where W(int layer, int dir, int64_t req, int track) {
    return (trace_where){ .layer = layer, .dir = dir, .req = req, .step = -1,
                          .clock = TRACE_MEASURED, .track = track };
}

/* ---- the two-thread scenario ---- */

typedef struct {
    pthread_barrier_t bar;
    uint64_t flow;
} scenario;

static void *worker(void *arg) {
    scenario *sc = arg;
    pthread_barrier_wait(&sc->bar);                   /* 1: the flow exists */
    trace_flow_in(sc->flow);
    trace_begin(W(L_SCHEDULER, DIR_DOWN, 7, 0), "schedule", 0, NULL);
    trace_end(W(L_SCHEDULER, DIR_DOWN, 7, 0), 0, NULL);
    pthread_barrier_wait(&sc->bar);                   /* 2: a_outer begun */
    trace_begin(W(L_OPS, DIR_DOWN, 7, 0), "b_outer", 0, NULL);
    pthread_barrier_wait(&sc->bar);                   /* 3 */
    pthread_barrier_wait(&sc->bar);                   /* 4: a_inner begun */
    trace_end(W(L_OPS, DIR_DOWN, 7, 0), 0, NULL);
    for (int i = 0; i < N_BULK; i++)
        trace_instant(W(L_SCHEDULER, DIR_NONE, -1, 0), "tick", 2,
                      (trace_arg[]){ TA_INT("i", i), TA_STR("pad", "0123456789abcdef") });
    return NULL;
}

static int record_scenario(void) {
    int rc = 0;
    scenario sc;
    pthread_t tid;
    pthread_barrier_init(&sc.bar, NULL, 2);
    pthread_create(&tid, NULL, worker, &sc);

    trace_track_name(L_GPU, 1, "stream 1");
    trace_begin(W(L_CLIENT, DIR_DOWN, 7, 0), "request", 1, (trace_arg[]){ TA_STR("prompt", "Hi") });
    sc.flow = trace_flow_next();
    trace_flow_out(sc.flow);
    trace_begin(W(L_TOKENIZER, DIR_DOWN, 7, 0), "tokenize", 0, NULL);
    trace_end(W(L_TOKENIZER, DIR_DOWN, 7, 0), 1, (trace_arg[]){ TA_INT("n_tokens", 3) });
    pthread_barrier_wait(&sc.bar);                    /* 1 */
    trace_begin(W(L_OPS, DIR_DOWN, 7, 0), "a_outer", 0, NULL);
    pthread_barrier_wait(&sc.bar);                    /* 2 */
    pthread_barrier_wait(&sc.bar);                    /* 3: b_outer begun */
    trace_begin(W(L_OPS, DIR_DOWN, 7, 0), "a_inner", 0, NULL);
    pthread_barrier_wait(&sc.bar);                    /* 4 */
    for (int i = 0; i < 3; i++) rc |= trace_flush(NULL, 0);  /* while the worker records */
    trace_end(W(L_OPS, DIR_DOWN, 7, 0), 0, NULL);
    trace_end(W(L_OPS, DIR_DOWN, 7, 0), 0, NULL);

    trace_where gpu = W(L_GPU, DIR_NONE, 7, 1);
    gpu.clock = TRACE_MODELED;
    uint64_t t = trace_now_ns();  /* modeled times, after everything so far */
    trace_slice(W(L_KERNELS, DIR_DOWN, 7, 0), "gemm", t + 1000, 100, 2,
                (trace_arg[]){ TA_INT("flops", 2000), TA_INT("bytes", 400) });
    trace_slice(W(L_KERNELS, DIR_DOWN, 7, 0), "gemm", t + 2000, 300, 2,
                (trace_arg[]){ TA_INT("flops", 6000), TA_INT("bytes", 1200) });
    trace_slice(gpu, "gemm", t + 1000, 100, 0, NULL);
    trace_slice(W(L_RUNTIME, DIR_UP, 7, 0), "hipMemcpyDtoH", t + 1200, 50, 0, NULL);
    char label[16] = "before";
    trace_instant(W(L_TENSOR, DIR_UP, 7, 0), "tensor", 3,
                  (trace_arg[]){ TA_INT("answer", 42), TA_DBL("ratio", 0.5), TA_STR("label", label) });
    strcpy(label, "after!");
    trace_counter(gpu, "mem_bytes", 100.0, 1000);
    trace_counter(gpu, "mem_bytes", 200.0, 2000);
    trace_counter_series(gpu, "cu_busy", 3, (uint64_t[]){ 3000, 3100, 3500 }, (double[]){ 96, 12, 0 });
    trace_slice(W(L_KERNELS, DIR_DOWN, 7, 0), "launch", t + 5000, 250, 2,
                (trace_arg[]){ TA_LIT("op", "gemm"), TA_LIT("none", NULL) });
    for (int k = 0; k < 3; k++)
        trace_instant(W(L_CLIENT, DIR_UP, 7, 0), "token", 1, (trace_arg[]){ TA_INT("id", k) });
    trace_end(W(L_CLIENT, DIR_DOWN, 7, 0), 0, NULL);

    pthread_join(tid, NULL);
    pthread_barrier_destroy(&sc.bar);
    return rc;
}

/* ---- reading the database back ---- */

static char dir[] = "/tmp/hipath-trace-XXXXXX";

static const char *path(const char *name) {
    static char buf[4][512];
    static int k;
    k = (k + 1) % 4;
    snprintf(buf[k], sizeof buf[k], "%s/%s", dir, name);
    return buf[k];
}

/* The first column of the one row of a query (printf-style). */
static double q(sqlite3 *db, const char *fmt, ...) {
    char sql[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(sql, sizeof sql, fmt, ap);
    va_end(ap);
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK) fail_msg("%s: %s", sql, sqlite3_errmsg(db));
    if (sqlite3_step(st) != SQLITE_ROW) fail_msg("no row: %s", sql);
    double v = sqlite3_column_type(st, 0) == SQLITE_NULL ? -1 : sqlite3_column_double(st, 0);
    sqlite3_finalize(st);
    return v;
}

static const char *qs(sqlite3 *db, const char *sql) {
    static char out[256];
    sqlite3_stmt *st;
    assert_int_equal(sqlite3_prepare_v2(db, sql, -1, &st, NULL), SQLITE_OK);
    assert_int_equal(sqlite3_step(st), SQLITE_ROW);
    const unsigned char *s = sqlite3_column_text(st, 0);
    snprintf(out, sizeof out, "%s", s ? (const char *)s : "(null)");
    sqlite3_finalize(st);
    return out;
}

static trace_run_info info(const char *db, const char *pf) {
    return (trace_run_info){ .db_path = db, .perfetto_path = pf, .command = "test_trace",
                             .model = "none", .device = "cpu", .clock_domain = "host-monotonic" };
}

static void test_two_threads(void **state) {
    (void)state;
    char err[256] = "";
    trace_run_info ri = info(path("t.db"), path("t.pftrace"));
    assert_int_equal(trace_open(&ri, err, sizeof err), 0);
    assert_true(trace_enabled());
    int64_t run = trace_run_id();
    assert_true(run > 0);
    assert_int_equal(record_scenario(), 0);
    trace_stats s = trace_get_stats();
    assert_int_equal(trace_close(err, sizeof err), 0);
    assert_int_equal(s.dropped, 0);
    assert_true(s.events >= N_BULK + 20);

    sqlite3 *db;
    assert_int_equal(sqlite3_open(path("t.db"), &db), SQLITE_OK);
    assert_string_equal(qs(db, "PRAGMA integrity_check"), "ok");
    assert_string_equal(qs(db, "PRAGMA journal_mode"), "wal");
    assert_int_equal(q(db, "PRAGMA user_version"), 2);
    assert_int_equal(q(db, "SELECT count(*) FROM layers"), 8);
    assert_string_equal(qs(db, "SELECT name FROM layers WHERE id = 6"), "scheduler");
    /* runs */
    assert_string_equal(qs(db, "SELECT command || '|' || model || '|' || device || '|' || clock_domain"
                               " FROM runs"), "test_trace|none|cpu|host-monotonic");
    assert_true(q(db, "SELECT ended_at IS NOT NULL AND length(hipath_git_rev) > 0 FROM runs") == 1);
    /* no loss, no duplicates from the worker's self-flushes and the concurrent flushes */
    assert_int_equal(q(db, "SELECT count(*) FROM slices WHERE name = 'tick' AND run_id = %lld", (long long)run), N_BULK);
    assert_int_equal(q(db, "SELECT sum(a.value) FROM slices s JOIN args a ON a.slice_id = s.id"
                           " WHERE s.name = 'tick' AND a.key = 'i'"), (double)N_BULK * (N_BULK - 1) / 2);
    /* balanced: every begun slice ended */
    assert_int_equal(q(db, "SELECT count(*) FROM slices WHERE dur_ns IS NULL"), 0);
    /* nesting per (thread, layer, track) */
    assert_int_equal(q(db, "SELECT depth FROM slices WHERE name = 'a_outer'"), 0);
    assert_int_equal(q(db, "SELECT depth FROM slices WHERE name = 'a_inner'"), 1);
    assert_int_equal(q(db, "SELECT depth FROM slices WHERE name = 'b_outer'"), 0);
    assert_int_equal(q(db, "SELECT depth FROM slices WHERE name = 'token' LIMIT 1"), 1);
    assert_int_equal(q(db, "SELECT count(DISTINCT thread) FROM slices WHERE name IN ('a_outer','b_outer')"), 2);
    assert_int_equal(q(db, "SELECT i.ts_ns >= o.ts_ns AND i.ts_ns + i.dur_ns <= o.ts_ns + o.dur_ns"
                           " FROM slices i, slices o WHERE i.name = 'a_inner' AND o.name = 'a_outer'"), 1);
    /* args: types and copied strings; args given at end land on the slice */
    assert_string_equal(qs(db, "SELECT group_concat(key || '=' || typeof(value) || ':' || value, ',')"
                               " FROM (SELECT a.* FROM args a JOIN slices s ON s.id = a.slice_id"
                               " WHERE s.name = 'tensor' ORDER BY a.key)"),
                        "answer=integer:42,label=text:before,ratio=real:0.5");
    assert_int_equal(q(db, "SELECT a.value FROM args a JOIN slices s ON s.id = a.slice_id"
                           " WHERE s.name = 'tokenize' AND a.key = 'n_tokens'"), 3);
    /* the flow goes from tokenize (main thread) to schedule (worker) */
    assert_int_equal(q(db, "SELECT count(*) FROM flows f JOIN slices a ON a.id = f.from_slice"
                           " JOIN slices b ON b.id = f.to_slice"
                           " WHERE a.name = 'tokenize' AND b.name = 'schedule'"), 1);
    /* counters, tracks, direction, clock */
    assert_string_equal(qs(db, "SELECT group_concat(ts_ns || ':' || value || ':' || clock, ',')"
                               " FROM counters WHERE name = 'mem_bytes'"), "1000:100.0:modeled,2000:200.0:modeled");
    assert_string_equal(qs(db, "SELECT group_concat(ts_ns || ':' || value, ',') FROM counters WHERE name = 'cu_busy'"),
                        "3000:96.0,3100:12.0,3500:0.0");
    assert_string_equal(qs(db, "SELECT s.dur_ns || ' ' || a.value FROM slices s JOIN args a ON a.slice_id = s.id"
                               " WHERE s.name = 'launch' AND a.key = 'op'"), "250 gemm");
    assert_string_equal(qs(db, "SELECT '[' || a.value || ']' FROM slices s JOIN args a ON a.slice_id = s.id"
                               " WHERE s.name = 'launch' AND a.key = 'none'"), "[]");
    assert_string_equal(qs(db, "SELECT name FROM tracks WHERE layer = 1 AND track = 1"), "stream 1");
    assert_string_equal(qs(db, "SELECT direction || clock || track FROM slices WHERE layer = 1"), "nonemodeled1");
    assert_int_equal(q(db, "SELECT count(*) FROM slices WHERE name = 'tick' AND request IS NULL"), N_BULK);

    /* views, against sums over the raw rows / hand-computed numbers */
    assert_string_equal(qs(db, "SELECT n || ' ' || total_ns || ' ' || mean_ns || ' ' || flops || ' ' ||"
                               " bytes || ' ' || gflop_per_s || ' ' || gbyte_per_s FROM v_kernel_time"
                               " WHERE layer = 3 AND name = 'gemm'"), "2 400 200.0 8000 1600 20.0 4.0");
    assert_int_equal(q(db, "SELECT total_ns FROM v_layer_time WHERE layer = 4 AND direction = 'down'"),
                     q(db, "SELECT sum(dur_ns) FROM slices WHERE name IN ('a_outer','b_outer')"));
    double start = q(db, "SELECT ts_ns FROM slices WHERE name = 'request'");
    double t0 = q(db, "SELECT min(ts_ns) FROM slices WHERE name = 'token'");
    double t2 = q(db, "SELECT max(ts_ns) FROM slices WHERE name = 'token'");
    assert_int_equal(q(db, "SELECT n_tokens FROM v_request_latency WHERE request = 7"), 3);
    assert_true(q(db, "SELECT ttft_ns FROM v_request_latency WHERE request = 7") == t0 - start);
    assert_true(q(db, "SELECT tpot_ns FROM v_request_latency WHERE request = 7") == (t2 - t0) / 2);
    assert_true(q(db, "SELECT e2e_ns FROM v_request_latency") ==
                q(db, "SELECT dur_ns FROM slices WHERE name = 'request'"));
    assert_string_equal(qs(db, "SELECT name FROM v_critical_path WHERE request = 7 AND seq = 1"), "request");
    assert_int_equal(q(db, "SELECT count(*) FROM v_critical_path a JOIN v_critical_path b"
                           " ON b.request = a.request AND b.seq = a.seq + 1 WHERE b.ts_ns < a.ts_ns"), 0);
    assert_int_equal(q(db, "SELECT count(*) FROM v_critical_path WHERE name IN ('tokenize','schedule','a_inner')"), 2);
    sqlite3_close(db);
}

static void test_two_runs_one_db(void **state) {
    (void)state;
    char err[256];
    trace_run_info ri = info(path("runs.db"), NULL);
    int64_t id[2];
    for (int r = 0; r < 2; r++) {
        assert_int_equal(trace_open(&ri, err, sizeof err), 0);
        id[r] = trace_run_id();
        for (int i = 0; i <= r; i++) trace_instant(W(L_GPU, DIR_NONE, -1, 0), "x", 0, NULL);
        assert_int_equal(trace_close(err, sizeof err), 0);
    }
    assert_true(id[1] > id[0]);
    sqlite3 *db;
    assert_int_equal(sqlite3_open(path("runs.db"), &db), SQLITE_OK);
    assert_string_equal(qs(db, "SELECT group_concat(n) FROM (SELECT count(*) n FROM slices"
                               " GROUP BY run_id ORDER BY run_id)"), "1,2");
    sqlite3_close(db);
}

/* A slice whose begin and end args make more than TRACE_MAX_ARGS together
 * is stored whole with all of them; closing the trace then closes the
 * database too (every statement finalized): its WAL is checkpointed away. */
static void test_args_past_max(void **state) {
    (void)state;
    char err[256];
    trace_run_info ri = info(path("many.db"), NULL);
    assert_int_equal(trace_open(&ri, err, sizeof err), 0);
    static const char *K[] = { "a0", "a1", "a2", "a3", "a4", "a5", "a6", "a7", "a8", "a9", "a10", "a11" };
    trace_arg a[TRACE_MAX_ARGS];
    for (int i = 0; i < TRACE_MAX_ARGS; i++) a[i] = TA_INT(K[i], i);
    trace_begin(W(L_OPS, DIR_DOWN, 1, 0), "wide", TRACE_MAX_ARGS, a);
    trace_end(W(L_OPS, DIR_DOWN, 1, 0), 1, (trace_arg[]){ TA_INT("end", 12) });
    assert_int_equal(trace_close(err, sizeof err), 0);
    assert_int_equal(access(path("many.db-wal"), F_OK), -1);
    sqlite3 *db;
    assert_int_equal(sqlite3_open(path("many.db"), &db), SQLITE_OK);
    assert_int_equal(q(db, "SELECT count(*) FROM args a JOIN slices s ON s.id = a.slice_id WHERE s.name = 'wide'"),
                     TRACE_MAX_ARGS + 1);
    sqlite3_close(db);
}

/* A step of 512 sequences names them all in its `requests` arg, a JSON
 * array past 2 KiB; a cut array would stop v_step_requests from reading it. */
static void test_long_string_arg(void **state) {
    (void)state;
    char err[256], ids[8192] = "[";
    for (int i = 1; i <= 512; i++) snprintf(ids + strlen(ids), sizeof ids - strlen(ids), "%d%s", 1000 + i, i < 512 ? "," : "]");
    trace_run_info ri = info(path("long.db"), NULL);
    assert_int_equal(trace_open(&ri, err, sizeof err), 0);
    trace_begin(W(L_SCHEDULER, DIR_DOWN, NO_REQ, 3), "step", 1, (trace_arg[]){ TA_STR("requests", ids) });
    trace_end(W(L_SCHEDULER, DIR_DOWN, NO_REQ, 3), 0, NULL);
    assert_int_equal(trace_close(err, sizeof err), 0);
    sqlite3 *db;
    assert_int_equal(sqlite3_open(path("long.db"), &db), SQLITE_OK);
    assert_int_equal(q(db, "SELECT count(*) FROM v_step_requests"), 512);
    assert_int_equal(q(db, "SELECT max(request) FROM v_step_requests"), 1512);
    sqlite3_close(db);
}

/* trace_mute: the muted layers record nothing, slices, counters nor
 * series; the others go on; trace_mute(0) lets them all through again. */
static void test_mute(void **state) {
    (void)state;
    char err[256];
    trace_run_info ri = info(path("mute.db"), NULL);
    assert_int_equal(trace_open(&ri, err, sizeof err), 0);
    trace_mute(1u << L_KERNELS | 1u << L_OPS);
    assert_true(trace_muted(L_OPS) && !trace_muted(L_GPU));
    trace_slice(W(L_OPS, DIR_DOWN, 1, 0), "op", 10, 5, 0, NULL);
    trace_slice(W(L_KERNELS, DIR_DOWN, 1, 0), "launch", 10, 5, 0, NULL);
    trace_counter(W(L_OPS, DIR_DOWN, 1, 0), "count", 1, 10);
    trace_counter_series(W(L_KERNELS, DIR_DOWN, 1, 0), "busy", 2, (uint64_t[]){ 10, 20 }, (double[]){ 1, 0 });
    trace_slice(W(L_GPU, DIR_DOWN, 1, 1), "kernel", 10, 5, 0, NULL);
    trace_mute(0);
    trace_slice(W(L_OPS, DIR_DOWN, 1, 0), "op", 20, 5, 0, NULL);
    assert_int_equal(trace_close(err, sizeof err), 0);
    sqlite3 *db;
    assert_int_equal(sqlite3_open(path("mute.db"), &db), SQLITE_OK);
    assert_string_equal(qs(db, "SELECT group_concat(name || '@' || layer || ':' || ts_ns) FROM (SELECT * FROM slices ORDER BY layer, ts_ns)"),
                        "kernel@1:10,op@4:20");
    assert_int_equal(q(db, "SELECT count(*) FROM counters"), 0);
    sqlite3_close(db);
}

/* An event; every third thread also leaves a flow waiting when it exits. */
static void *one_event(void *arg) {
    trace_instant(W(L_CLIENT, DIR_NONE, (intptr_t)arg, 0), "conn", 0, NULL);
    if ((intptr_t)arg % 3 == 0) trace_flow_out(trace_flow_next());
    return NULL;
}

/* More short-lived threads than the recorder has slots: exited threads'
 * buffers are reused, nothing is dropped, and a flow left waiting by a
 * thread that exited is not handed to the next thread's first event. */
static void test_short_lived_threads(void **state) {
    (void)state;
    char err[256];
    trace_run_info ri = info(path("threads.db"), NULL);
    assert_int_equal(trace_open(&ri, err, sizeof err), 0);
    for (intptr_t i = 0; i < 300; i++) {
        pthread_t tid;
        assert_int_equal(pthread_create(&tid, NULL, one_event, (void *)i), 0);
        pthread_join(tid, NULL);
    }
    assert_int_equal(trace_get_stats().dropped, 0);
    assert_int_equal(trace_close(err, sizeof err), 0);
    sqlite3 *db;
    assert_int_equal(sqlite3_open(path("threads.db"), &db), SQLITE_OK);
    assert_int_equal(q(db, "SELECT count(DISTINCT request) FROM slices WHERE name = 'conn'"), 300);
    assert_true(q(db, "SELECT count(DISTINCT thread) FROM slices") <= 2);
    assert_int_equal(q(db, "SELECT count(*) FROM flows"), 0);
    sqlite3_close(db);
}

/* A flow for a layer waits past the slices of other layers: as an op's
 * arrow to its kernel, recorded before the op's own slice. */
static void test_flow_waits_for_its_layer(void **state) {
    (void)state;
    char err[256];
    trace_run_info ri = info(path("flows.db"), NULL);
    assert_int_equal(trace_open(&ri, err, sizeof err), 0);
    uint64_t f = trace_flow_next();
    trace_flow_out_at(L_OPS, f);
    trace_flow_in_at(L_GPU, f);
    trace_slice(W(L_KERNELS, DIR_DOWN, 1, 0), "launch", 10, 5, 0, NULL);
    trace_slice(W(L_GPU, DIR_DOWN, 1, 1), "kernel", 12, 20, 0, NULL);
    trace_slice(W(L_OPS, DIR_DOWN, 1, 0), "op", 5, 15, 0, NULL);
    assert_int_equal(trace_close(err, sizeof err), 0);
    sqlite3 *db;
    assert_int_equal(sqlite3_open(path("flows.db"), &db), SQLITE_OK);
    assert_int_equal(q(db, "SELECT count(*) FROM flows f JOIN slices a ON a.id = f.from_slice"
                           " JOIN slices b ON b.id = f.to_slice WHERE a.name = 'op' AND b.name = 'kernel'"), 1);
    assert_int_equal(q(db, "SELECT count(*) FROM flows"), 1);
    sqlite3_close(db);
}

static long file_bytes(const char *p, char *buf, long cap) {
    FILE *f = fopen(p, "rb");
    assert_non_null(f);
    long n = fread(buf, 1, cap, f);
    fclose(f);
    return n;
}

/* A database of another schema version (or a foreign one) is refused, unchanged. */
static void test_schema_refusal(void **state) {
    (void)state;
    const char *cases[][2] = { { "PRAGMA user_version = 99; CREATE TABLE t(x);", "version 99" },
                               { "CREATE TABLE t(x);", "not a hipath trace database" } };
    static char before[1 << 16], after[1 << 16];
    for (int c = 0; c < 2; c++) {
        const char *p = path(c ? "foreign.db" : "v99.db");
        sqlite3 *db;
        assert_int_equal(sqlite3_open(p, &db), SQLITE_OK);
        assert_int_equal(sqlite3_exec(db, cases[c][0], NULL, NULL, NULL), SQLITE_OK);
        sqlite3_close(db);
        long n = file_bytes(p, before, sizeof before);
        char err[256] = "";
        trace_run_info ri = info(p, NULL);
        assert_int_equal(trace_open(&ri, err, sizeof err), -1);
        assert_non_null(strstr(err, cases[c][1]));
        assert_non_null(strstr(err, p));
        assert_false(trace_enabled());
        assert_int_equal(file_bytes(p, after, sizeof after), n);
        assert_memory_equal(before, after, n);
        unlink(p);
    }
}

/* A version-1 file (one row per argument in a table `args`) is moved to
 * version 2 in place: its old args read back through the `args` view and
 * the views, and the new run lands next to the old one. */
static void test_schema_migration(void **state) {
    (void)state;
    const char *p = path("v1.db");
    sqlite3 *db;
    assert_int_equal(sqlite3_open(p, &db), SQLITE_OK);
    assert_int_equal(sqlite3_exec(db,
        "PRAGMA journal_mode=WAL;"
        "CREATE TABLE runs (id INTEGER PRIMARY KEY, command TEXT, model TEXT, device TEXT, clock_domain TEXT,"
        "  started_at TEXT NOT NULL, started_unix_ns INTEGER NOT NULL, ended_at TEXT, pid INTEGER,"
        "  hipath_git_rev TEXT NOT NULL);"
        "CREATE TABLE layers (id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE);"
        "INSERT INTO layers VALUES (1,'gpu'),(2,'runtime'),(3,'kernels'),(4,'ops'),"
        "  (5,'tensor'),(6,'scheduler'),(7,'tokenizer'),(8,'client');"
        "CREATE TABLE tracks (run_id INTEGER NOT NULL, layer INTEGER NOT NULL, track INTEGER NOT NULL,"
        "  name TEXT NOT NULL, PRIMARY KEY (run_id, layer, track));"
        "CREATE TABLE slices (id INTEGER PRIMARY KEY, run_id INTEGER NOT NULL, ts_ns INTEGER NOT NULL,"
        "  dur_ns INTEGER, layer INTEGER NOT NULL, direction TEXT NOT NULL, name TEXT NOT NULL,"
        "  request INTEGER, step INTEGER, clock TEXT NOT NULL, track INTEGER NOT NULL,"
        "  depth INTEGER NOT NULL, kind TEXT NOT NULL, thread INTEGER NOT NULL);"
        "CREATE TABLE args (slice_id INTEGER NOT NULL, key TEXT NOT NULL, value);"
        "CREATE TABLE flows (run_id INTEGER NOT NULL, flow_id INTEGER NOT NULL, from_slice INTEGER,"
        "  to_slice INTEGER, PRIMARY KEY (run_id, flow_id));"
        "CREATE TABLE counters (id INTEGER PRIMARY KEY, run_id INTEGER NOT NULL, ts_ns INTEGER NOT NULL,"
        "  layer INTEGER NOT NULL, track INTEGER NOT NULL, name TEXT NOT NULL, value REAL NOT NULL,"
        "  request INTEGER, step INTEGER, clock TEXT NOT NULL);"
        "CREATE INDEX args_slice_key ON args(slice_id, key);"
        "CREATE VIEW v_op_time AS SELECT s.name, SUM(f.value) AS flops FROM slices s"
        "  LEFT JOIN args f ON f.slice_id = s.id AND f.key = 'flops' GROUP BY s.name;"
        "INSERT INTO runs VALUES (1, 'old', 'm', 'cpu', 'host-monotonic', 'x', 0, 'y', 1, 'abc');"
        "INSERT INTO slices VALUES (1, 1, 10, 5, 4, 'down', 'gemv', 1, 0, 'measured', 0, 0, 'slice', 0);"
        "INSERT INTO slices VALUES (2, 1, 20, 5, 4, 'down', 'rmsnorm', 1, 0, 'measured', 0, 0, 'slice', 0);"
        "INSERT INTO args VALUES (1, 'flops', 2000), (1, 'bytes', 400.5), (1, 'dtype', 'bf16');"
        "PRAGMA user_version = 1;", NULL, NULL, NULL), SQLITE_OK);
    sqlite3_close(db);

    char err[256] = "";
    trace_run_info ri = info(p, NULL);
    assert_int_equal(trace_open(&ri, err, sizeof err), 0);
    trace_slice(W(L_OPS, DIR_DOWN, 1, 0), "gemv", 30, 5, 1, (trace_arg[]){ TA_INT("flops", 3000) });
    assert_int_equal(trace_close(err, sizeof err), 0);

    assert_int_equal(sqlite3_open(p, &db), SQLITE_OK);
    assert_string_equal(qs(db, "PRAGMA integrity_check"), "ok");
    assert_int_equal(q(db, "PRAGMA user_version"), 2);
    assert_string_equal(qs(db, "SELECT group_concat(key || '=' || typeof(value) || ':' || value, ',')"
                               " FROM (SELECT * FROM args WHERE slice_id = 1 ORDER BY key)"),
                        "bytes=real:400.5,dtype=text:bf16,flops=integer:2000");
    assert_int_equal(q(db, "SELECT count(*) FROM args WHERE slice_id = 2"), 0);
    assert_int_equal(q(db, "SELECT count(*) FROM runs"), 2);
    assert_int_equal(q(db, "SELECT flops FROM v_op_time WHERE run_id = 1 AND name = 'gemv'"), 2000);
    assert_int_equal(q(db, "SELECT flops FROM v_op_time WHERE run_id = 2 AND name = 'gemv'"), 3000);
    sqlite3_close(db);
}

/* The disk fills up mid-run (here: a file size limit, which fails writes
 * the way a full disk does): the run goes on, the trace says what it lost
 * (trace_close fails with the reason), and both files stay readable: the
 * database holds whole flushes, the .pftrace whole packets. */
#define FULL_BYTES (192 << 10)
static void test_disk_full(void **state) {
    (void)state;
    const char *db_path = path("full.db"), *pf_path = path("full.pftrace");
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        signal(SIGXFSZ, SIG_IGN);
        setrlimit(RLIMIT_FSIZE, &(struct rlimit){ FULL_BYTES, FULL_BYTES });
        char err[256] = "";
        trace_run_info ri = info(db_path, pf_path);
        if (trace_open(&ri, err, sizeof err)) _exit(10);
        int failed = 0;
        for (int batch = 0; batch < 40; batch++) {
            for (int i = 0; i < 250; i++)
                trace_instant(W(L_OPS, DIR_NONE, batch, 0), "fill", 2,
                              (trace_arg[]){ TA_INT("batch", batch), TA_STR("pad", "0123456789abcdef0123456789") });
            failed |= trace_flush(err, sizeof err) != 0;
        }
        if (!failed) _exit(11);
        if (trace_close(err, sizeof err) == 0 || !strstr(err, "events were not written")) _exit(12);
        _exit(0);
    }
    int status;
    waitpid(pid, &status, 0);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);

    sqlite3 *db;
    assert_int_equal(sqlite3_open(db_path, &db), SQLITE_OK);
    assert_string_equal(qs(db, "PRAGMA integrity_check"), "ok");
    double n = q(db, "SELECT count(*) FROM slices WHERE name = 'fill'");
    assert_true(n >= 250 && n < 40 * 250);
    /* whole flushes: every stored batch is complete */
    assert_int_equal(q(db, "SELECT count(*) FROM (SELECT request FROM slices WHERE name = 'fill'"
                           " GROUP BY request HAVING count(*) != 250)"), 0);
    sqlite3_close(db);

    struct stat st;
    assert_int_equal(stat(pf_path, &st), 0);
    assert_true(st.st_size > 0 && st.st_size <= FULL_BYTES);
    static uint8_t buf[FULL_BYTES];
    FILE *f = fopen(pf_path, "rb");
    assert_non_null(f);
    size_t len = fread(buf, 1, sizeof buf, f);
    fclose(f);
    Perfetto__Protos__Trace *t = perfetto__protos__trace__unpack(NULL, len, buf);
    assert_non_null(t);   /* NULL: a packet cut short */
    assert_true(t->n_packet > 8);
    perfetto__protos__trace__free_unpacked(t, NULL);
}

/* Both files fail in the same flush (one full disk holds both): the reason
 * names both, not only the database. */
static void test_both_files_fail(void **state) {
    (void)state;
    const char *db_path = path("both.db"), *pf_path = path("both.pftrace");
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        char err[512] = "";
        trace_run_info ri = info(db_path, pf_path);
        if (trace_open(&ri, err, sizeof err)) _exit(10);
        signal(SIGXFSZ, SIG_IGN);
        setrlimit(RLIMIT_FSIZE, &(struct rlimit){ 4096, 4096 });   /* below what one flush writes to either */
        for (int i = 0; i < 250; i++)
            trace_instant(W(L_OPS, DIR_NONE, 0, 0), "fill", 1, (trace_arg[]){ TA_STR("pad", "0123456789abcdef0123456789") });
        if (trace_flush(err, sizeof err) == 0) _exit(11);
        if (!strstr(err, "trace db") || !strstr(err, "perfetto trace")) _exit(12);
        if (trace_close(err, sizeof err) == 0 || !strstr(err, "trace db") || !strstr(err, "perfetto trace")) _exit(13);
        _exit(0);
    }
    int status;
    waitpid(pid, &status, 0);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
}

/* A full disk as the kernel reports it, through SQLite's own hook for its
 * system calls: every write to a file whose name ends with full_suffix
 * ("": any) fails with ENOSPC. SQLite then says either SQLITE_FULL (a page
 * of the WAL) or an I/O error with errno ENOSPC (growing the WAL index,
 * "-shm", which a tmpfs of 16 KiB gives at the first transaction); both
 * must read "disk full". */
static const char *full_suffix;
static sqlite3_syscall_ptr real_write[3];
static int disk_full(int fd) {
    char link[64], name[4096];
    snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
    ssize_t n = readlink(link, name, sizeof name - 1);
    size_t k = strlen(full_suffix);
    if (n < (ssize_t)k) return 0;
    name[n] = 0;
    if (strcmp(name + n - k, full_suffix)) return 0;
    errno = ENOSPC;
    return 1;
}
static ssize_t full_write(int fd, const void *b, size_t n) {
    return disk_full(fd) ? -1 : ((ssize_t (*)(int, const void *, size_t))real_write[0])(fd, b, n);
}
static ssize_t full_pwrite(int fd, const void *b, size_t n, off_t at) {
    return disk_full(fd) ? -1 : ((ssize_t (*)(int, const void *, size_t, off_t))real_write[1])(fd, b, n, at);
}
static ssize_t full_pwrite64(int fd, const void *b, size_t n, off_t at) {
    return disk_full(fd) ? -1 : ((ssize_t (*)(int, const void *, size_t, off_t))real_write[2])(fd, b, n, at);
}
static void fill_disk(const char *suffix) {
    static const char *names[3] = { "write", "pwrite", "pwrite64" };
    sqlite3_syscall_ptr full[3] = { (sqlite3_syscall_ptr)full_write, (sqlite3_syscall_ptr)full_pwrite,
                                    (sqlite3_syscall_ptr)full_pwrite64 };
    sqlite3_vfs *vfs = sqlite3_vfs_find(NULL);
    full_suffix = suffix;
    for (int i = 0; i < 3; i++)   /* a build of SQLite has one or two of them */
        if ((real_write[i] = vfs->xGetSystemCall(vfs, names[i]))) vfs->xSetSystemCall(vfs, names[i], full[i]);
}

static void test_disk_full_says_so(void **state) {
    (void)state;
    for (int at_open = 0; at_open < 2; at_open++) {
        pid_t pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
            char err[512] = "";
            trace_run_info ri = info(path(at_open ? "full-open.db" : "full-flush.db"), NULL);
            if (at_open) {   /* the WAL index cannot grow: SQLite's "disk I/O error" */
                fill_disk("-shm");
                if (trace_open(&ri, err, sizeof err) == 0) _exit(10);
            } else {         /* a page cannot be written: SQLite's "database or disk is full" */
                if (trace_open(&ri, err, sizeof err)) _exit(11);
                trace_instant(W(L_OPS, DIR_NONE, 0, 0), "fill", 0, NULL);
                fill_disk("");
                if (trace_flush(err, sizeof err) == 0) _exit(12);
            }
            if (strstr(err, "disk full")) _exit(0);
            fprintf(stderr, "%s: %s\n", at_open ? "open" : "flush", err);
            _exit(13);
        }
        int status;
        waitpid(pid, &status, 0);
        assert_true(WIFEXITED(status));
        assert_int_equal(WEXITSTATUS(status), 0);
    }
}

static void test_unwritable(void **state) {
    (void)state;
    const char *bad = "/nonexistent-hipath-dir/x";
    trace_run_info cases[] = { info(bad, NULL), info(NULL, bad), info(path("ok.db"), bad) };
    for (int c = 0; c < 3; c++) {
        char err[256] = "";
        assert_int_equal(trace_open(&cases[c], err, sizeof err), -1);
        assert_non_null(strstr(err, bad));
        assert_false(trace_enabled());
        trace_begin(W(L_GPU, DIR_NONE, -1, 0), "x", 0, NULL);  /* still a no-op */
    }
    /* after a failed open, a good one works */
    char err[256];
    trace_run_info ok = info(path("ok.db"), NULL);
    assert_int_equal(trace_open(&ok, err, sizeof err), 0);
    assert_int_equal(trace_close(err, sizeof err), 0);
}

static void test_off_is_noop(void **state) {
    (void)state;
    char err[64];
    for (int opened = 0; opened < 2; opened++) {
        trace_run_info off = info(NULL, NULL);
        if (opened) assert_int_equal(trace_open(&off, err, sizeof err), 0);
        assert_false(trace_enabled());
        trace_track_name(L_GPU, 1, "x");
        trace_flow_out(trace_flow_next());
        trace_begin(W(L_GPU, DIR_NONE, -1, 0), "x", 1, (trace_arg[]){ TA_INT("k", 1) });
        trace_end(W(L_GPU, DIR_NONE, -1, 0), 0, NULL);
        trace_slice(W(L_GPU, DIR_NONE, -1, 0), "x", 1, 2, 0, NULL);
        trace_instant(W(L_GPU, DIR_NONE, -1, 0), "x", 0, NULL);
        trace_counter(W(L_GPU, DIR_NONE, -1, 0), "x", 1, 0);
        assert_int_equal(trace_flush(err, sizeof err), 0);
        assert_int_equal(trace_run_id(), -1);
        assert_int_equal(trace_get_stats().events, 0);
        assert_int_equal(trace_close(err, sizeof err), 0);
    }
    uint64_t a = trace_now_ns(), b = trace_now_ns();
    assert_true(b >= a);
}

/* ---- helper modes for tests/check_trace_*.sh ---- */

static int die(const char *err) {
    fprintf(stderr, "test_trace: %s\n", err);
    return 1;
}

static int mode_loop(const char *db, const char *pf) {
    char err[256];
    trace_run_info ri = info(db, pf);
    if (trace_open(&ri, err, sizeof err)) return die(err);
    for (long batch = 1;; batch++) {
        for (int i = 0; i < 100; i++)
            trace_slice(W(L_OPS, DIR_DOWN, batch, 0), "op", batch * 1000 + i * 10, 5, 1,
                        (trace_arg[]){ TA_INT("batch", batch) });
        if (trace_flush(err, sizeof err)) return die(err);
        printf("%ld\n", batch);
        fflush(stdout);
    }
}

static int mode_write(const char *db, long n) {
    char err[256];
    trace_run_info ri = info(db, NULL);
    if (trace_open(&ri, err, sizeof err)) return die(err);
    for (long i = 0; i < n; i++) {
        trace_begin(W(L_KERNELS, DIR_DOWN, i, 0), "k", 1, (trace_arg[]){ TA_INT("i", i) });
        trace_end(W(L_KERNELS, DIR_DOWN, i, 0), 0, NULL);
        if (i % 500 == 499 && trace_flush(err, sizeof err)) return die(err);
    }
    printf("%lld\n", (long long)trace_run_id());
    return trace_close(err, sizeof err) ? die(err) : 0;
}

static int mode_perfetto(const char *pf) {
    char err[256];
    trace_run_info ri = info(NULL, pf);
    if (trace_open(&ri, err, sizeof err)) return die(err);
    if (record_scenario()) return die("flush failed");
    return trace_close(err, sizeof err) ? die(err) : 0;
}

static int setup(void **state) {
    (void)state;
    return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state) {
    (void)state;
    DIR *d = opendir(dir);
    for (struct dirent *f; d && (f = readdir(d));)
        if (f->d_name[0] != '.') unlink(path(f->d_name));
    if (d) closedir(d);
    return rmdir(dir);
}

int main(int argc, char **argv) {
    if (argc == 3 && !strcmp(argv[1], "perfetto")) return mode_perfetto(argv[2]);
    if (argc == 4 && !strcmp(argv[1], "loop")) return mode_loop(argv[2], argv[3]);
    if (argc == 4 && !strcmp(argv[1], "write")) return mode_write(argv[2], atol(argv[3]));
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_off_is_noop),
        cmocka_unit_test(test_two_threads),
        cmocka_unit_test(test_two_runs_one_db),
        cmocka_unit_test(test_args_past_max),
        cmocka_unit_test(test_long_string_arg),
        cmocka_unit_test(test_mute),
        cmocka_unit_test(test_short_lived_threads),
        cmocka_unit_test(test_flow_waits_for_its_layer),
        cmocka_unit_test(test_schema_refusal),
        cmocka_unit_test(test_schema_migration),
        cmocka_unit_test(test_disk_full),
        cmocka_unit_test(test_both_files_fail),
        cmocka_unit_test(test_disk_full_says_so),
        cmocka_unit_test(test_unwritable),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
