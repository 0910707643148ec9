#!/bin/sh
# --jit without a GPU: layers/runtime/hip/jit.hip (the entry the runtime
# calls) is built into a CPU program that compiles every kernel at run
# time: nvrtc to PTX for sm_80 and sm_90, hiprtc to a code object for
# gfx90a. Each expected kernel (the list below, written out by hand) must
# be an entry point of the code under the symbol the JIT returned, and no
# other may be; the device headers' own lists must name the same kernels.
# The cache: the program counts the calls that reach the compiler
# (ld --wrap), so a second build of the same program must be a hit with
# none, and a changed source (a header with a line added) a miss with one;
# XDG_CACHE_HOME is honoured when HIPATH_JIT_CACHE is unset.
# Exit 77 without nvrtc; hiprtc's half is skipped, saying so, if it fails.
cd "$(dirname "$0")/.." || exit 1
CUDA_HOME=${CUDA_HOME:-$(python3 -c 'import nvidia; print(list(nvidia.__path__)[0] + "/cu13")' 2>/dev/null)}
[ -f "$CUDA_HOME/include/nvrtc.h" ] && [ -f "$CUDA_HOME/lib/libnvrtc.so.13" ] ||
  { echo "skip: no nvrtc (pip install nvidia-cuda-nvrtc: scripts/deps-hip.sh)"; exit 77; }
OUT=$(mktemp -d "${TMPDIR:-/tmp}/check_hip_jit.XXXXXX") || exit 1
trap 'rm -rf "$OUT"' EXIT
make --no-print-directory -s build/hip-jit/jit_headers.h || { echo "FAIL: making jit_headers.h"; exit 1; }
mkdir -p "$OUT/same" "$OUT/changed"
cp build/hip-jit/jit_headers.h "$OUT/same/"
# The changed source: one line more in a device header (the text, not the file).
sed 's|^#define HIPATH_HIP_DEVICE_H$|&\n/* changed */|' build/hip-jit/jit_headers.h > "$OUT/changed/jit_headers.h"
cmp -s "$OUT/same/jit_headers.h" "$OUT/changed/jit_headers.h" && { echo "FAIL: could not change the source"; exit 1; }

cat > "$OUT/expected" <<'EOF'
embedding_kernel<DT_F32>
embedding_kernel<DT_F16>
embedding_kernel<DT_BF16>
embedding_kernel<DT_Q8_0>
embedding_kernel<DT_Q4_0>
embedding_kernel<DT_Q4_1>
rmsnorm_kernel
rope_kernel
silu_mul_kernel
add_kernel
gemm_init_kernel
gemm_kernel<DT_F32>
gemm_kernel<DT_F16>
gemm_kernel<DT_BF16>
gemm_kernel<DT_Q8_0>
gemm_kernel<DT_Q4_0>
gemm_kernel<DT_Q4_1>
gemv_kernel<DT_F32, true>
gemv_kernel<DT_F16, true>
gemv_kernel<DT_BF16, true>
gemv_kernel<DT_F32, false>
gemv_kernel<DT_F16, false>
gemv_kernel<DT_BF16, false>
qgemv_kernel<DT_Q8_0>
qgemv_kernel<DT_Q4_0>
qgemv_kernel<DT_Q4_1>
kv_append_kernel
attention_kernel
moe_topk_kernel
moe_combine_kernel
moe_gemm_kernel<DT_F32>
moe_gemm_kernel<DT_F16>
moe_gemm_kernel<DT_BF16>
moe_gemm_kernel<DT_Q8_0>
moe_gemm_kernel<DT_Q4_0>
moe_gemm_kernel<DT_Q4_1>
EOF

# The headers' lists (what the launchers register), by the preprocessor alone.
printf '%s\n' '#include "kernels/hip/elementwise_kernels.h"' '#include "kernels/hip/matmul_kernels.h"' \
  '#include "kernels/hip/attention_kernels.h"' '#include "kernels/hip/moe_kernels.h"' '#define X(...) @@ __VA_ARGS__ @@' \
  'ELEMENTWISE_KERNELS(X) MATMUL_KERNELS(X) ATTENTION_KERNELS(X) MOE_KERNELS(X)' > "$OUT/lists.cpp"
cpp -P -DHIPATH_RTC -I. "$OUT/lists.cpp" 2>/dev/null | grep -o '@@ [^@]* @@' | sed 's/^@@ //; s/ @@$//' > "$OUT/listed"
sort "$OUT/expected" > "$OUT/a"; sort "$OUT/listed" > "$OUT/b"
cmp -s "$OUT/a" "$OUT/b" || { echo "FAIL: the device headers' kernel lists differ from the expected kernels:"; diff "$OUT/a" "$OUT/b"; exit 1; }

# The CPU program: jit_build on the expected kernels, the compiler's calls counted.
cat > "$OUT/t.cpp" <<'CPP'
#include "layers/runtime/hip/jit.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
static int calls;
#ifdef HIPATH_CUDA
#include <nvrtc.h>
extern "C" nvrtcResult __real_nvrtcCompileProgram(nvrtcProgram p, int n, const char *const *o);
extern "C" nvrtcResult __wrap_nvrtcCompileProgram(nvrtcProgram p, int n, const char *const *o) { calls++; return __real_nvrtcCompileProgram(p, n, o); }
#else
#include <hip/hiprtc.h>
extern "C" hiprtcResult __real_hiprtcCompileProgram(hiprtcProgram p, int n, const char **o);
extern "C" hiprtcResult __wrap_hiprtcCompileProgram(hiprtcProgram p, int n, const char **o) { calls++; return __real_hiprtcCompileProgram(p, n, o); }
#endif
int main(int argc, char **argv) {   /* arch expected-file code-out */
    static char line[64][128];
    const char *name[64], *header[] = { "kernels/hip/elementwise_kernels.h", "kernels/hip/matmul_kernels.h", "kernels/hip/attention_kernels.h",
                                        "kernels/hip/moe_kernels.h" };
    int n = 0;
    FILE *f = fopen(argv[2], "r");
    while (n < 64 && f && fgets(line[n], sizeof line[n], f)) { line[n][strcspn(line[n], "\n")] = 0; name[n] = line[n]; n++; }
    jit_program p = { argv[1], header, 4, name, n };
    jit_image im;
    char err[600];
    if (jit_build(&p, &im, err, sizeof err)) { printf("error: %s\n", err); return 1; }
    FILE *o = fopen(argv[3], "wb");
    fwrite(im.code, 1, im.code_bytes, o);
    fclose(o);
    printf("hit %d calls %d seconds %.2f source_bytes %zu compiler %s path %s\n", im.hit, calls, im.seconds, im.source_bytes, im.compiler, im.path);
    for (int i = 0; i < n; i++) printf("%s\n", im.symbol[i]);
    jit_free(&im);
    return 0;
}
CPP

fail=0
# run PROG ARCH TAG WANT_HIT: one JIT build into $OUT/TAG.{out,code}; a hit must call no compiler, a miss one.
run() {
  "$1" "$2" "$OUT/expected" "$OUT/$3.code" > "$OUT/$3.out" || { echo "FAIL $3: $(head -1 "$OUT/$3.out")"; fail=1; return 1; }
  expect "$3" "$4"
}
expect() {
  head=$(head -1 "$OUT/$1.out")
  hit=$(echo "$head" | sed -n 's/^hit \([01]\) .*/\1/p') calls=$(echo "$head" | sed -n 's/.* calls \([0-9]*\) .*/\1/p')
  if [ "$hit" = "$2" ] && [ "$calls" = $((1 - $2)) ]; then
    echo "ok   $1: $(echo "$head" | sed "s| path $OUT| path \$OUT|")"
  else
    echo "FAIL $1: hit '$hit', compiler calls '$calls'; expected hit $2 and $((1 - $2)) call(s)"; fail=1; return 1
  fi
}
# entries KIND TAG: every expected kernel's symbol is an entry point of the code, and only those.
entries() {
  tail -n +2 "$OUT/$2.out" > "$OUT/$2.sym"
  [ "$(wc -l < "$OUT/$2.sym")" -eq "$(wc -l < "$OUT/expected")" ] || { echo "FAIL $2: wrong number of symbols"; fail=1; return; }
  if [ "$1" = ptx ]; then
    grep -ao '\.entry [A-Za-z0-9_]*' "$OUT/$2.code" | sed 's/^\.entry //' | sort > "$OUT/$2.have"
  else   # an AMD code object lists each kernel's descriptor as SYMBOL.kd
    llvm-readelf-15 --syms "$OUT/$2.code" 2>/dev/null | grep -o '[A-Za-z0-9_]*\.kd$' | sed 's/\.kd$//' | sort -u > "$OUT/$2.have"
  fi
  sort "$OUT/$2.sym" > "$OUT/$2.want"
  if cmp -s "$OUT/$2.want" "$OUT/$2.have"; then
    echo "ok   $2: all $(wc -l < "$OUT/$2.want") kernels are entry points, as $(c++filt < "$OUT/$2.sym" | sed -n 17p | cut -c1-60)..."
  else
    echo "FAIL $2: kernel entry points differ from the expected (< expected, > in the code):"; diff "$OUT/$2.want" "$OUT/$2.have"; fail=1
  fi
}

g++ -std=c++17 -O1 -I. -DHIPATH_CUDA -I"$CUDA_HOME/include" -x c++ layers/runtime/hip/jit.hip -x c++ "$OUT/t.cpp" -x c layers/common/file.c -x none -lcjson \
  -I"$OUT/same" -L"$CUDA_HOME/lib" -l:libnvrtc.so.13 -Wl,-rpath,"$CUDA_HOME/lib" -Wl,--wrap=nvrtcCompileProgram -o "$OUT/nv" ||
  { echo "FAIL: building the nvrtc program"; exit 1; }
g++ -std=c++17 -O1 -I. -DHIPATH_CUDA -I"$CUDA_HOME/include" -x c++ layers/runtime/hip/jit.hip -x c++ "$OUT/t.cpp" -x c layers/common/file.c -x none -lcjson \
  -I"$OUT/changed" -L"$CUDA_HOME/lib" -l:libnvrtc.so.13 -Wl,-rpath,"$CUDA_HOME/lib" -Wl,--wrap=nvrtcCompileProgram -o "$OUT/nv2" ||
  { echo "FAIL: building the nvrtc program (changed source)"; exit 1; }
export HIPATH_JIT_CACHE="$OUT/cache"
for a in sm_80 sm_90; do
  run "$OUT/nv" $a $a 0 && entries ptx $a
  if run "$OUT/nv" $a $a.again 1 && ! cmp -s "$OUT/$a.code" "$OUT/$a.again.code"; then echo "FAIL $a: the hit's code differs"; fail=1; fi
done
run "$OUT/nv2" sm_90 sm_90.changed 0
run "$OUT/nv2" sm_90 sm_90.changed.again 1
unset HIPATH_JIT_CACHE
XDG_CACHE_HOME="$OUT/xdg" run "$OUT/nv" sm_90 sm_90.xdg 0
ls "$OUT"/xdg/hipath/jit/sm_90*.jit > /dev/null 2>&1 || { echo "FAIL: nothing cached under \$XDG_CACHE_HOME/hipath/jit"; fail=1; }
export HIPATH_JIT_CACHE="$OUT/cache"
[ "$(ls "$OUT/cache" | wc -l)" -eq 3 ] || { echo "FAIL: expected 3 cache files (sm_80, sm_90, sm_90 changed):"; ls "$OUT/cache"; fail=1; }
# A compile error is one line naming the file and line, and no crash.
sed 's|^__global__ void add_kernel(float \*x|&, undeclared_t u|' build/hip-jit/jit_headers.h > "$OUT/changed/jit_headers.h"
g++ -std=c++17 -O1 -I. -DHIPATH_CUDA -I"$CUDA_HOME/include" -x c++ layers/runtime/hip/jit.hip -x c++ "$OUT/t.cpp" -x c layers/common/file.c -x none -lcjson \
  -I"$OUT/changed" -L"$CUDA_HOME/lib" -l:libnvrtc.so.13 -Wl,-rpath,"$CUDA_HOME/lib" -Wl,--wrap=nvrtcCompileProgram -o "$OUT/nv3" &&
"$OUT/nv3" sm_90 "$OUT/expected" "$OUT/bad.code" > "$OUT/bad.out"
if [ $? -eq 1 ] && grep -q '^error: nvrtc .* for sm_90: kernels/hip/elementwise_kernels.h([0-9]*): error: .*undeclared_t' "$OUT/bad.out"; then
  echo "ok   a compile error reads: $(cut -c1-110 "$OUT/bad.out")"
else
  echo "FAIL: a compile error should be one line naming the file: $(cat "$OUT/bad.out")"; fail=1
fi

# hiprtc: Debian's compiles without a device; if it does not, say so and skip that half.
if ! [ -f /usr/include/hip/hiprtc.h ]; then
  echo "skip gfx90a: no hip/hiprtc.h (scripts/deps-hip.sh)"
elif ! g++ -std=c++17 -O1 -I. -D__HIP_PLATFORM_AMD__ -x c++ layers/runtime/hip/jit.hip -x c++ "$OUT/t.cpp" -x c layers/common/file.c -x none -lcjson \
       -I"$OUT/same" -lamdhip64 -Wl,--wrap=hiprtcCompileProgram -o "$OUT/amd" 2> "$OUT/amd.log"; then
  echo "skip gfx90a: cannot build against hiprtc: $(grep -m1 error "$OUT/amd.log")"
elif ! "$OUT/amd" gfx90a "$OUT/expected" "$OUT/gfx90a.code" > "$OUT/gfx90a.out" 2>&1; then
  echo "skip gfx90a: hiprtc does not work here: $(head -1 "$OUT/gfx90a.out")"
else
  expect gfx90a 0 && entries elf gfx90a
  run "$OUT/amd" gfx90a gfx90a.again 1
fi
[ $fail -eq 0 ] || exit 1
echo "ok: every kernel JIT-compiles, and the cache hits and misses as it should"
