/* test_sample.c -- the sampler against hand-worked distributions. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <stdlib.h>
#include "layers/ops/sample.h"

/* logits whose softmax is exactly p = {0.5, 0.25, 0.125, 0.125} */
static const float L4[4] = { 0.6931472f, 0.0f, -0.6931472f, -0.6931472f };

static void greedy_and_logprobs(void **state) {
    (void)state;
    sampler s = { .temperature = 0, .top_p = 1 };
    float work[8];
    sample_result r;
    sampler_pick(&s, -1, L4, 4, 3, work, &r);
    assert_int_equal(r.id, 0);
    assert_float_equal(r.logprob, logf(0.5f), 1e-6);
    assert_int_equal(r.n_top, 3);
    assert_int_equal(r.top_id[0], 0);
    assert_int_equal(r.top_id[1], 1);
    assert_true(r.top_id[2] == 2 || r.top_id[2] == 3);
    assert_float_equal(r.top_logprob[1], logf(0.25f), 1e-6);
    assert_float_equal(r.top_logprob[2], logf(0.125f), 1e-6);
}

/* Frequencies over many draws must match the renormalised nucleus. */
static void frequencies(float top_p, int top_k, const double *want) {
    sampler s = { .temperature = 1, .top_p = top_p, .top_k = top_k };
    sampler_seed(&s, 42);
    float work[8];
    int count[4] = { 0 }, N = 200000;
    for (int i = 0; i < N; i++) {
        sample_result r;
        sampler_pick(&s, -1, L4, 4, 0, work, &r);
        count[r.id]++;
    }
    for (int i = 0; i < 4; i++) assert_float_equal((double)count[i] / N, want[i], 0.006);
}

static void temperature_one(void **state) {
    (void)state;
    frequencies(1, 0, (const double[]){ 0.5, 0.25, 0.125, 0.125 });
}
static void top_p_keeps_nucleus(void **state) {
    (void)state;   /* smallest set reaching 0.7: {0.5, 0.25} -> renormalised 2/3, 1/3 */
    frequencies(0.7f, 0, (const double[]){ 2.0 / 3, 1.0 / 3, 0, 0 });
}
static void top_k_one_is_greedy(void **state) {
    (void)state;
    frequencies(1, 1, (const double[]){ 1, 0, 0, 0 });
}

static void seed_reproduces(void **state) {
    (void)state;
    sampler a = { .temperature = 1, .top_p = 1 }, b = a;
    sampler_seed(&a, 7); sampler_seed(&b, 7);
    float work[8];
    for (int i = 0; i < 100; i++) {
        sample_result ra, rb;
        sampler_pick(&a, -1, L4, 4, 0, work, &ra);
        sampler_pick(&b, -1, L4, 4, 0, work, &rb);
        assert_int_equal(ra.id, rb.id);
    }
}

static void low_temperature_sharpens(void **state) {
    (void)state;   /* T = 0.5 squares the probabilities: 0.25:0.0625:... -> p0 = 0.25/0.34375 */
    sampler s = { .temperature = 0.5f, .top_p = 1 };
    sampler_seed(&s, 1);
    float work[8];
    int c0 = 0, N = 100000;
    for (int i = 0; i < N; i++) { sample_result r; sampler_pick(&s, -1, L4, 4, 0, work, &r); c0 += r.id == 0; }
    assert_float_equal((double)c0 / N, 0.25 / 0.34375, 0.006);
}

/* No distribution to draw from (issue 15): the pick is still an id of the
 * vocabulary, the greedy one, and nothing before the scratch is read. The
 * scratch is on the heap, so AddressSanitizer sees a read before it. */
static int pick_from(float temperature, float top_p, const float *logits, int vocab) {
    sampler s = { .temperature = temperature, .top_p = top_p };
    sampler_seed(&s, 3);
    float *work = malloc(2 * sizeof *work * vocab);
    sample_result r;
    sampler_pick(&s, -1, logits, vocab, 0, work, &r);
    free(work);
    return r.id;
}

static void no_distribution_is_greedy(void **state) {
    (void)state;
    /* 1/T is infinite in float: every term of the softmax is NaN or 0 */
    assert_int_equal(pick_from(1e-45f, 0.5f, L4, 4), 0);
    assert_int_equal(pick_from(1e-45f, 1, L4, 4), 0);
    /* logits that went NaN (a model config with rms_norm_eps -1e30) */
    float nan4[4] = { NAN, NAN, NAN, NAN };
    int id = pick_from(1, 0.9f, nan4, 4);
    assert_true(id >= 0 && id < 4);
    /* a flat distribution and a top_p under 1/vocab: rounding puts every
     * token under the nucleus cut */
    enum { V = 512 };
    float flat[V] = { 0 };
    assert_int_equal(pick_from(1, 1e-6f, flat, V), 0);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(greedy_and_logprobs), cmocka_unit_test(temperature_one),
        cmocka_unit_test(top_p_keeps_nucleus), cmocka_unit_test(top_k_one_is_greedy),
        cmocka_unit_test(seed_reproduces), cmocka_unit_test(low_temperature_sharpens),
        cmocka_unit_test(no_distribution_is_greedy),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
