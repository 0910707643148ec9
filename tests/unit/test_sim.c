/* test_sim.c -- the wave model of layers/gpu/sim.h, worked by hand. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include "layers/gpu/sim.h"
#include "kernels/hip/geometry.h"

/* A 96-CU device, wave32: Pi = 96 TFLOP/s, beta = 960 GB/s, 5 us launch. */
static gpu_profile dev96(void) {
    gpu_profile p = { .name = "test-96", .bandwidth = 960e9, .compute_units = 96, .wavefront_size = 32,
                      .launch_latency_s = 5e-6, .host_link = 32e9 };
    p.peak.fp32 = 96e12;
    return p;
}

/* 2 workgroups of 256 threads, F = 2e9 FLOP, R = 96e6 bytes. The bound is
 * max(2e9/96e12, 96e6/960e9) = max(20.8 us, 100 us) = 100 us; one wave,
 * each workgroup on one CU at 1/96 of the device: t_wave = (R/2)/(beta/96)
 * = 48e6 / 10e9 = 4.8 ms, so t = 4.8 ms + 5 us: 48 times the bound. */
static void small_grid_one_wave(void **state) {
    (void)state;
    gpu_profile p = dev96();
    sim_kernel k;
    char err[256];
    assert_int_equal(sim_model(&p, 2, 256, 2e9, 96e6, p.peak.fp32, &k, err, sizeof err), 0);
    assert_int_equal(k.waves, 1);
    assert_int_equal(k.cus_last, 2);
    assert_int_equal(k.wavefronts, 2 * 8);                 /* 256 threads / 32 */
    assert_true(k.wave_s > 4.8e-3 * (1 - 1e-12) && k.wave_s < 4.8e-3 * (1 + 1e-12));
    assert_true(k.total_s > 4.805e-3 * (1 - 1e-12) && k.total_s < 4.805e-3 * (1 + 1e-12));
}

/* 192 workgroups fill 96 CUs twice: t = max(F/Pi, R/beta) + latency. With
 * F = 192e9: F/Pi = 2 ms > R/beta = 0.1 ms, so 2 ms + 5 us, compute-bound. */
static void full_grid_meets_the_bound(void **state) {
    (void)state;
    gpu_profile p = dev96();
    sim_kernel k;
    char err[256];
    assert_int_equal(sim_model(&p, 192, 64, 192e9, 96e6, p.peak.fp32, &k, err, sizeof err), 0);
    assert_int_equal(k.waves, 2);
    assert_int_equal(k.cus_last, 96);
    assert_int_equal(k.wavefronts, 192 * 2);
    assert_true(k.busy_s > 2e-3 * (1 - 1e-12) && k.busy_s < 2e-3 * (1 + 1e-12));
    /* 97 workgroups: a second wave with one CU busy takes as long as a full one. */
    assert_int_equal(sim_model(&p, 97, 64, 97e9, 0, p.peak.fp32, &k, err, sizeof err), 0);
    assert_int_equal(k.waves, 2);
    assert_int_equal(k.cus_last, 1);
    assert_true(k.busy_s > 2e-3 * (1 - 1e-12) && k.busy_s < 2e-3 * (1 + 1e-12));
    /* Memory is the device's, shared: the same 97 workgroups reading R =
     * 96e6 bytes take R/beta = 0.1 ms, not two rounds of a CU's share
     * ((R/97)/(beta/96) each, 0.198 ms). */
    assert_int_equal(sim_model(&p, 97, 64, 0, 96e6, p.peak.fp32, &k, err, sizeof err), 0);
    assert_true(k.busy_s > 1e-4 * (1 - 1e-12) && k.busy_s < 1e-4 * (1 + 1e-12));
    assert_true(k.wave_s > 5e-5 * (1 - 1e-12) && k.wave_s < 5e-5 * (1 + 1e-12));
}

/* The wavefront size comes from the profile: the same 256 threads are 8
 * wave32 wavefronts or 4 wave64 ones; a partial wavefront counts whole. */
static void wavefronts_from_geometry(void **state) {
    (void)state;
    gpu_profile p = dev96();
    sim_kernel k;
    char err[256];
    kdims d = geo_matmul(1, 896, 896, p.wavefront_size, p.compute_units);        /* decode GEMV, 896 rows */
    assert_int_equal(d.grid, 224);                          /* 4 rows per workgroup */
    assert_int_equal(d.block, 128);
    assert_int_equal(sim_model(&p, d.grid, d.block, 1, 1, p.peak.fp32, &k, err, sizeof err), 0);
    assert_int_equal(k.wavefronts, 896);                    /* one per row */
    p.wavefront_size = 64;
    d = geo_matmul(1, 896, 896, p.wavefront_size, p.compute_units);
    assert_int_equal(sim_model(&p, d.grid, d.block, 1, 1, p.peak.fp32, &k, err, sizeof err), 0);
    assert_int_equal(k.wavefronts, 896);
    assert_int_equal(sim_model(&p, 1, 100, 1, 1, p.peak.fp32, &k, err, sizeof err), 0);
    assert_int_equal(k.wavefronts, 2);                      /* 100 threads: 2 wave64 */
}

/* Split-K (geometry.h), worked by hand on MI300X's 304 CUs. T = 2,
 * N = 1024, K = 8192: 32 tiles, S = min(304/32, 8192/256) = 9 slices of
 * ceil(256/9) = 29 tiles' depth (928), 32 x 9 = 288 workgroups. N = 128,
 * K = 1024: 4 tiles, S = min(76, 4) = 4 slices of 256. N = 9728: 304
 * tiles, unsplit. On dev96, R = 96e6 bytes over 288 workgroups fill the
 * bandwidth: 100 us + 5 us, where the unsplit 32 got 32/96 of it, 300 us. */
static void split_k_fills_the_cus(void **state) {
    (void)state;
    assert_int_equal(gemm_slice_k(2, 1024, 8192, 304), 928);
    assert_int_equal(geo_matmul(2, 1024, 8192, 64, 304).grid, 288);
    assert_int_equal(gemm_slice_k(2, 128, 1024, 304), 256);
    assert_int_equal(geo_matmul(2, 128, 1024, 64, 304).grid, 16);
    assert_int_equal(gemm_slice_k(2, 9728, 8192, 304), 8192);
    assert_int_equal(geo_matmul(2, 9728, 8192, 64, 304).grid, 304);
    assert_int_equal(gemm_slice_k(2, 1024, 300, 304), 300);   /* under 2 x 256: never split */
    gpu_profile p = dev96();
    sim_kernel k;
    char err[256];
    assert_int_equal(sim_model(&p, geo_matmul(2, 1024, 8192, 32, 96).grid, 256, 0, 96e6, p.peak.fp32, &k, err, sizeof err), 0);
    assert_int_equal(k.workgroups, 96);                     /* 32 tiles x 3 slices */
    assert_true(fabs(k.total_s - 105e-6) < 1e-12);
    assert_int_equal(sim_model(&p, 32, 256, 0, 96e6, p.peak.fp32, &k, err, sizeof err), 0);
    assert_true(fabs(k.total_s - 305e-6) < 1e-12);
}

/* A matmul computes at its weights' dtype's peak (matrix cores), anything
 * else at fp32's: a compute-bound grid of 96 workgroups, F = 96e9, on a
 * device with fp16 4x fp32 takes F / Pi_fp16 = 0.25 ms + 5 us. A dtype the
 * profile has no peak for falls back to fp32's. */
static void matmul_at_its_dtypes_peak(void **state) {
    (void)state;
    gpu_profile p = dev96();
    p.peak.fp16 = 4 * p.peak.fp32;
    sim_kernel k;
    char err[256];
    assert_true(gpu_profile_matmul_peak(&p, DT_F16) == p.peak.fp16 && gpu_profile_matmul_peak(&p, DT_F32) == p.peak.fp32);
    assert_true(gpu_profile_matmul_peak(&p, DT_Q4_1) == 0);
    assert_int_equal(sim_model(&p, 96, 64, 96e9, 0, gpu_profile_matmul_peak(&p, DT_F16), &k, err, sizeof err), 0);
    assert_float_equal(k.total_s, 0.25e-3 + 5e-6, 1e-12);
    assert_int_equal(sim_model(&p, 96, 64, 96e9, 0, gpu_profile_matmul_peak(&p, DT_Q4_1), &k, err, sizeof err), 0);
    assert_float_equal(k.total_s, 1e-3 + 5e-6, 1e-12);
}

static void refuses_bad_profiles(void **state) {
    (void)state;
    gpu_profile p = dev96();
    sim_kernel k;
    char err[256];
    p.bandwidth = 0;
    assert_int_equal(sim_model(&p, 2, 256, 1, 1, p.peak.fp32, &k, err, sizeof err), -1);
    p = dev96();
    p.compute_units = 0;
    assert_int_equal(sim_model(&p, 2, 256, 1, 1, p.peak.fp32, &k, err, sizeof err), -1);
    p = dev96();
    assert_int_equal(sim_model(&p, 0, 256, 1, 1, p.peak.fp32, &k, err, sizeof err), -1);
}

/* A kernel's class (what one efficiency of hipath validate's fit covers):
 * a matmul by the bound that set its time, worked above: 2 workgroups
 * reading 96 MB are memory-bound, 192 computing 192 GFLOP compute-bound;
 * attention by phase; anything else elementwise. */
static void kernel_classes(void **state) {
    (void)state;
    gpu_profile p = dev96();
    sim_kernel k;
    char err[256];
    assert_int_equal(sim_model(&p, 2, 256, 2e9, 96e6, p.peak.fp32, &k, err, sizeof err), 0);
    assert_false(k.compute_bound);
    assert_int_equal(sim_class_of("gemv", &k), SIM_GEMM_MEMORY);
    assert_int_equal(sim_class_of("attention_decode", &k), SIM_ATTENTION_DECODE);
    assert_int_equal(sim_class_of("rmsnorm", &k), SIM_ELEMENTWISE);
    assert_int_equal(sim_model(&p, 192, 64, 192e9, 96e6, p.peak.fp32, &k, err, sizeof err), 0);
    assert_true(k.compute_bound);
    assert_int_equal(sim_class_of("gemm", &k), SIM_GEMM_COMPUTE);
    assert_int_equal(sim_class_of("attention_prefill", &k), SIM_ATTENTION_PREFILL);
    assert_string_equal(SIM_CLASS_NAME[SIM_GEMM_COMPUTE], "gemm_compute");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(small_grid_one_wave),
        cmocka_unit_test(full_grid_meets_the_bound),
        cmocka_unit_test(wavefronts_from_geometry),
        cmocka_unit_test(split_k_fills_the_cus),
        cmocka_unit_test(matmul_at_its_dtypes_peak),
        cmocka_unit_test(refuses_bad_profiles),
        cmocka_unit_test(kernel_classes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
