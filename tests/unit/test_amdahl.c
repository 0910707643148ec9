/*
 * test_amdahl.c -- Amdahl's law against cases worked by hand, and bad
 * shares refused.
 *
 * The chapter's seek example: 20 seeks of 10 ms and 1 ms of CPU, 201 ms.
 * CPU twice as fast: f = 1/201, s = 2, new time 200 + 0.5 = 200.5 ms, so
 * 201/200.5. CPU gone: 200 ms, 201/200, and the time saved is 1/201 of it.
 * Half the seeks: f = 200/201, s = 2: 1 + 100 = 101 ms, 201/101.
 * Nothing sped up (f = 0) or nothing gained (s = 1): 1. All of it made to
 * vanish: no limit.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <string.h>
#include "labs/amdahl.h"

#define NEAR(a, b) assert_true(fabs((double)(a) - (double)(b)) <= 1e-12 * fabs((double)(b)))

static void test_worked(void **state) {
    (void)state;
    amdahl_result r;
    char err[256];
    assert_int_equal(amdahl(1.0 / 201, 2, &r, err, sizeof err), 0);
    NEAR(r.overall, 201 / 200.5);
    NEAR(r.limit, 201.0 / 200);
    assert_int_equal(amdahl(1.0 / 201, INFINITY, &r, err, sizeof err), 0);
    NEAR(r.overall, 201.0 / 200);
    NEAR(r.saved_share, 1.0 / 201);
    assert_int_equal(amdahl(200.0 / 201, 2, &r, err, sizeof err), 0);
    NEAR(r.overall, 201.0 / 101);
    NEAR(r.saved_share, 100.0 / 201);
    assert_int_equal(amdahl(0, 5, &r, err, sizeof err), 0);
    NEAR(r.overall, 1);
    assert_int_equal(amdahl(0.7, 1, &r, err, sizeof err), 0);
    NEAR(r.overall, 1);
    assert_int_equal(amdahl(1, INFINITY, &r, err, sizeof err), 0);
    assert_true(isinf(r.overall) && isinf(r.limit));
}

static void test_refused(void **state) {
    (void)state;
    amdahl_result r;
    char err[256];
    struct { double f, s; const char *says; } CASES[] = {
        { -0.1, 2, "fraction -0.1" }, { 1.5, 2, "fraction 1.5" }, { NAN, 2, "fraction" },
        { 0.5, 0, "speed-up 0" }, { 0.5, -3, "speed-up -3" }, { 0.5, NAN, "speed-up" },
    };
    for (size_t i = 0; i < sizeof CASES / sizeof *CASES; i++) {
        err[0] = 0;
        assert_int_equal(amdahl(CASES[i].f, CASES[i].s, &r, err, sizeof err), -1);
        assert_non_null(strstr(err, CASES[i].says));
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_worked),
        cmocka_unit_test(test_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
