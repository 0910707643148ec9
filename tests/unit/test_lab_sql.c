/*
 * test_lab_sql.c -- every query the labs embed (the files in labs/sql/, by the
 * generated lab_sql.h) against a fresh trace database: it compiles (tables,
 * views and columns exist), is one statement, runs to the end with its
 * named parameters bound, and its header shows a student how to run it in
 * the sqlite3 shell (.param set for each parameter, then .read the file).
 * tests/check_labs.sh runs the files themselves on real lab traces.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <ctype.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "trace/trace.h"
#define LAB_SQL_TEXT
#include "labs/lab_sql.h"

static char dir[] = "/tmp/hipath_lab_sql_XXXXXX";
static char db_path[64];

/* A trace database as a lab run leaves it: schema, views, one run. */
static int setup(void **state) {
    (void)state;
    char err[256];
    if (!mkdtemp(dir)) return -1;
    snprintf(db_path, sizeof db_path, "%s/lab.db", dir);
    trace_run_info ri = { .db_path = db_path, .command = "test_lab_sql", .device = "cpu", .clock_domain = "host-monotonic" };
    return trace_open(&ri, err, sizeof err) || trace_close(err, sizeof err) ? -1 : 0;
}

static int teardown(void **state) {
    (void)state;
    char p[96];
    static const char *LEFT[] = { "", "-wal", "-shm" };
    for (int i = 0; i < 3; i++) { snprintf(p, sizeof p, "%s%s", db_path, LEFT[i]); unlink(p); }
    rmdir(dir);
    return 0;
}

static void test_each_query(void **state) {
    (void)state;
    sqlite3 *db;
    assert_int_equal(sqlite3_open_v2(db_path, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    for (int q = 0; q < SQL_COUNT; q++) {
        sqlite3_stmt *st;
        const char *tail, *file = LAB_SQL[q].file, *text = LAB_SQL[q].text;
        if (sqlite3_prepare_v2(db, text, -1, &st, &tail) != SQLITE_OK) fail_msg("%s: %s", file, sqlite3_errmsg(db));
        while (isspace((unsigned char)*tail)) tail++;
        if (*tail) fail_msg("%s: more than one statement (the labs run the first only): %.40s", file, tail);

        char want[160];
        snprintf(want, sizeof want, ".read %s", file);
        if (!strstr(text, want)) fail_msg("%s: its header does not say '%s'", file, want);
        for (int i = 1; i <= sqlite3_bind_parameter_count(st); i++) {
            const char *name = sqlite3_bind_parameter_name(st, i);
            if (!name || name[0] != ':') fail_msg("%s: parameter %d is not named :like_this", file, i);
            snprintf(want, sizeof want, ".param set %s ", name);
            if (!strstr(text, want)) fail_msg("%s: its header does not say '%s'", file, want);
            sqlite3_bind_int(st, i, 1);
        }
        int rc;
        while ((rc = sqlite3_step(st)) == SQLITE_ROW) {}
        if (rc != SQLITE_DONE) fail_msg("%s: %s", file, sqlite3_errmsg(db));
        sqlite3_finalize(st);
    }
    sqlite3_close(db);
}

int main(void) {
    const struct CMUnitTest tests[] = { cmocka_unit_test(test_each_query) };
    return cmocka_run_group_tests(tests, setup, teardown);
}
