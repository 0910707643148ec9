#!/bin/sh
# The HIP quantized GEMV's math without a GPU: kernels/hip/quant.h is
# host-callable, so nvcc builds it into a CPU program that plays every lane
# of a wavefront of 32 and of 64 (qrow_lane) and sums them, as wave_sum
# does. Rows of Q8_0, Q4_0 and Q4_1 come from gguf-py's quantizer (an
# independent implementation) with an outlier per row and a block count
# that no wavefront step divides; the reference is gguf-py's dequantize,
# then float64 dot products. Each weight (qweight: the embedding and GEMM
# path) must equal the reference's, and each row's dot product must agree
# to 1e-5 of sum |w x|. Weights start at the least alignment the kernels
# allow (2 bytes; 4 for Q4_1). Exit 77 without nvcc or gguf-py.
cd "$(dirname "$0")/.." || exit 1
CUDA_HOME=${CUDA_HOME:-$(python3 -c 'import nvidia; print(list(nvidia.__path__)[0] + "/cu13")' 2>/dev/null)}
NVCC=$(command -v nvcc || echo "$CUDA_HOME/bin/nvcc")
[ -x "$NVCC" ] || { echo "skip: no nvcc (scripts/deps-hip.sh)"; exit 77; }
python3 -c 'import gguf.quants, numpy' 2>/dev/null || { echo "skip: gguf-py or numpy missing"; exit 77; }
OUT=$(mktemp -d "${TMPDIR:-/tmp}/check_hip_quant.XXXXXX") || exit 1
trap 'rm -rf "$OUT"' EXIT
N=16 K=$((32 * 37))

python3 - "$OUT" $N $K <<'PY' || { echo "FAIL: making the reference"; exit 1; }
import sys, numpy as np
from gguf import quants, GGMLQuantizationType as Q
out, N, K = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
rng = np.random.default_rng(7)
w = rng.standard_normal((N, K)).astype(np.float32)
w[np.arange(N), rng.integers(0, K, N)] *= 40           # an outlier per row sets its block's scale
x = rng.standard_normal(K).astype(np.float32)
x.tofile(f"{out}/x.bin")
for t in (Q.Q8_0, Q.Q4_0, Q.Q4_1):
    q = quants.quantize(w, t)
    wd = quants.dequantize(q, t).astype(np.float32)
    q.tofile(f"{out}/{t.name}.q")
    wd.tofile(f"{out}/{t.name}.w")
    (wd.astype(np.float64) @ x.astype(np.float64)).tofile(f"{out}/{t.name}.y")
    (np.abs(wd.astype(np.float64)) @ np.abs(x.astype(np.float64))).tofile(f"{out}/{t.name}.a")
PY

cat > "$OUT/t.cu" <<'CU'
#include "kernels/hip/hip_common.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void *slurp(const char *dir, const char *name, size_t bytes, size_t at) {
    char p[512];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    FILE *f = fopen(p, "rb");
    char *b = (char *)aligned_alloc(64, bytes + 64);
    if (!f || fread(b + at, 1, bytes, f) != bytes) { printf("FAIL: reading %s\n", p); exit(1); }
    fclose(f);
    return b + at;
}

template <int DT> static int check(const char *dir, const char *name, int N, int K) {
    char fn[64];
    int nb = K / 32, bad = 0;
    size_t row = (size_t)nb * qblock<DT>::bytes;
    snprintf(fn, sizeof fn, "%s.q", name);
    const uint8_t *q = (const uint8_t *)slurp(dir, fn, row * N, qblock<DT>::align);   /* the least allowed alignment */
    snprintf(fn, sizeof fn, "%s.w", name);
    const float *wd = (const float *)slurp(dir, fn, 4 * (size_t)N * K, 0);
    snprintf(fn, sizeof fn, "%s.y", name);
    const double *y = (const double *)slurp(dir, fn, 8 * (size_t)N, 0);
    snprintf(fn, sizeof fn, "%s.a", name);
    const double *a = (const double *)slurp(dir, fn, 8 * (size_t)N, 0);
    const float *x = (const float *)slurp(dir, "x.bin", 4 * (size_t)K, 0);
    double werr = 0, yerr = 0;
    for (int n = 0; n < N; n++)
        for (int k = 0; k < K; k++) werr = fmax(werr, fabs(qweight<DT>(q + n * row, k) - wd[(size_t)n * K + k]));
    for (int wave = 32; wave <= 64; wave *= 2)
        for (int n = 0; n < N; n++) {
            float s = 0;
            for (int lane = 0; lane < wave; lane++) s += qrow_lane<DT>(q + n * row, x, nb, lane, wave);
            yerr = fmax(yerr, fabs(s - y[n]) / a[n]);
        }
    bad = werr > 1e-6 || yerr > 1e-5;
    printf("%s %s: max |weight - ref| %.1e, max |row.x - ref| / sum|w x| %.1e (waves of 32 and 64)\n",
           bad ? "FAIL" : "ok  ", name, werr, yerr);
    return bad;
}

int main(int argc, char **argv) {
    int N = atoi(argv[2]), K = atoi(argv[3]);
    int bad = check<DT_Q8_0>(argv[1], "Q8_0", N, K);
    bad |= check<DT_Q4_0>(argv[1], "Q4_0", N, K);
    bad |= check<DT_Q4_1>(argv[1], "Q4_1", N, K);
    return bad;
}
CU
"$NVCC" -x cu -std=c++17 -O2 -I. -DHIPATH_HIP -DHIPATH_CUDA "$OUT/t.cu" -o "$OUT/t" || { echo "FAIL: nvcc"; exit 1; }
"$OUT/t" "$OUT" $N $K || { echo "FAIL: the quantized GEMV's math differs from gguf-py's"; exit 1; }
