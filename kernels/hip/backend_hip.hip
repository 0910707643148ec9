/*
 * backend_hip.hip -- the HIP backend's table, and what every launch shares:
 * the stream, the device's wave size, and GPU events around each kernel.
 * Events are read when the host next waits on the stream (hip_drain, called
 * by the runtime's sync): each kernel becomes a measured layer-1 slice
 * placed back from the moment the wait ended. With --jit, the launches go
 * to the module layer 2 compiled at run time (hip_jit_*).
 */
#include "kernels/hip/hip_common.h"
extern "C" {
#include "trace/trace.h"
}

enum { MAX_PENDING = 4096 };

static struct {
    hipStream_t stream;
    int wave;
    struct { hipEvent_t start, stop; const char *kernel; kcost c; kdims d; uint64_t t0; } p[MAX_PENDING];
    int n, made;
} H;

void hip_backend_open(hipStream_t s, int wave) { H.stream = s; H.wave = wave; }
hipStream_t hip_stream(void) { return H.stream; }
int hip_wave(void) { return H.wave; }

void hip_drain(void) {
    if (!H.n) return;
    HIP_CHECK(2, hipEventSynchronize(H.p[H.n - 1].stop));
    uint64_t now = trace_now_ns();
    for (int i = 0; i < H.n; i++) {
        float dur_ms, before_ms;   /* kernel i's duration; from its end to the last end */
        HIP_CHECK(2, hipEventElapsedTime(&dur_ms, H.p[i].start, H.p[i].stop));
        HIP_CHECK(2, hipEventElapsedTime(&before_ms, H.p[i].stop, H.p[H.n - 1].stop));
        uint64_t end = now - (uint64_t)(before_ms * 1e6), dur = (uint64_t)(dur_ms * 1e6);
        rt_kernel_measured(H.p[i].kernel, &H.p[i].c, end - dur, dur);
    }
    H.n = 0;
}

void hip_launch_begin(const void *fn, kdims d) {
    if (H.n == MAX_PENDING) hip_drain();
    if (H.n == H.made) {
        HIP_CHECK(2, hipEventCreate(&H.p[H.n].start));
        HIP_CHECK(2, hipEventCreate(&H.p[H.n].stop));
        H.made++;
    }
    H.p[H.n].d = d;
    H.p[H.n].t0 = rt_launch_begin(fn, 0);   /* after any copy the op made first */
    HIP_CHECK(2, hipEventRecord(H.p[H.n].start, H.stream));
}

uint64_t hip_launch_end(const kcost *c, const char *kernel) {
    HIP_CHECK(3, hipGetLastError());   /* the launch itself: bad shape, no code for this arch */
    HIP_CHECK(2, hipEventRecord(H.p[H.n].stop, H.stream));
    H.p[H.n].kernel = kernel;
    H.p[H.n].c = *c;
    kdims d = H.p[H.n].d;
    uint64_t t0 = H.p[H.n].t0;
    H.n++;
    return rt_launch_end(c, kernel, d, d.grid * ((d.block + H.wave - 1) / H.wave), t0);
}

/* --jit: one program of every kernel file's kernels; its functions, once loaded. */
extern const jit_source jit_elementwise, jit_matmul, jit_attention;
static const jit_source *const SRC[] = { &jit_elementwise, &jit_matmul, &jit_attention };
static struct { hipFunction_t f[JIT_MAX_KERNELS]; int on; } J;

int hip_jit_program(const char **header, int *n_header, const char **name) {
    int n = 0;
    *n_header = 0;
    for (const jit_source *s : SRC) {
        if (n + s->n > JIT_MAX_KERNELS) return -1;
        header[(*n_header)++] = s->header;
        for (int i = 0; i < s->n; i++) name[n++] = s->name[i];
    }
    return n;
}

void hip_jit_use(const hipFunction_t *f) {
    int n = 0;
    for (const jit_source *s : SRC) n += s->n;
    for (int i = 0; i < n; i++) J.f[i] = f[i];
    J.on = 1;
}

hipFunction_t hip_jit_function(const void *fn) {
    if (!J.on) return NULL;
    int k = 0;
    for (const jit_source *s : SRC)
        for (int i = 0; i < s->n; i++, k++)
            if (s->fn[i] == fn) return J.f[k];
    return NULL;
}

#ifndef __HIP_DEVICE_COMPILE__   /* a host table: clang's device pass must not see host functions */
extern "C" const backend backend_hip = { "hip", hip_embedding, hip_rmsnorm, hip_matmul, hip_rope,
                                         hip_kv_append, hip_attention, hip_silu_mul, hip_add };
#endif
