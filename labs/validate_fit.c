/*
 * validate_fit.c -- the kernel-class efficiencies fitted to published rows
 * (validate_fit.h): Levenberg-Marquardt on log time, then leave-one-source-out.
 */
#include "labs/validate_fit.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define P (VALIDATE_CLASSES + VALIDATE_COLUMNS)   /* mu, then delta */
enum { LAUNCH = SIM_CLASSES, REQUEST };

const char *const VALIDATE_CLASS_NAME[VALIDATE_CLASSES] = { "gemm_compute", "gemm_memory", "attention_prefill",
                                                            "attention_decode", "elementwise", "launch", "request" };

const validate_column VALIDATE_COLUMN[VALIDATE_COLUMNS] = {
    { "gemm_compute/llama.cpp-cuda-quant", SIM_GEMM_COMPUTE, "llama.cpp CUDA, q4_0/q8_0 prompt matmuls: of the fp16 peak (dequantized to fp16 GEMMs)" },
    { "gemm_compute/llama.cpp-rocm-quant", SIM_GEMM_COMPUTE, "llama.cpp ROCm, q4_0/q8_0 prompt matmuls: of the fp16 peak" },
    { "gemm_compute/llama.cpp-dense", SIM_GEMM_COMPUTE, "llama.cpp fp16 prompt matmuls (cuBLAS): of the fp16 peak" },
    { "gemm_compute/served", SIM_GEMM_COMPUTE, "TensorRT-LLM/vLLM/SGLang matmuls bound by compute: of the dtype's peak" },
    { "gemm_memory/llama.cpp-cuda", SIM_GEMM_MEMORY, "llama.cpp CUDA weight-bound mat-vec (any format): of the bandwidth" },
    { "gemm_memory/llama.cpp-rocm", SIM_GEMM_MEMORY, "llama.cpp ROCm weight-bound mat-vec: of the bandwidth" },
    { "gemm_memory/served", SIM_GEMM_MEMORY, "served engines' weight-bound matmuls: of the bandwidth" },
    { "attention_prefill/llama.cpp-cuda", SIM_ATTENTION_PREFILL, "llama.cpp CUDA prompt attention: of the fp16 matrix peak" },
    { "attention_prefill/llama.cpp-rocm", SIM_ATTENTION_PREFILL, "llama.cpp ROCm prompt attention" },
    { "attention_prefill/served", SIM_ATTENTION_PREFILL, "served engines' prompt attention (fused, flash): of the fp16 matrix peak" },
    { "attention_decode/llama.cpp-cuda", SIM_ATTENTION_DECODE, "llama.cpp CUDA decode attention: of the bandwidth for the KV reads" },
    { "attention_decode/llama.cpp-rocm", SIM_ATTENTION_DECODE, "llama.cpp ROCm decode attention" },
    { "attention_decode/served", SIM_ATTENTION_DECODE, "served engines' paged decode attention: of the bandwidth" },
    { "elementwise", SIM_ELEMENTWISE, "norms, RoPE, SwiGLU, adds, KV appends: of the model's rate (any engine)" },
    { "launch/llama.cpp-cuda", LAUNCH, "llama.cpp CUDA cost per kernel against 5 us a launch (CUDA graphs, fused kernels)" },
    { "launch/llama.cpp-rocm", LAUNCH, "llama.cpp ROCm cost per kernel against 5 us a launch" },
    { "launch/served", LAUNCH, "served engines' cost per kernel against 5 us a launch" },
    { "request/llama.cpp-cuda", REQUEST, "llama.cpp CUDA host time per timed request against 1 ms (graph build, synchronise)" },
    { "request/llama.cpp-rocm", REQUEST, "llama.cpp ROCm host time per timed request against 1 ms" },
    { "request/served", REQUEST, "served engines' host time per request against 1 ms (setup, sampling, copies back)" },
};

double validate_tokens(const validate_row *r) {
    double n = !strcmp(r->phase, "prefill") ? (double)r->batch * r->prompt_len
             : !strcmp(r->phase, "decode") ? r->batch : (double)r->batch * r->gen_len;
    return r->per_gpu ? n / (r->tp * r->pp * r->ep * r->dp) : n;
}

/* The timed requests in a row's unit: one prompt's prefill, one batch's
 * run (e2e), one of tgN's N steps (decode). */
double validate_requests(const validate_row *r) { return !strcmp(r->phase, "decode") ? 1.0 / r->gen_len : 1; }

/* A row's engine family (0 llama.cpp CUDA, 1 llama.cpp ROCm, 2 served)
 * and compute-bound GEMM group (0 CUDA quantized, 1 ROCm quantized, 2
 * llama.cpp dense, 3 served): a weight-bound GEMM reads its bytes at the
 * family's rate whatever their format, a compute-bound one runs another
 * kernel for each (dequantize + fp16 GEMM, cuBLAS, the engine's own). */
static int family(const validate_row *r) {
    if (strncmp(r->engine, "llama.cpp", 9)) return 2;
    return strstr(r->engine, "ROCm") || strstr(r->engine, "HIP") ? 1 : 0;
}
static int quantized(const validate_row *r) { return !strcmp(r->dtype, "q4_0") || !strcmp(r->dtype, "q4_1") || !strcmp(r->dtype, "q8_0"); }

int validate_column_of(const validate_row *r, int c) {
    int f = family(r), g = f == 2 ? 3 : !quantized(r) ? 2 : f;
    switch (c) {
    case SIM_GEMM_COMPUTE: return g;
    case SIM_GEMM_MEMORY: return 4 + f;
    case SIM_ATTENTION_PREFILL: return 7 + f;
    case SIM_ATTENTION_DECODE: return 10 + f;
    case SIM_ELEMENTWISE: return 13;
    case LAUNCH: return 14 + f;
    default: return 17 + f;
    }
}

/* The waves (or launches, or requests) of row r that class c's multiplier
 * scales. llama.cpp's quantized prompt matmuls are timed at the fp16 peak,
 * not the int8 one the wave model gives q4_0: in these builds a prompt's
 * matmul dequantizes to fp16 and calls cuBLAS/hipBLAS. Prompt attention
 * too, not at the fp32 rate hipath's own kernel has: every engine here
 * runs Q K^T and P V on the matrix cores (flash attention, or cuBLAS's
 * fp16 batched GEMMs). */
static double part(const validate_row *r, int c) {
    if (c == SIM_GEMM_COMPUTE && family(r) < 2 && quantized(r)) return r->class_s[c] * r->int8_over_fp16;
    if (c == SIM_ATTENTION_PREFILL) return r->class_s[c] * r->fp32_over_fp16;
    return c == LAUNCH ? r->launch_s : c == REQUEST ? validate_requests(r) * VALIDATE_REQUEST_S : r->class_s[c];
}

/* Modeled seconds of r under parameters p; g[k] (when given) their
 * derivatives d log T / d p[k]. */
static double seconds(const double *p, const validate_row *r, double *g) {
    double s = r->copy_s + r->collective_s + r->handoff_s, term[VALIDATE_CLASSES];   /* modeled from the profile's links, not fitted */
    for (int c = 0; c < VALIDATE_CLASSES; c++) {
        int j = validate_column_of(r, c);
        s += term[c] = part(r, c) * exp(p[c] + p[VALIDATE_CLASSES + j]);
    }
    if (g) {
        memset(g, 0, P * sizeof *g);
        for (int c = 0; c < VALIDATE_CLASSES; c++) {
            g[c] += term[c] / s;
            g[VALIDATE_CLASSES + validate_column_of(r, c)] += term[c] / s;
        }
    }
    return s;
}

static double lambda(int k) { return k < VALIDATE_CLASSES ? VALIDATE_LAMBDA_MU : VALIDATE_LAMBDA_DELTA; }

/* Row i's residual log(modeled / measured time) under p. */
static double residual(const validate_table *t, int i, const double *p, double *g) {
    const validate_row *r = &t->row[i];
    return log(seconds(p, r, g) / (validate_tokens(r) / r->measured));
}

/* The pseudo-Huber loss of a residual z: z^2 near 0, 2 s |z| far out. */
static double rho(double z) {
    double s = VALIDATE_HUBER;
    return 2 * s * s * (sqrt(1 + z * z / (s * s)) - 1);
}

/* The objective at p over the rows in use. */
static double objective(const validate_table *t, const int *use, const double *p) {
    double f = 0;
    for (int i = 0; i < t->n; i++) if (use[i]) f += rho(residual(t, i, p, NULL));
    for (int k = 0; k < P; k++) f += lambda(k) * p[k] * p[k];
    return f;
}

/* Solve A x = b (n x n, A and b overwritten) by elimination with partial pivoting. */
static void solve(double A[P][P], double *b, double *x) {
    for (int c = 0; c < P; c++) {
        int m = c;
        for (int r = c + 1; r < P; r++) if (fabs(A[r][c]) > fabs(A[m][c])) m = r;
        for (int k = 0; k < P; k++) { double v = A[c][k]; A[c][k] = A[m][k]; A[m][k] = v; }
        double v = b[c]; b[c] = b[m]; b[m] = v;
        for (int r = c + 1; r < P; r++) {
            double f = A[r][c] / A[c][c];
            for (int k = c; k < P; k++) A[r][k] -= f * A[c][k];
            b[r] -= f * b[c];
        }
    }
    for (int c = P - 1; c >= 0; c--) {
        double s = b[c];
        for (int k = c + 1; k < P; k++) s -= A[c][k] * x[k];
        x[c] = s / A[c][c];
    }
}

void validate_fit_rows(const validate_table *t, const int *use, validate_fit *f) {
    double p[P] = { 0 }, g[P], step[P], trial[P], eta = 1e-3, F = objective(t, use, p);
    int it = 0;
    for (; it < 500; it++) {
        double A[P][P] = { { 0 } }, b[P];
        for (int k = 0; k < P; k++) b[k] = -lambda(k) * p[k], A[k][k] = lambda(k) + eta;
        for (int i = 0; i < t->n; i++) {
            if (!use[i]) continue;
            double r = residual(t, i, p, g), w = 1 / sqrt(1 + r * r / (VALIDATE_HUBER * VALIDATE_HUBER));   /* rho'(r) / 2r */
            for (int k = 0; k < P; k++) {
                b[k] -= w * g[k] * r;
                for (int l = 0; l < P; l++) A[k][l] += w * g[k] * g[l];
            }
        }
        solve(A, b, step);
        double most = 0;
        for (int k = 0; k < P; k++) trial[k] = p[k] + step[k], most = fmax(most, fabs(step[k]));
        double Ft = objective(t, use, trial);
        if (Ft <= F) {
            memcpy(p, trial, sizeof p);
            F = Ft;
            eta = fmax(eta / 10, 1e-12);
            if (most < 1e-12) break;
        } else if ((eta *= 10) > 1e12) break;
    }
    memcpy(f->mu, p, sizeof f->mu);
    memcpy(f->delta, p + VALIDATE_CLASSES, sizeof f->delta);
    f->iterations = it;
    f->rows = 0;
    double ss = 0;
    for (int i = 0; i < t->n; i++)
        if (use[i]) {
            double r = residual(t, i, p, NULL);
            ss += r * r;
            f->rows++;
        }
    f->rms = f->rows ? sqrt(ss / f->rows) : NAN;
}

double validate_predict(const validate_fit *f, const validate_row *r) {
    double p[P];
    memcpy(p, f->mu, sizeof f->mu);
    memcpy(p + VALIDATE_CLASSES, f->delta, sizeof f->delta);
    return validate_tokens(r) / seconds(p, r, NULL);
}

static int ran(const validate_row *r) { return !r->why[0] && !isnan(r->modeled); }

int validate_fit_all(validate_table *t) {
    int *use = calloc(t->n ? t->n : 1, sizeof *use);
    if (!use) return -1;
    for (int i = 0; i < t->n; i++) use[i] = ran(&t->row[i]) && t->row[i].calibrate;
    validate_fit_rows(t, use, &t->fit);
    for (int i = 0; i < t->n; i++) if (ran(&t->row[i])) t->row[i].calibrated = validate_predict(&t->fit, &t->row[i]);
    /* each source left out: fitted to every other row that ran, predicting its own */
    for (int s = 0; s < t->n; s++) {
        const validate_row *r = &t->row[s];
        int first = 1;
        for (int i = 0; i < s && first; i++) first = !ran(&t->row[i]) || strcmp(t->row[i].source, r->source);
        if (!ran(r) || !first) continue;
        validate_fit f;
        for (int i = 0; i < t->n; i++) use[i] = ran(&t->row[i]) && strcmp(t->row[i].source, r->source);
        validate_fit_rows(t, use, &f);
        for (int i = 0; i < t->n; i++)
            if (ran(&t->row[i]) && !strcmp(t->row[i].source, r->source)) t->row[i].loso = validate_predict(&f, &t->row[i]);
    }
    free(use);
    return 0;
}
