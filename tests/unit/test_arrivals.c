/* test_arrivals.c -- the open-loop driver (layers/scheduler/arrivals.h): a
 * request is not served before it arrives, the modeled clock is the device
 * time of the steps and jumps over idle time, on a measured device the host
 * clock sleeps until an arrival; and layer 1's busy time (sim_busy_ns) is the
 * kernels' durations, not the span they lie in. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include "kernels/backend.h"
#include "layers/gpu/sim.h"
#include "layers/runtime/runtime.h"
#include "layers/scheduler/arrivals.h"
#include "trace/trace.h"
#include <math.h>
#include <string.h>

enum { N = 2, TOK = 4 };
static const int PROMPT[8] = { 1, 2, 3, 4, 5, 6, 7, 8 };

/* A run of two requests: their arrivals and times, the run's figures, the
 * device time modeled while it ran. */
static struct {
    model m;
    request r[N];
    arrival a[N];
    double times[N][TOK], dev_s;
    arrivals_stats s;
    char err[256];
} F;

/* Two requests of 8 ids, TOK tokens (B asks for tok_b), arriving at t0
 * and t1, through an engine of F.m. arrivals_run's result. */
static int two(double t0, double t1, int tok_b) {
    engine e;
    engine_opts o = { .max_num_batched_tokens = 64, .max_num_seqs = 4, .kv_tokens = 256 };
    const double at[N] = { t0, t1 };
    for (int i = 0; i < N; i++) {
        F.r[i] = (request){ .id = i + 1, .prompt = PROMPT, .n_prompt = 8, .max_tokens = i ? tok_b : TOK };
        F.a[i] = (arrival){ .r = &F.r[i], .t_arrive = at[i], .t_token = F.times[i] };
    }
    assert_int_equal(engine_init(&e, &F.m, &o, F.err, sizeof F.err), 0);
    uint64_t dev0 = rt_modeled_ns();
    int rc = arrivals_run(&e, F.a, N, 0, &F.s, F.err, sizeof F.err);
    F.dev_s = (rt_modeled_ns() - dev0) * 1e-9;
    engine_free(&e);
    return rc;
}

/* analytic: B arrives 10 s after A, long after A is done. Each alone takes
 * TOK steps (its prefill gives the first token); B's first token is after
 * 10 s; the clock's busy part is the device time the steps modeled. */
static void modeled_clock_jumps_over_idle(void **state) {
    (void)state;
    const arrival *a = F.a;
    assert_int_equal(backend_open("analytic:h100", F.err, sizeof F.err), 0);
    assert_int_equal(model_load_analytic(&F.m, "labs/configs/smollm2-135m.config.json", "bf16", "bf16", F.err, sizeof F.err), 0);
    assert_int_equal(two(0, 10, TOK), 0);
    assert_true(F.s.modeled);
    assert_int_equal(F.s.steps, 2 * TOK);
    assert_int_equal(F.s.max_seqs, 1);
    assert_int_equal(a[0].n_token, TOK);
    assert_int_equal(a[1].n_token, TOK);
    assert_true(F.dev_s > 0 && fabs(F.s.busy_s - F.dev_s) < 1e-9);
    assert_true(a[0].t_token[0] > 0 && a[0].t_finish < 10);
    assert_true(a[1].t_token[0] > 10);
    assert_true(fabs((a[1].t_finish - 10) - (a[0].t_finish - 0)) < 1e-9);   /* the same work, the same modeled time */
    assert_true(fabs(F.s.t - a[1].t_finish) < 1e-12 && fabs(F.s.t - 10 - F.s.busy_s / 2) < 1e-9);
    for (int i = 0; i < N; i++)
        for (int k = 1; k < TOK; k++) assert_true(a[i].t_token[k] > a[i].t_token[k - 1]);
    assert_int_equal(F.s.computed_tokens, 2 * (8 + TOK - 1));
    /* out of order: refused, nothing submitted */
    assert_int_equal(two(1, 0, TOK), -1);
    assert_non_null(strstr(F.err, "before"));
    /* B can never fit the pool: refused, and A, already queued, cancelled */
    assert_int_equal(two(0, 0, 1000), -1);
    assert_non_null(strstr(F.err, "KV"));
    assert_string_equal(F.r[0].finish, "cancelled");
    model_free(&F.m);
    backend_close();
}

/* cpu: measured (nothing here depends on how fast the host is); B arrives
 * 0.2 s after A and is not served before then. */
static void measured_clock_waits_for_arrivals(void **state) {
    (void)state;
    assert_int_equal(backend_open("cpu", F.err, sizeof F.err), 0);
    if (model_load(&F.m, "models/tiny-hi", F.err, sizeof F.err)) { backend_close(); skip(); }
    assert_int_equal(two(0, 0.2, TOK), 0);
    assert_false(F.s.modeled);
    assert_true(F.a[1].t_token[0] >= 0.2 && F.s.t >= 0.2);
    assert_true(F.a[0].t_finish >= 0.2 || F.s.busy_s < F.s.t);   /* idle time is not a step's: whatever the host's speed */
    assert_int_equal(F.a[1].n_token, TOK);
    model_free(&F.m);
    backend_close();
}

/* Two kernels with a gap between them: busy is their durations, not the span. */
static void busy_is_the_kernels_not_the_span(void **state) {
    (void)state;
    gpu_profile p = { .name = "t", .bandwidth = 1e12, .compute_units = 10, .wavefront_size = 32, .launch_latency_s = 0, .host_link = 1e10 };
    p.peak.fp32 = 1e12;
    sim_kernel k;
    char err[128];
    sim_open(&p, 1, 1, 1);
    assert_int_equal(sim_model(&p, 10, 32, 1e6, 1e6, p.peak.fp32, &k, err, sizeof err), 0);   /* 1 us */
    sim_launch("k", "op", 0, &k, 1e6, 1e6, 0);
    sim_launch("k", "op", 0, &k, 1e6, 1e6, 5000);   /* launched at 5 us, after a 4 us idle gap */
    assert_int_equal(sim_busy_ns(), 2000);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(modeled_clock_jumps_over_idle),
        cmocka_unit_test(measured_clock_waits_for_arrivals),
        cmocka_unit_test(busy_is_the_kernels_not_the_span),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
