/*
 * test_bounds.c -- the labs' lower-bound calculator against values worked
 * out by hand for a tiny model, and GPU profiles with bad values refused.
 *
 * The tiny llama (untied): d = 8, f = 16, 2 layers, 2 heads, 1 KV head,
 * head_dim 4, vocab 32, max_position_embeddings 64. Weights bf16 (2 bytes),
 * KV bf16. The device: Pi = 1e6 FLOP/s (bf16), beta = 1e3 B/s, 1e6 bytes.
 *
 * Parameters: embedding 32x8 = 256, LM head 256; per layer q 8x8 = 64,
 * k 8x4 = 32, v 32, o 64, gate/up/down 8x16 = 128 each, two norms 16:
 * 592 per layer, 1184 for both; final norm 8. Total 1704, 3408 bytes.
 * KV per token: 2 (K and V) x 2 layers x 1 head x 4 x 2 bytes = 32 bytes.
 * Matmul multiply-adds per token: per layer 64+32+32+64+3x128 = 576, both
 * layers 1152; LM head 256.
 *
 * Prefill, B = 1, P = 4: linears 2 x 4 x 1152 = 9216; LM head on the last
 * position 2 x 256 = 512; attention: query i attends to i positions, sum
 * 1..4 = 10, x head_dim 4 = 40 multiply-adds for QK^T and 40 for AV per head
 * per layer: 2 x 80 FLOPs x 2 heads x 2 layers = 640. F = 10368.
 * R: all parameters but the embedding table (1448) plus 4 rows (32) = 1480
 * x 2 = 2960, plus the prompt's KV written 4 x 32 = 128: R = 3088.
 * T_compute = 10368 / 1e6 = 10.368 ms, T_memory = 3.088 s: memory-bound.
 *
 * Decode, B = 1, context 4: 2 x 1152 + 2 x 256 + attention 4 FLOPs x 2 heads
 * x 4 dims x 4 positions x 2 layers = 256: F = 3072. R: (1448 + 8) x 2 = 2912
 * weights + 4 x 32 = 128 KV = 3040; T_memory = 3.04 s.
 * Decode, B = 2: F = 6144; R = (1448 + 16) x 2 + 2 x 128 = 2928 + 256 = 3184.
 * B* = 2 x 1e6 / (2 x 1e3) = 1000.
 * Workspace (B 1, P 4): 4 tokens x (2x8 + 2x8 + 2x4 + 2x16 = 72) x 2 bytes
 * = 576, plus 32 fp32 logits = 128: 704. KV held: 4 x 32 = 128.
 *
 * Grouped int8, G = 4 (a bf16 scale per 4 weights along each matrix's input;
 * the rest bf16): scales per layer, out x in/4: q 8x2 = 16, k 4x2 = 8, v 8,
 * o 16, gate 16x2 = 32, up 32, down 8x4 = 32: 144, so 288 scales = 576
 * bytes; linear weights 1152 x 1; the rest (tables 512, norms 40) x 2 =
 * 1104. Weights 1152 + 576 + 1104 = 2832. b_W = 1 + 2/4 = 1.5; computed in
 * bf16 (1e6): B* = 1.5 x 1e6 / 2e3 = 750. Decode (B 1, L 4) reads 1728 of
 * linear weights and scales, LM head 256 x 2 = 512, norms 40 x 2 = 80, one
 * bf16 embedding row 16: 2336, + KV 128 = 2464.
 * G = 3 leaves partial groups, each with its scale: ceil(8/3) = 3 and
 * ceil(16/3) = 6 a row: q 24, k 12, v 12, o 24, gate 48, up 48, down 8x6 =
 * 48: 216 a layer, 432 = 864 bytes; weights 1152 + 864 + 1104 = 3120.
 * fp32 compute: the workspace's activations at 4 bytes, 4 x 72 x 4 + 128 = 1280.
 *
 * Over GPUs (docs/bounds.md, "More than one GPU"), the toy's interconnect:
 * 2 links of 1e3 B/s each, 1 ms a hop, at most 4 GPUs. The ring's rate
 * a GPU: a switch all its links, 2e3; a mesh min(links, N - 1) links, 1e3
 * for N = 2 and 2e3 for N = 3 or 4; through the host one link, 1e3. An
 * all-reduce of 1000 bytes over 4 on the switch: 2 x 3/4 x 1000 / 2e3 =
 * 0.75 s + 2 x 3 x 1 ms = 0.756 s. A send of 1000: 1000 / 2e3 + 1 ms on
 * the switch, 1000 / 1e3 + 1 ms on the mesh.
 * tp 2 (B 1, P = L = 4): a GPU has 1 head and keeps the one KV head
 * (copied). A layer: q 8x4 = 32, k 32, v 32, o 4x8 = 32, gate, up 8x8 = 64
 * each, down 64, norms 16: 336, 672 for both; the tables 2 x 16 x 8 = 256,
 * the final norm 8: 936 parameters, 1872 bytes. KV 2 x 2 x 1 x 4 x 2 = 32
 * bytes a token, as on one GPU. Decode: F = 2 x (2 x 320 + 8 x 16) +
 * attention 4 x 4 x 4 positions x 2 layers = 1536 + 128 = 1664; R = (936 -
 * 128 + half a row, 4) x 2 + 4 x 32 = 1624 + 128 = 1752: 1.752 s. Its 4
 * all-reduces of 8 x 2 = 16 bytes: 2 x 1/2 x 16 / 2e3 = 8 ms + 2 ms each, 40
 * ms: the step 1.792 s. Workspace 4 x (16 + 8 + 8 + 16) x 2 + 32 x 4 = 512;
 * 1872 + 128 + 512 = 2512. B_fit: (1e6 - 1872) / (128 + 384 + 128) =
 * 1559.6: 1559.
 * pp 2: a layer each; the first holds the embedding, 592 + 256 = 848
 * parameters, 1696 bytes; the last the LM head and final norm, 856, 1712
 * bytes, KV 16 a token, workspace 576 + 128 = 704: 1712 + 64 + 704 = 2480,
 * the fullest. Decode: the first reads (592 + 8) x 2 + 64 = 1264 bytes, the
 * last (592 + 256 + 8) x 2 + 64 = 1776: 1.264 + 1.776 s + one hand-off of
 * 16 bytes, 16 / 2e3 + 1 ms = 9 ms: 3.049 s. B_fit: the last (1e6 - 1712) /
 * (64 + 704) = 1299.9, the first (1e6 - 1696) / 640 = 1559.8: 1299.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "labs/bounds.h"
#include "layers/gpu/link.h"

static char dir[] = "/tmp/hipath_bounds_XXXXXX";

static const char *write_file(const char *name, const char *text) {
    static char path[4][256];
    static int next;
    char *p = path[next++ % 4];
    snprintf(p, 256, "%s/%s", dir, name);
    FILE *f = fopen(p, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
    return p;
}

static const char *tiny_config(const char *arch, int tied) {
    static char text[512];
    snprintf(text, sizeof text,
             "{\"architectures\": [\"%s\"], \"hidden_size\": 8, \"intermediate_size\": 16,"
             " \"num_hidden_layers\": 2, \"num_attention_heads\": 2, \"num_key_value_heads\": 1,"
             " \"vocab_size\": 32, \"max_position_embeddings\": 64, \"tie_word_embeddings\": %s}",
             arch, tied ? "true" : "false");
    return write_file("config.json", text);
}

/* A profile with the given values spliced in, written to toy.json. */
static const char *profile_json(const char *bandwidth, const char *memory, const char *peak, const char *wave) {
    static char text[1024];
    snprintf(text, sizeof text,
             "{\"name\": \"toy\", \"arch\": \"toy\", \"source\": \"by hand\", \"memory_bytes\": %s,"
             " \"memory_bandwidth_bytes_per_s\": %s, \"peak_flops\": {%s},"
             " \"compute_units\": 4, \"wavefront_size\": %s, \"host_link_bytes_per_s\": 1e9, \"launch_latency_s\": 5e-6}",
             memory, bandwidth, peak, wave);
    return write_file("toy.json", text);
}

/* The toy with an interconnect: 2 links of 1e3 B/s, 1 ms a hop, 4 GPUs. */
static const char *link_json(const char *topology) {
    static char text[1024];
    snprintf(text, sizeof text,
             "{\"name\": \"toy\", \"arch\": \"toy\", \"source\": \"by hand\", \"memory_bytes\": 1e6,"
             " \"memory_bandwidth_bytes_per_s\": 1e3, \"peak_flops\": {\"fp32\": 5e5, \"bf16\": 1e6},"
             " \"compute_units\": 4, \"wavefront_size\": 32, \"host_link_bytes_per_s\": 1e9, \"launch_latency_s\": 5e-6,"
             " \"interconnect\": {\"name\": \"toy link\", \"source\": \"by hand\", \"topology\": \"%s\", \"links\": 2,"
             " \"link_bytes_per_s\": 1e3, \"latency_s\": 1e-3, \"max_gpus\": 4}}", topology);
    return write_file("link.json", text);
}

static const char *GOOD_PEAK = "\"fp32\": 5e5, \"fp16\": 1e6, \"bf16\": 1e6, \"int8\": 2e6";

/* What a test works on: the tiny llama, the toy device, the calculator's
 * answer or its reason. */
typedef struct {
    model_config c;
    gpu_profile g;
    bounds_result r;
    char err[512];
} toy;

static void load(toy *t, const char *arch, int tied) {
    t->err[0] = 0;
    assert_int_equal(model_config_load(&t->c, tiny_config(arch, tied), t->err, sizeof t->err), 0);
    assert_int_equal(gpu_profile_load(&t->g, profile_json("1e3", "1e6", GOOD_PEAK, "32"), t->err, sizeof t->err), 0);
}

/* bounds_compute_with on the toy: 0, or -1 with the reason in t->err. */
static int compute(toy *t, bounds_input in, bounds_options opt) {
    t->err[0] = 0;
    return bounds_compute_with(&t->c, &t->g, &in, &opt, &t->r, t->err, sizeof t->err);
}

#define NEAR(a, b) assert_true(fabs((double)(a) - (double)(b)) <= 1e-9 * fabs((double)(b)) + 1e-12)

static const bounds_options DEFAULTS = { 0 };

static void test_hand_worked(void **state) {
    (void)state;
    toy t;
    load(&t, "LlamaForCausalLM", 0);
    bounds_input in = { "bf16", "bf16", 1, 4, 4 };
    /* bounds_compute is bounds_compute_with hipath's defaults. */
    assert_int_equal(bounds_compute(&t.c, &t.g, &in, &t.r, t.err, sizeof t.err), 0);
    bounds_result *r = &t.r;
    assert_int_equal(r->params, 1704);
    NEAR(r->weights_bytes, 3408);
    NEAR(r->kv_bytes_per_token, 32);
    NEAR(r->prefill.flops, 10368);
    NEAR(r->prefill.weight_bytes, 2960);
    NEAR(r->prefill.kv_bytes, 128);
    NEAR(r->prefill.bytes, 3088);
    NEAR(r->prefill.t_compute, 10368e-6);
    NEAR(r->prefill.t_memory, 3.088);
    NEAR(r->prefill.t_lower, 3.088);
    NEAR(r->decode.flops, 3072);
    NEAR(r->decode.bytes, 3040);
    NEAR(r->decode.t_memory, 3.04);
    NEAR(r->decode.intensity, 3072.0 / 3040);
    assert_false(bounds_compute_bound(&r->decode));
    NEAR(r->b_star, 1000);
    NEAR(r->capacity.workspace_bytes, 704);
    NEAR(r->capacity.kv_bytes, 128);
    assert_true(r->capacity.fits);

    in.batch = 2;
    assert_int_equal(compute(&t, in, DEFAULTS), 0);
    NEAR(r->decode.flops, 6144);
    NEAR(r->decode.weight_bytes, 2928);
    NEAR(r->decode.kv_bytes, 256);

    /* Compute-bound once the FLOPs per byte pass Pi / beta = 1000: make
     * bandwidth huge, and decode must flip. */
    t.g.bandwidth = 1e12;
    in.batch = 1;
    assert_int_equal(compute(&t, in, DEFAULTS), 0);
    assert_true(bounds_compute_bound(&r->decode));
    NEAR(r->decode.t_lower, 3072e-6);
}

static void test_variants(void **state) {
    (void)state;
    toy t;
    bounds_input in = { "bf16", "bf16", 1, 4, 4 };
    /* qwen2 adds q, k, v biases: 8 + 4 + 4 = 16 per layer, 1704 + 32. */
    load(&t, "Qwen2ForCausalLM", 0);
    assert_int_equal(compute(&t, in, DEFAULTS), 0);
    assert_int_equal(t.r.params, 1736);
    /* Tied: no separate LM head, 1448 parameters; decode still reads the
     * table once (as the LM head): (1448 + 8 rows) x 2 = 2912 as untied. */
    load(&t, "LlamaForCausalLM", 1);
    assert_int_equal(compute(&t, in, DEFAULTS), 0);
    assert_int_equal(t.r.params, 1448);
    NEAR(t.r.decode.weight_bytes, 2912);
    /* q4_1: 0.625 bytes a weight, int8 peak 2e6: B* = 0.625 x 2e6 / 2e3 = 625;
     * fp32 KV doubles KV per token to 64. */
    in.dtype = "q4_1";
    in.kv_dtype = "fp32";
    assert_int_equal(compute(&t, in, DEFAULTS), 0);
    NEAR(t.r.weights_bytes, 1448 * 0.625);
    NEAR(t.r.b_star, 625);
    NEAR(t.r.kv_bytes_per_token, 64);
    /* q4_0: 4 bits and an f16 scale per 32 weights, 18 bytes a block: 0.5625 a weight. */
    in.dtype = "q4_0";
    assert_int_equal(compute(&t, in, DEFAULTS), 0);
    NEAR(t.r.weights_bytes, 1448 * 18.0 / 32);
    NEAR(t.r.b_star, 18.0 / 32 * 2e6 / 2e3);
    /* Too small a device: 1e3 bytes < 1448 x 2. */
    in.dtype = "bf16";
    t.g.memory_bytes = 1e3;
    assert_int_equal(compute(&t, in, DEFAULTS), 0);
    assert_false(t.r.capacity.fits);
}

/* Storage and compute dtypes apart, scales counted, the chapter's capacity
 * conventions: the values worked in the file's comment. */
static void test_options(void **state) {
    (void)state;
    toy t;
    load(&t, "LlamaForCausalLM", 0);
    bounds_input in = { "int8", "bf16", 1, 4, 4 };
    assert_int_equal(compute(&t, in, (bounds_options){ .compute_dtype = "bf16", .group_size = 4 }), 0);
    assert_int_equal(t.r.params, 1704);
    NEAR(t.r.weights_bytes, 2832);
    NEAR(t.r.b_w, 1.5);
    NEAR(t.r.peak, 1e6);
    NEAR(t.r.b_star, 750);
    NEAR(t.r.decode.weight_bytes, 2336);
    NEAR(t.r.decode.bytes, 2464);
    NEAR(t.r.decode.flops, 3072);   /* FLOPs do not depend on storage */
    assert_int_equal(compute(&t, in, (bounds_options){ .compute_dtype = "bf16", .group_size = 3 }), 0);
    NEAR(t.r.weights_bytes, 3120);
    /* Without --compute-dtype int8 weights run at the int8 peak, as before. */
    assert_int_equal(compute(&t, in, DEFAULTS), 0);
    NEAR(t.r.peak, 2e6);
    NEAR(t.r.weights_bytes, 1704);
    NEAR(t.r.b_star, 1000);
    /* int4 flat: half a byte a weight. */
    in.dtype = "int4";
    assert_int_equal(compute(&t, in, DEFAULTS), 0);
    NEAR(t.r.weights_bytes, 852);
    /* fp32 compute doubles the activations; a fixed workspace replaces the
     * estimate; decimal GB reads the device's 1e6 bytes as 1e6 / 2^30 GB. */
    in.dtype = "bf16";
    assert_int_equal(compute(&t, in, (bounds_options){ .compute_dtype = "fp32" }), 0);
    NEAR(t.r.capacity.workspace_bytes, 1280);
    NEAR(t.r.peak, 5e5);
    assert_int_equal(compute(&t, in, (bounds_options){ .workspace_bytes = 100, .decimal_gb = 1 }), 0);
    NEAR(t.r.capacity.workspace_bytes, 100);
    NEAR(t.r.capacity.device_bytes, 1e6 * 1e9 / 1073741824.0);
    NEAR(t.r.capacity.total_bytes, 3408 + 128 + 100);
}

static void test_bad_input(void **state) {
    (void)state;
    toy t;
    load(&t, "LlamaForCausalLM", 0);
    struct { bounds_input in; bounds_options opt; const char *says; } CASES[] = {
        { { "bf16", "bf16", 0, 4, 4 }, { 0 }, "batch 0" },
        { { "bf16", "bf16", 1, 4, 0 }, { 0 }, "context 0" },
        { { "bf16", "bf16", 1, 4, 65 }, { 0 }, "context 65" },
        { { "bf16", "bf16", 1, 65, 4 }, { 0 }, "prompt length 65" },
        { { "bf17", "bf16", 1, 4, 4 }, { 0 }, "bf17" },
        { { "bf16", "q4_1", 1, 4, 4 }, { 0 }, "KV dtype 'q4_1'" },
        { { "bf16", "bf16", 1, 4, 4 }, { .group_size = 128 }, "only int8 and int4" },
        { { "q4_1", "bf16", 1, 4, 4 }, { .group_size = 32 }, "not q4_1" },
        { { "int8", "bf16", 1, 4, 4 }, { .group_size = -1 }, "group size -1" },
        { { "int8", "bf16", 1, 4, 4 }, { .compute_dtype = "q4_1" }, "compute dtype 'q4_1'" },
        { { "int8", "bf16", 1, 4, 4 }, { .workspace_bytes = -1 }, "workspace" },
    };
    for (size_t i = 0; i < sizeof CASES / sizeof *CASES; i++) {
        assert_int_equal(compute(&t, CASES[i].in, CASES[i].opt), -1);
        assert_non_null(strstr(t.err, CASES[i].says));
    }
    /* Sizes past 2^53 parameters (here 1e9 x 1e9 x 1e6 layers) would wrap
     * an int64 count negative: refused, saying why. */
    const char *absurd = write_file("broken.json", "{\"architectures\": [\"LlamaForCausalLM\"], \"hidden_size\": 1000000000,"
                                    " \"intermediate_size\": 1000000000, \"num_hidden_layers\": 1000000, \"num_attention_heads\": 1000,"
                                    " \"vocab_size\": 1000}");
    assert_int_equal(model_config_load(&t.c, absurd, t.err, sizeof t.err), 0);
    assert_int_equal(compute(&t, (bounds_input){ "bf16", "bf16", 1, 4, 4 }, DEFAULTS), -1);
    assert_non_null(strstr(t.err, "2^53"));
    /* A config without hidden_size is refused by name. */
    const char *p = write_file("broken.json", "{\"architectures\": [\"LlamaForCausalLM\"], \"intermediate_size\": 16}");
    assert_int_equal(model_config_load(&t.c, p, t.err, sizeof t.err), -1);
    assert_non_null(strstr(t.err, "hidden_size"));
}

static void test_profile_refused(void **state) {
    (void)state;
    gpu_profile g;
    char err[512];
    struct { const char *bandwidth, *memory, *peak, *wave, *key; } CASES[] = {
        { "0", "1e6", GOOD_PEAK, "32", "memory_bandwidth_bytes_per_s" },
        { "-5e11", "1e6", GOOD_PEAK, "32", "memory_bandwidth_bytes_per_s" },
        { "1e3", "-1", GOOD_PEAK, "32", "memory_bytes" },
        { "1e3", "1e6", "\"fp32\": 1, \"fp16\": 1, \"bf16\": -1", "32", "peak_flops.bf16" },
        { "1e3", "1e6", "\"fp32\": 1, \"int8\": \"fast\"", "32", "peak_flops.int8" },
        { "1e3", "1e6", GOOD_PEAK, "48", "wavefront_size" },
        { "1e3", "\"lots\"", GOOD_PEAK, "64", "memory_bytes" },
    };
    for (size_t i = 0; i < sizeof CASES / sizeof *CASES; i++) {
        const char *path = profile_json(CASES[i].bandwidth, CASES[i].memory, CASES[i].peak, CASES[i].wave);
        err[0] = 0;
        assert_int_equal(gpu_profile_load(&g, path, err, sizeof err), -1);
        assert_non_null(strstr(err, CASES[i].key));
    }
    assert_int_equal(gpu_profile_load(&g, "no-such-gpu", err, sizeof err), -1);
    assert_non_null(strstr(err, "unknown device 'no-such-gpu'"));
    assert_int_equal(gpu_profile_load(&g, write_file("bad.json", "{not json"), err, sizeof err), -1);
    assert_non_null(strstr(err, "not valid JSON"));
}

/* A profile gives only the peaks its questions use: one without int8
 * answers a bf16 question; an int8 one is refused naming the file and key,
 * and so is the fp32 peak the simulated device asks for. */
static void test_profile_peaks(void **state) {
    (void)state;
    toy t;
    double peak;
    load(&t, "LlamaForCausalLM", 0);
    const char *path = profile_json("1e3", "1e6", "\"bf16\": 1e6", "32");
    assert_int_equal(gpu_profile_load(&t.g, path, t.err, sizeof t.err), 0);
    bounds_input in = { "bf16", "bf16", 1, 4, 4 };
    assert_int_equal(compute(&t, in, DEFAULTS), 0);
    NEAR(t.r.peak, 1e6);
    in.dtype = "int8";
    assert_int_equal(compute(&t, in, DEFAULTS), -1);
    assert_non_null(strstr(t.err, path));
    assert_non_null(strstr(t.err, "missing or non-numeric key peak_flops.int8"));
    /* ... unless int8 weights are computed in bf16. */
    assert_int_equal(compute(&t, in, (bounds_options){ .compute_dtype = "bf16" }), 0);
    assert_int_equal(gpu_profile_peak(&t.g, "fp32", &peak, t.err, sizeof t.err), -1);
    assert_non_null(strstr(t.err, "peak_flops.fp32"));
}

/* The shipped W7900 profile by name, against the datasheet (run from the
 * repository root, as tests/run.sh does). */
static void test_w7900_datasheet(void **state) {
    (void)state;
    gpu_profile g;
    char err[512];
    if (access("layers/gpu/profiles/w7900.json", R_OK)) skip();
    assert_int_equal(gpu_profile_load(&g, "w7900", err, sizeof err), 0);
    assert_int_equal(g.compute_units, 96);
    assert_int_equal(g.wavefront_size, 32);
    NEAR(g.bandwidth, 864e9);
    NEAR(g.memory_bytes, 48.0 * 1024 * 1024 * 1024);
    NEAR(g.peak.fp32, 61.3e12);
    NEAR(g.peak.fp16, 122.6e12);
}

/* The ring all-reduce and a send against the file comment's arithmetic. */
static void test_ring(void **state) {
    (void)state;
    gpu_profile g;
    char err[512];
    assert_int_equal(gpu_profile_load(&g, link_json("switch"), err, sizeof err), 0);
    gpu_all_reduce a = gpu_all_reduce_time(&g, 4, 1000);
    NEAR(gpu_ring_bandwidth(&g, 4), 2e3);
    NEAR(a.bandwidth_s, 0.75);
    NEAR(a.latency_s, 6e-3);
    NEAR(a.total_s, 0.756);
    NEAR(gpu_send_time(&g, 1000), 0.501);
    assert_true(gpu_all_reduce_time(&g, 1, 1000).total_s == 0);
    assert_int_equal(gpu_profile_load(&g, link_json("mesh"), err, sizeof err), 0);
    NEAR(gpu_ring_bandwidth(&g, 2), 1e3);
    NEAR(gpu_ring_bandwidth(&g, 3), 2e3);
    NEAR(gpu_ring_bandwidth(&g, 4), 2e3);
    NEAR(gpu_all_reduce_time(&g, 2, 1000).total_s, 2 * 0.5 * 1000 / 1e3 + 2e-3);
    NEAR(gpu_send_time(&g, 1000), 1.001);
    assert_int_equal(gpu_profile_load(&g, link_json("host"), err, sizeof err), 0);
    NEAR(gpu_ring_bandwidth(&g, 4), 1e3);
}

/* tp 2 and pp 2 on the tiny model: the file comment's figures. */
static void test_parallel(void **state) {
    (void)state;
    toy t;
    load(&t, "LlamaForCausalLM", 0);
    assert_int_equal(gpu_profile_load(&t.g, link_json("switch"), t.err, sizeof t.err), 0);
    bounds_input in = { "bf16", "bf16", 1, 4, 4 };
    bounds_parallel *p = &t.r.parallel;
    assert_int_equal(compute(&t, in, (bounds_options){ .tp = 2 }), 0);
    NEAR(t.r.decode.t_memory, 3.04);   /* one GPU's figures stay */
    assert_int_equal(p->gpus, 2);
    assert_int_equal(p->heads, 1);
    assert_int_equal(p->kv_heads, 1);
    NEAR(p->per_gpu.weights_bytes, 1872);
    NEAR(p->kv_bytes_per_token, 32);
    NEAR(p->per_gpu.workspace_bytes, 512);
    NEAR(p->per_gpu.total_bytes, 2512);
    assert_true(p->per_gpu.fits);
    assert_int_equal(p->b_fit, 1559);
    NEAR(p->decode.t_compute, 1664e-6);
    NEAR(p->decode.t_memory, 1.752);
    NEAR(p->decode.all_reduce.bytes, 16);
    assert_int_equal(p->decode.all_reduce.per_step, 4);
    NEAR(p->decode.all_reduce.bandwidth_s, 0.032);
    NEAR(p->decode.all_reduce.latency_s, 0.008);
    NEAR(p->decode.t_step, 1.792);
    NEAR(p->decode.comm_share, 0.04 / 1.792);

    assert_int_equal(compute(&t, in, (bounds_options){ .pp = 2 }), 0);
    assert_int_equal(p->stage_layers[0], 1);
    assert_int_equal(p->stage_layers[1], 1);
    assert_int_equal(p->fullest, 1);
    NEAR(p->per_gpu.weights_bytes, 1712);
    NEAR(p->per_gpu.total_bytes, 2480);
    assert_int_equal(p->b_fit, 1299);
    assert_int_equal(p->decode.all_reduce.per_step, 0);
    NEAR(p->decode.t_memory, 1.264 + 1.776);
    NEAR(p->decode.send_s, 9e-3);
    NEAR(p->decode.t_step, 3.049);

    /* Refused, saying why. */
    struct { bounds_options opt; const char *says; } BAD[] = {
        { { .tp = -1 }, "tp -1, pp 1" },
        { { .pp = -2 }, "pp -2" },
        { { .tp = 3 }, "divide the 2 attention heads" },
        { { .pp = 3 }, "more stages than the 2 layers" },
    };
    for (size_t i = 0; i < sizeof BAD / sizeof *BAD; i++) {
        assert_int_equal(compute(&t, in, BAD[i].opt), -1);
        assert_non_null(strstr(t.err, BAD[i].says));
    }
    assert_int_equal(compute(&t, in, (bounds_options){ .tp = 2, .pp = 2 }), 0);   /* 4 GPUs: as many as it joins */
    /* More GPUs than the interconnect joins (a config of 8 heads, 8 layers),
     * and a profile without one. */
    const char *wide = write_file("config.json", "{\"architectures\": [\"LlamaForCausalLM\"], \"hidden_size\": 32,"
                                  " \"intermediate_size\": 16, \"num_hidden_layers\": 8, \"num_attention_heads\": 8,"
                                  " \"vocab_size\": 32, \"max_position_embeddings\": 64}");
    assert_int_equal(model_config_load(&t.c, wide, t.err, sizeof t.err), 0);
    assert_int_equal(compute(&t, in, (bounds_options){ .tp = 4, .pp = 2 }), -1);
    assert_non_null(strstr(t.err, "8 GPUs: toy joins at most 4 in one server"));
    assert_int_equal(gpu_profile_load(&t.g, profile_json("1e3", "1e6", GOOD_PEAK, "32"), t.err, sizeof t.err), 0);
    assert_int_equal(compute(&t, in, (bounds_options){ .pp = 2 }), -1);
    assert_non_null(strstr(t.err, "no interconnect"));
    assert_int_equal(compute(&t, in, (bounds_options){ .tp = 1, .pp = 1 }), 0);
}

static int setup(void **state) { (void)state; return mkdtemp(dir) ? 0 : -1; }
static int teardown(void **state) {
    (void)state;
    const char *names[] = { "config.json", "toy.json", "broken.json", "bad.json", "link.json" };
    char p[256];
    for (size_t i = 0; i < sizeof names / sizeof *names; i++) { snprintf(p, sizeof p, "%s/%s", dir, names[i]); unlink(p); }
    return rmdir(dir);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_hand_worked),
        cmocka_unit_test(test_variants),
        cmocka_unit_test(test_options),
        cmocka_unit_test(test_bad_input),
        cmocka_unit_test(test_profile_refused),
        cmocka_unit_test(test_profile_peaks),
        cmocka_unit_test(test_w7900_datasheet),
        cmocka_unit_test(test_ring),
        cmocka_unit_test(test_parallel),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
