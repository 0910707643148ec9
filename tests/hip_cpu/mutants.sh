#!/bin/sh
# The mutation check of tests/hip_cpu/ (make hip-cpu-mutants): each mutant
# is a copy of the kernel headers with one deliberate bug of the kinds only
# a GPU would show (an indexing slip, a wrong reduction, a missing barrier,
# a wavefront-size assumption, a read past a buffer, divergent sync). The
# harness is built against the copy and must fail: under AddressSanitizer +
# UBSan, and for the barriers also under ThreadSanitizer, which is shown
# only the order a GPU gives (hip_cpu.h): a missing barrier is a data race
# even where the values happen to come out right. Prints how each was
# caught; exits 1 if one survives. Run by `make hip-cpu-mutants`, which
# builds the twins' objects and passes the compiler and sanitizer flags.
cd "$(dirname "$0")/../.." || exit 1
OUT=$(mktemp -d "${TMPDIR:-/tmp}/hip_cpu_mutants.XXXXXX") || exit 1
trap 'rm -rf "$OUT"' EXIT
: "${ASAN:?run it as make hip-cpu-mutants}" "${TSAN:?}" "${CXX:?}"
export TSAN_OPTIONS="halt_on_error=1"
n=0 survived=0

# mutant FILE SED DESCRIPTION [tsan]: FILE (under kernels/hip/) edited by SED.
mutant() {
  n=$((n + 1))
  rm -rf "$OUT/k" && mkdir -p "$OUT/k/kernels/hip" && cp kernels/hip/*.h "$OUT/k/kernels/hip/"
  sed -e "$2" "kernels/hip/$1" > "$OUT/k/kernels/hip/$1"
  if cmp -s "kernels/hip/$1" "$OUT/k/kernels/hip/$1"; then echo "BROKEN MUTANT $n (the edit matched nothing): $3"; survived=$((survived + 1)); return; fi
  for san in asan $4; do
    flags=$ASAN; [ $san = tsan ] && flags=$TSAN
    # the copy first: quoted includes of kernels/hip/... find it before the tree's
    $CXX -std=c++17 -O1 -g -I"$OUT/k" -I. $flags tests/hip_cpu/hip_cpu_test.cpp \
      build/hip-cpu/$san/kernels/cpu/*.o build/hip-cpu/$san/layers/common/*.o -o "$OUT/t" -pthread -lm 2> "$OUT/cc.log" ||
      { echo "BROKEN MUTANT $n (does not compile): $3"; head -3 "$OUT/cc.log"; survived=$((survived + 1)); return; }
    timeout 300 "$OUT/t" > "$OUT/log" 2>&1
    rc=$?
    if grep -q 'ERROR: AddressSanitizer' "$OUT/log"; then how="ASan: $(grep -m1 -o 'AddressSanitizer: [a-z-]*' "$OUT/log" | cut -d' ' -f2)"
    elif grep -q 'runtime error' "$OUT/log"; then how="UBSan: $(grep -m1 -o 'runtime error: .*' "$OUT/log" | cut -c16-70)"
    elif grep -q 'ThreadSanitizer: data race' "$OUT/log"; then how="TSan: data race"
    elif grep -q '^FAIL.*max err [^ ]*  ' "$OUT/log"; then how="hip_cpu: $(grep -m1 '^FAIL.*max err [^ ]*  ' "$OUT/log" | sed 's/.*max err [^ ]*  //' | cut -c1-110)"
    elif grep -q '^FAIL' "$OUT/log"; then how="wrong values in $(grep -c '^FAIL' "$OUT/log") cases, first: $(grep -m1 '^FAIL' "$OUT/log" | sed 's/^FAIL  *//; s/  */ /g')"
    else how="exit $rc"; fi
    if [ $rc -eq 0 ]; then echo "SURVIVED $n $san: $3"; survived=$((survived + 1))
    elif [ $rc -eq 124 ]; then echo "HUNG     $n $san: $3"; survived=$((survived + 1))
    else echo "caught   $n $san: $3 -- $how"; fi
  done
}

mutant device.h 's|o = warpSize / 2|o = warpSize / 4|' "wave_sum: the butterfly starts at a quarter wave (a wrong reduction)"
mutant device.h 's|o = warpSize / 2|o = 16|' "wave_sum: 32 lanes assumed"
mutant device.h '/part\[w\] = v;/{n;d}' "block_sum: no barrier between writing the wavefronts' sums and reading them" tsan
mutant device.h '/if (threadIdx.x == 0) part\[0\] = v;/{n;d}' "block_sum: no barrier before reading the total" tsan
mutant device.h 's|if (w == 0) v = wave_sum(v);|if (threadIdx.x < (unsigned)nw) v = wave_sum(v);|' "block_sum: only part of wavefront 0 shuffles"
mutant elementwise_kernels.h 's|block_sum(ss, part) / n|block_sum(ss, part) / blockDim.x|' "rmsnorm: the mean over the workgroup, not the row"
mutant elementwise_kernels.h 's|i0 = adjacent ? 2 \* i : i|i0 = adjacent ? i : 2 * i|' "rope: the two pair layouts swapped for the first element"
mutant elementwise_kernels.h 's|if (i < n) g\[i\]|g[i]|' "silu_mul: no bounds guard (the last workgroup runs past n)"
mutant matmul_kernels.h '0,/__syncthreads();/{//d}' "gemm: no barrier after staging the tiles" tsan
mutant matmul_kernels.h '/acc\[r\] += /{n;d}' "gemm: no barrier before the next tiles overwrite these" tsan
mutant matmul_kernels.h 's|ws\[tn\]\[k\]|ws[k][tn]|' "gemm: the weight tile read transposed"
mutant matmul_kernels.h 's|n0 + r < N \&\& k0 + k < ke ? wload|n0 + r < N ? wload|' "gemm: no bound on k for the weights (K not a multiple of 32)"
mutant matmul_kernels.h 's|if (kslice < K) atomicAdd(\&y\[(size_t)t \* N + n\], acc\[r\]);|if (kslice < K) y[(size_t)t * N + n] = acc[r];|' "gemm split-K: a slice stores its partial tile instead of adding it"
mutant matmul_kernels.h 's|ke = min(K, kb + kslice)|ke = K|' "gemm split-K: each slice runs on to K (the slices overlap)"
mutant matmul_kernels.h '/whole wavefronts leave together/d' "gemv: no early return for rows past N"
mutant matmul_kernels.h 's|if (n >= N) return;   /\* whole|if (n >= N \|\| lane >= K) return;   /* whole|' "gemv: lanes with no column return before the butterfly"
mutant matmul_kernels.h 's|blockIdx.x \* (blockDim.x / warpSize)|blockIdx.x * (blockDim.x / 64)|' "gemv, qgemv: rows per workgroup for 64 lanes assumed"
mutant quant.h 's|q\[j\] \& 15 : q\[j - 16\] >> 4|q[j] >> 4 : q[j - 16] \& 15|' "qweight: nibbles swapped (embedding, gemm of Q4_0/Q4_1)"
mutant quant.h 's|b += wave / W|b += 64 / W|' "qrow_lane: the block stride for 64 lanes assumed"
mutant attention_kernels.h 's|kvh = h / group|kvh = h % group|' "attention: the wrong KV head for a query head (GQA)"
mutant attention_kernels.h 's|p0 + j < len|p0 + j <= len|' "attention: one key past the causal limit"
mutant attention_kernels.h 's|^    for (int p0 = 0; p0 <= last; p0 += BS) {|    if (i >= n) return;\n&|' "attention: rows past n return before the barriers"
mutant attention_kernels.h 's|Vs = tile + BS \* head_dim|Vs = tile + (BS + 1) * head_dim|' "attention: V placed one key row too far in LDS"
mutant attention_kernels.h '/m = mn;/{n;n;d}' "attention: no barrier before the next block's K/V overwrite LDS" tsan
mutant mla_kernels.h 's|d += qp\[r\] \* row\[rank + e\]|d += qp[r] * row[e]|' "mla attention: the rope key read from the latent's start"
mutant mla_kernels.h 's|p0 + j < len|p0 + j <= len|' "mla attention: one key past the causal limit"
mutant mla_kernels.h '/m = mn;/{n;n;d}' "mla attention: no barrier before the next block's rows overwrite LDS" tsan
mutant mla_kernels.h 's|(h \* (nope + v_dim) + i) \* row_bytes|(h * (nope + v_dim) + nope + i) * row_bytes|' "mla_absorb: W_UV's rows taken for W_UK"
mutant mla_kernels.h 's|(h \* (nope + v_dim) + nope + i) \* row_bytes|(h * (nope + v_dim) + i) * row_bytes|' "mla_up_v: W_UK's rows taken for W_UV"
mutant mla_kernels.h 's|e - rank\]|e]|' "mla_kv_append: k_pe indexed as if it followed c_kv"

echo "$n mutants, $((n - survived)) caught, $survived not"
[ $survived -eq 0 ]
