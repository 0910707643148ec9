/*
 * jit.hip -- the kernels compiled at run time, through a cache (jit.h).
 *
 * A cache file is the program's symbols, one a line, then its code:
 *   hipath-jit 1\n  N\n  symbol_1\n ... symbol_N\n  code...
 * so a hit needs no compiler at all, not even for the mangled names. A
 * file that does not parse is a miss, and is rewritten.
 */
#include "layers/runtime/hip/jit.h"
extern "C" {
#include "layers/common/dtype.h"
#include "layers/common/file.h"
}
#ifdef HIPATH_CUDA
#include <nvrtc.h>
#define RTC(f) nvrtc##f
#define RTC_CODE_SIZE nvrtcGetPTXSize
#define RTC_CODE nvrtcGetPTX
#else
#include <hip/hip_version.h>
#include <hip/hiprtc.h>
#define RTC(f) hiprtc##f
#define RTC_CODE_SIZE hiprtcGetCodeSize
#define RTC_CODE hiprtcGetCode
#endif
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* The device headers' text, { include name, text }: made by hip.mk from
 * kernels/hip/device.h, geometry.h, quant.h and *_kernels.h. */
static const char *const HEADER[][2] = {
#include "jit_headers.h"
};
enum { N_HEADER = sizeof HEADER / sizeof *HEADER, MAGIC_LEN = 13 };
static const char MAGIC[] = "hipath-jit 1\n";

/* The dtypes the kernels take, with dtype.h's values: the one place they are defined. */
#define DTYPE(d) { #d, d }
static const struct { const char *name; int value; } DTYPES[] = {
    DTYPE(DT_F32), DTYPE(DT_F16), DTYPE(DT_BF16), DTYPE(DT_Q8_0), DTYPE(DT_Q4_0), DTYPE(DT_Q4_1)
};

/* A name expression with its dtypes as numbers, "gemv_kernel<0, true>":
 * hiprtc (ROCm 5) finds an expression among the demangled symbols, so it
 * must be spelled as the demangler spells it; nvrtc takes either. */
static void canonical(const char *name, char *out, size_t n) {
    size_t at = 0;
    while (*name && at + 12 < n) {
        size_t id = strncmp(name, "DT_", 3) ? 0 : strspn(name, "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_");
        int k = 0;
        while (id && k < (int)(sizeof DTYPES / sizeof *DTYPES) && (strlen(DTYPES[k].name) != id || strncmp(name, DTYPES[k].name, id))) k++;
        if (id && k < (int)(sizeof DTYPES / sizeof *DTYPES)) { at += snprintf(out + at, n - at, "%d", DTYPES[k].value); name += id; }
        else out[at++] = *name++;
    }
    out[at] = 0;
}

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

/* FNV-1a over each piece and its length: a cache key, not a defence. */
static uint64_t fnv(uint64_t h, const char *s) {
    for (size_t n = strlen(s) + 1; n--; s++) h = (h ^ (uint8_t)*s) * 0x100000001b3ull;
    return h;
}

const char *jit_cache_dir(char *buf, size_t n) {
    const char *e = getenv("HIPATH_JIT_CACHE"), *x = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
    if (e && *e) snprintf(buf, n, "%s", e);
    else if (x && *x) snprintf(buf, n, "%s/hipath/jit", x);
    else snprintf(buf, n, "%s/.cache/hipath/jit", home && *home ? home : "/tmp");
    return buf;
}

static int mkdirs(char *path) {
    for (char *s = path + 1; *s; s++)
        if (*s == '/') { *s = 0; mkdir(path, 0755); *s = '/'; }
    return mkdir(path, 0755) && errno != EEXIST ? -1 : 0;
}

/* Point im's symbols and code into its blob (n bytes); -1 when it is not
 * a cache file of this program's n_name kernels. */
static int parse(jit_image *im, size_t n, int n_name) {
    char *p = im->blob, *end = im->blob + n;
    if (n < MAGIC_LEN || memcmp(p, MAGIC, MAGIC_LEN) || strtol(p + MAGIC_LEN, &p, 10) != n_name || *p++ != '\n') return -1;
    for (int i = 0; i < n_name; i++) {
        char *nl = (char *)memchr(p, '\n', end - p);
        if (!nl || nl == p) return -1;
        *nl = 0;
        im->symbol[i] = p;
        p = nl + 1;
    }
    im->code = p;
    im->code_bytes = end - p;
    return im->code_bytes ? 0 : -1;
}

/* The log's first error, as one line. */
static void first_error(const char *log, char *out, int n) {
    const char *e = strstr(log, "error");
    const char *s = e ? e : log;
    while (s > log && s[-1] != '\n') s--;
    int len = (int)strcspn(s, "\n");
    snprintf(out, n, "%.*s", len, s);
}

/* Compile p (source: the prelude) into im->blob in the cache format. */
static int compile(const jit_program *p, const char *source, const char **opt, int n_opt, jit_image *im, char *err, int errlen) {
    const char *hname[N_HEADER], *htext[N_HEADER];
    for (int i = 0; i < N_HEADER; i++) { hname[i] = HEADER[i][0]; htext[i] = HEADER[i][1]; }
    RTC(Program) prog;
    static char expr[JIT_MAX_KERNELS][128];
    RTC(Result) r = RTC(CreateProgram)(&prog, source, "hipath_jit.hip", N_HEADER, htext, hname);
    if (r) { snprintf(err, errlen, "%s", RTC(GetErrorString)(r)); return -1; }
    for (int i = 0; i < p->n_name; i++) {
        canonical(p->name[i], expr[i], sizeof expr[i]);
        RTC(AddNameExpression)(prog, expr[i]);
    }
    double t0 = now_s();
    r = RTC(CompileProgram)(prog, n_opt, opt);
    im->seconds = now_s() - t0;
    int rc = -1;
    size_t nlog = 0, ncode = 0, at;
    char *log = NULL;
    if (r) {
        if (!RTC(GetProgramLogSize)(prog, &nlog) && (log = (char *)calloc(nlog + 1, 1)) && !RTC(GetProgramLog)(prog, log) && *log)
            first_error(log, err, errlen);
        else
            snprintf(err, errlen, "%s", RTC(GetErrorString)(r));
        goto out;
    }
    const char *sym[JIT_MAX_KERNELS];
    at = MAGIC_LEN + 16;
    for (int i = 0; i < p->n_name; i++) {
        if (RTC(GetLoweredName)(prog, expr[i], &sym[i])) { snprintf(err, errlen, "kernel %s: not in the program", p->name[i]); goto out; }
        at += strlen(sym[i]) + 1;
    }
    if (RTC_CODE_SIZE(prog, &ncode) || !ncode || !(im->blob = (char *)malloc(at + ncode + 1))) {
        snprintf(err, errlen, "no code (%zu bytes)", ncode);
        goto out;
    }
    at = sprintf(im->blob, "%s%d\n", MAGIC, p->n_name);
    for (int i = 0; i < p->n_name; i++) at += sprintf(im->blob + at, "%s\n", sym[i]);
    if (RTC_CODE(prog, im->blob + at)) { snprintf(err, errlen, "reading the code failed"); goto out; }
    im->blob[at + ncode] = 0;
    im->code_bytes = at + ncode;   /* the blob's length, until parse() splits it */
    rc = 0;
out:
    free(log);
    RTC(DestroyProgram)(&prog);
    return rc;
}

/* Write the blob next to its final name, then rename: a reader never sees half a file. */
static void store(jit_image *im, size_t n) {
    char dir[1024], tmp[1100];
    snprintf(dir, sizeof dir, "%s", im->path);
    *strrchr(dir, '/') = 0;
    snprintf(tmp, sizeof tmp, "%s.%d.tmp", im->path, (int)getpid());
    FILE *f = mkdirs(dir) ? NULL : fopen(tmp, "wb");
    int ok = f && fwrite(im->blob, 1, n, f) == n;
    ok = f && !fclose(f) && ok && !rename(tmp, im->path);
    if (!ok) {
        fprintf(stderr, "hipath: layer 2 runtime: jit cache %s: %s (compiled, not cached)\n", im->path, strerror(errno));
        if (f) remove(tmp);
        im->path[0] = 0;
    }
}

int jit_build(const jit_program *p, jit_image *im, char *err, int errlen) {
    memset(im, 0, sizeof *im);
    if (p->n_name > JIT_MAX_KERNELS) { snprintf(err, errlen, "%d kernels: at most %d", p->n_name, JIT_MAX_KERNELS); return -1; }
    char source[4096], arch_opt[96];
    int maj = 0, min = 0, at;
    RTC(Version)(&maj, &min);
#ifdef HIPATH_CUDA
    if (strncmp(p->arch, "sm_", 3)) { snprintf(err, errlen, "nvrtc: arch '%s' is not sm_NN", p->arch); return -1; }
    snprintf(im->compiler, sizeof im->compiler, "nvrtc %d.%d", maj, min);
    snprintf(arch_opt, sizeof arch_opt, "--gpu-architecture=compute_%s", p->arch + 3);   /* PTX: the driver finishes it */
    const char *opt[] = { "-std=c++17", arch_opt };
    at = snprintf(source, sizeof source, "#define HIPATH_RTC 1\n#define HIPATH_CUDA 1\n");
#else
    snprintf(im->compiler, sizeof im->compiler, "hiprtc %d.%d hip %d", maj, min, HIP_VERSION);
    snprintf(arch_opt, sizeof arch_opt, "--offload-arch=%s", p->arch);
    const char *opt[] = { "-std=c++17", "-O2", arch_opt };
    at = snprintf(source, sizeof source, "#define HIPATH_RTC 1\n");
#endif
    at += snprintf(source + at, sizeof source - at, "enum {");
    for (auto d : DTYPES) at += snprintf(source + at, sizeof source - at, " %s = %d,", d.name, d.value);
    at += snprintf(source + at, sizeof source - at, " };\n");
    for (int i = 0; i < p->n_header; i++) at += snprintf(source + at, sizeof source - at, "#include \"%s\"\n", p->header[i]);
    if (at >= (int)sizeof source) { snprintf(err, errlen, "the program's prelude is too long"); return -1; }

    /* The key: everything the compiler sees, and the arch and compiler in the name. */
    uint64_t h = fnv(0xcbf29ce484222325ull, source);
    im->source_bytes = strlen(source);
    for (int i = 0; i < N_HEADER; i++) {
        h = fnv(fnv(h, HEADER[i][0]), HEADER[i][1]);
        im->source_bytes += strlen(HEADER[i][1]);
    }
    for (const char *o : opt) h = fnv(h, o);
    for (int i = 0; i < p->n_name; i++) h = fnv(h, p->name[i]);
    char dir[900], tag[128];
    snprintf(tag, sizeof tag, "%s-%s", p->arch, im->compiler);
    for (char *c = tag; *c; c++)
        if (!(*c >= 'a' && *c <= 'z') && !(*c >= 'A' && *c <= 'Z') && !(*c >= '0' && *c <= '9') && *c != '.') *c = '_';
    snprintf(im->path, sizeof im->path, "%s/%s-%016llx.jit", jit_cache_dir(dir, sizeof dir), tag, (unsigned long long)h);

    size_t n = 0;
    char no[256];   /* a cache file that cannot be read is a miss */
    if ((im->blob = file_read(im->path, FILE_LARGE, &n, no, sizeof no)) && !parse(im, n, p->n_name)) { im->hit = 1; return 0; }
    free(im->blob);
    im->blob = NULL;
    char why[512];
    if (compile(p, source, opt, (int)(sizeof opt / sizeof *opt), im, why, sizeof why)) {
        snprintf(err, errlen, "%s for %s: %s", im->compiler, p->arch, why);
        jit_free(im);
        return -1;
    }
    n = im->code_bytes;
    store(im, n);
    if (parse(im, n, p->n_name)) { snprintf(err, errlen, "a compiled symbol holds a newline"); jit_free(im); return -1; }
    return 0;
}

void jit_free(jit_image *im) {
    free(im->blob);
    im->blob = NULL;
    im->code = NULL;
}
