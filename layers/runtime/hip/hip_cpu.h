/*
 * hip_cpu.h -- just enough HIP to run hipath's real kernels (*_kernels.h)
 * on the CPU: what <hip/hip_runtime.h> gives a kernel, and a launch. For
 * the kernel tests (tests/hip_cpu/) and under the host side's thin HIP API
 * (hip_cpu_api.h, make HIP=cpu); docs/hip-cpu.md. Include it before the
 * kernel headers, in C++ compiled by the host compiler.
 *
 * A lane is a fiber (its own stack, switched by hand on the launching
 * thread), one workgroup at a time. A lane runs until it waits, then the
 * next one runs: __syncthreads waits for every lane of the workgroup,
 * __shfl_xor for the lanes of its own wavefront only (so
 * `if (w == 0) wave_sum(v)` works, as on a GPU).
 * warpSize is a variable: the caller sets 32 or 64 before a launch.
 * Static __shared__ is a process-wide static (one workgroup at a time);
 * dynamic LDS is allocated at exactly the launch's size and filled with
 * NaN before each workgroup, so AddressSanitizer sees an overflow and a
 * read of what this workgroup did not write shows in the results.
 *
 * Stricter than a GPU where a GPU would hang or be undefined: a barrier
 * that some lane returns without reaching (CUDA's rule; AMD would let a
 * whole returned wavefront pass), lanes at different barriers, a shuffle
 * whose partner lane has returned or does not exist, and a deadlock (every
 * live lane waiting, none can go) end the launch with a one-line error
 * naming the file and line, instead of hanging. Nothing here runs in
 * lockstep and nothing is timed.
 */
#ifndef HIPATH_HIP_CPU_H
#define HIPATH_HIP_CPU_H

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <string>
#include <vector>
#if !defined(__x86_64__)
#include <ucontext.h>
#endif

#define __global__
#define __device__
#define __host__
#define __shared__ static
#define HIP_DYNAMIC_SHARED(type, var) type *var = (type *)hip_cpu::lds;
#define __syncthreads() hip_cpu::barrier(__FILE__, __LINE__)
#define __shfl_xor(v, mask) hip_cpu::shfl_xor((v), (mask), __FILE__, __LINE__)

struct dim3 {
    unsigned x, y, z;
    constexpr dim3(unsigned x = 1, unsigned y = 1, unsigned z = 1) : x(x), y(y), z(z) {}
};
inline thread_local dim3 threadIdx, blockIdx;
inline dim3 blockDim;
inline int warpSize = 64;
struct alignas(16) uint4 { unsigned x, y, z, w; };   /* 16-byte aligned, as HIP's: UBSan checks the loads */

inline float rsqrtf(float x) { return 1.0f / sqrtf(x); }
inline int min(int a, int b) { return a < b ? a : b; }
inline float __uint_as_float(unsigned u) { float f; memcpy(&f, &u, 4); return f; }
inline float __int_as_float(int i) { float f; memcpy(&f, &i, 4); return f; }
/* f32 atomicAdd: a compare-and-swap on its bits, an atomic to ThreadSanitizer too. */
inline float atomicAdd(float *p, float v) {
    unsigned *u = (unsigned *)p, old = __atomic_load_n(u, __ATOMIC_RELAXED), sum;
    float f;
    do {
        memcpy(&f, &old, 4);
        float s = f + v;
        memcpy(&sum, &s, 4);
    } while (!__atomic_compare_exchange_n(u, &old, sum, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED));
    return f;
}

namespace hip_cpu {

inline void *lds;   /* the launch's dynamic LDS */
struct stop {};     /* unwinds a lane once the launch has failed */

/* ThreadSanitizer should see the order a GPU gives and no more: a barrier
 * orders its workgroup, a shuffle its wavefront, the end of a workgroup
 * the next. Each lane is a TSan fiber whose switches order nothing; the
 * runtime's own bookkeeping is hidden (quiet) and those edges are given by
 * hand: each lane releases a sync object as it arrives and acquires it as
 * it leaves (two objects, alternating: a lane may reach the next wait
 * before the others have left this one). */
#if defined(__SANITIZE_THREAD__)
extern "C" void __tsan_acquire(void *), __tsan_release(void *), __tsan_ignore_thread_begin(), __tsan_ignore_thread_end();
extern "C" void *__tsan_get_current_fiber(), *__tsan_create_fiber(unsigned), __tsan_switch_to_fiber(void *, unsigned);
struct quiet {
    quiet() { __tsan_ignore_thread_begin(); }
    ~quiet() { __tsan_ignore_thread_end(); }
};
inline void arrive(char *o) { __tsan_release(o); }
inline void leave(char *o) { __tsan_acquire(o); }
inline void *tsan_fiber(bool host) { return host ? __tsan_get_current_fiber() : __tsan_create_fiber(0); }
inline void tsan_switch(void *f) { __tsan_switch_to_fiber(f, 1); }   /* 1: the switch orders nothing */
#else
struct quiet { quiet() {} };
inline void arrive(char *) {}
inline void leave(char *) {}
inline void *tsan_fiber(bool) { return nullptr; }
inline void tsan_switch(void *) {}
#endif
/* AddressSanitizer must be told which stack it is on: the one it goes to
 * before a switch, the one it came from after. */
#if defined(__SANITIZE_ADDRESS__)
extern "C" void __sanitizer_start_switch_fiber(void **, const void *, size_t);
extern "C" void __sanitizer_finish_switch_fiber(void *, const void **, size_t *);
inline void asan_leave(void **fake, const void *bottom, size_t n) { __sanitizer_start_switch_fiber(fake, bottom, n); }
inline void asan_enter(void *fake, const void **bottom, size_t *n) { __sanitizer_finish_switch_fiber(fake, bottom, n); }
#else
inline void asan_leave(void **, const void *, size_t) {}
inline void asan_enter(void *, const void **, size_t *) {}
#endif

/* ---- Fibers: a switch costs nanoseconds, a thread's wake-up microseconds. */
enum { STACK = 256 << 10, GUARD = 4096, MAX_LANES = 1024 };
#if defined(__x86_64__)
/* Push the callee-saved registers, save the stack pointer in *save, go on at load. */
extern "C" void hip_cpu_swap(void **save, void *load);
asm(".pushsection .text.hip_cpu_swap,\"axG\",@progbits,hip_cpu_swap,comdat\n"
    ".weak hip_cpu_swap\n.type hip_cpu_swap, @function\nhip_cpu_swap:\n"
    "push %rbp\npush %rbx\npush %r12\npush %r13\npush %r14\npush %r15\n"
    "mov %rsp, (%rdi)\nmov %rsi, %rsp\n"
    "pop %r15\npop %r14\npop %r13\npop %r12\npop %rbx\npop %rbp\nret\n.popsection\n");
struct fiber { void *sp, *tsan; char *stack; };
/* A new fiber's stack as a swap leaves one: six registers, entry as the
 * return address, then a null one (where backtraces stop). */
inline void make(fiber &f, void (*entry)()) {
    void **sp = (void **)(f.stack + STACK) - 8;   /* entry starts 16-byte aligned, as if called */
    memset(sp, 0, 8 * sizeof *sp);
    sp[6] = (void *)entry;
    f.sp = sp;
}
/* to's stack pointer is read before TSan moves to `to`, where nothing is quiet yet. */
inline void swap(fiber &from, fiber &to) {
    void *load = to.sp;
    tsan_switch(to.tsan);
    hip_cpu_swap(&from.sp, load);
}
#else   /* elsewhere ucontext: the same, with a system call a switch */
struct fiber { ucontext_t uc; void *tsan; char *stack; };
inline void make(fiber &f, void (*entry)()) {
    getcontext(&f.uc);
    f.uc.uc_stack.ss_sp = f.stack, f.uc.uc_stack.ss_size = STACK, f.uc.uc_link = nullptr;
    makecontext(&f.uc, entry, 0);
}
inline void swap(fiber &from, fiber &to) { tsan_switch(to.tsan); swapcontext(&from.uc, &to.uc); }
#endif

inline fiber lanes[MAX_LANES], host;   /* a lane's fiber lives from its first launch on */
inline int made, cur = -1, prev;        /* lanes made; the one running (-1: the host); the one before */
inline const void *host_bottom;         /* the host's stack, for ASan */
inline size_t host_size;

/* In the fiber just switched to: ASan learns the stack it left. */
inline void arrived(void *fake) {
    const void *bottom = nullptr;
    size_t size = 0;
    asan_enter(fake, &bottom, &size);
    if (prev < 0) host_bottom = bottom, host_size = size;
}
/* From the running lane (or the host) to lane `to` (-1: the host). */
inline void switch_to(int to) {
    quiet q;
    fiber &a = cur < 0 ? host : lanes[cur], &b = to < 0 ? host : lanes[to];
    void *fake;
    prev = cur, cur = to;
    threadIdx = dim3(to < 0 ? 0 : to, 0, 0);
    asan_leave(&fake, to < 0 ? host_bottom : b.stack, to < 0 ? host_size : (size_t)STACK);
    swap(a, b);
    arrived(fake);
}

/* Where a lane is: what NULL when it runs, else a wait or RETURNED. */
struct site { const char *what, *file; int line; };
inline const char RETURNED[] = "returned";
inline bool same(site a, site b) { return a.what == b.what && a.line == b.line && (a.file == b.file || !strcmp(a.file, b.file)); }
inline std::string str(site s) { return std::string(s.what) + " (" + s.file + ":" + std::to_string(s.line) + ")"; }

/* One wavefront's shuffles: who is there, with which mask and value. */
struct wave {
    int arrived = 0, gen = 0, live = 0, mask[64];
    bool here[64] = {};
    float val[2][64];
    site at;
    char sync[2];                 /* for TSan */
};

/* The launch in progress. */
struct launch_state {
    int grid, block, live, blocked, arrived, gen, ended, wg, done;
    void (*body)(void *);         /* the kernel with its arguments */
    void *arg;
    site bar;                     /* the barrier the arrived lanes wait at */
    char bar_sync[2], wg_sync[2], start, end;   /* for TSan */
    std::vector<site> at;         /* per lane */
    std::vector<bool> finished;   /* per lane: every workgroup run */
    std::vector<wave> waves;
    std::string err;
    size_t lds_bytes;
};
inline launch_state *L;

inline void fail(const std::string &m) {
    if (L->err.empty()) L->err = m;
}

/* Run the next lane that has not finished; false: there is none. */
inline bool yield() {
    int to = cur;
    do to = (to + 1) % L->block; while (L->finished[to] && to != cur);
    if (to == cur) return false;
    switch_to(to);
    return true;
}

/* A wavefront's shuffle, once all its live lanes are there (n lanes in
 * the wavefront): each reads its partner's value, a lane that is there too. */
inline void release(wave &w, int n) {
    for (int l = 0; l < n; l++) {
        int p = l ^ w.mask[l];
        if (w.here[l] && (p >= n || !w.here[p]))
            return fail(str(w.at) + ": lane " + std::to_string(l) + " reads lane " + std::to_string(p) +
                        (p >= n ? ", which does not exist" : ", which has returned"));
    }
    memset(w.here, 0, sizeof w.here);
    L->blocked -= w.arrived;
    w.arrived = 0;
    w.gen++;
}

/* After a lane arrived somewhere or returned: let go what can go, report what never can. */
inline void settle() {
    if (L->arrived && L->arrived == L->live) {
        if (L->live < L->block) {
            int r = 0;
            while (L->at[r].what != RETURNED) r++;
            return fail(str(L->bar) + ": lane " + std::to_string(r) + " returned without reaching it");
        }
        L->blocked -= L->arrived;
        L->arrived = 0;
        L->gen++;
    }
    for (size_t i = 0; i < L->waves.size(); i++)
        if (L->waves[i].arrived && L->waves[i].arrived == L->waves[i].live)
            release(L->waves[i], min(warpSize, L->block - (int)i * warpSize));
    if (L->live && L->blocked == L->live) {   /* every live lane waits, and none could go */
        std::string m = "deadlock:";
        for (int a = 0, b; a < L->block; a = b) {
            for (b = a + 1; b < L->block && same(L->at[b], L->at[a]); b++) {}
            m += " lanes " + std::to_string(a) + "-" + std::to_string(b - 1) +
                 (L->at[a].what == RETURNED ? " returned;" : " wait at " + str(L->at[a]) + ";");
        }
        fail(m);
    }
}

/* Having arrived at the workgroup's barrier or a wavefront's shuffle, let the others run until gen moves on. */
inline void wait(const int &gen, char *sync) {
    int seen = gen;
    arrive(&sync[seen & 1]);
    L->blocked++;
    settle();
    while (gen == seen && L->err.empty())
        if (!yield()) fail("every other lane has finished");
    if (!L->err.empty()) throw stop();
    leave(&sync[seen & 1]);
    L->at[threadIdx.x].what = nullptr;
}

inline void barrier(const char *file, int line) {
    quiet q;
    site s = { "__syncthreads", file, line };
    if (L->arrived && !same(s, L->bar)) fail(str(s) + ": other lanes wait at another barrier, " + str(L->bar));
    if (!L->err.empty()) throw stop();
    L->bar = L->at[threadIdx.x] = s;
    L->arrived++;
    wait(L->gen, L->bar_sync);
}

inline float shfl_xor(float v, int mask, const char *file, int line) {
    quiet q;
    int lane = threadIdx.x % warpSize;
    wave &w = L->waves[threadIdx.x / warpSize];
    site s = { "__shfl_xor", file, line };
    if (w.arrived && !same(s, w.at)) fail(str(s) + ": other lanes of the wavefront are at another shuffle, " + str(w.at));
    if (!L->err.empty()) throw stop();
    int gen = w.gen;
    w.val[gen & 1][lane] = v;   /* two buffers: a lane may reach the next shuffle before all have read this one */
    w.mask[lane] = mask;
    w.here[lane] = true;
    w.at = L->at[threadIdx.x] = s;
    w.arrived++;
    wait(w.gen, w.sync);
    return w.val[gen & 1][lane ^ mask];
}

/* A lane has returned from the kernel: wait for the workgroup's others;
 * the last one readies the next workgroup. false: the launch failed. */
inline bool end_workgroup() {
    quiet q;
    L->at[threadIdx.x] = { RETURNED, "", 0 };
    L->live--, L->waves[threadIdx.x / warpSize].live--;
    if (L->err.empty()) settle();
    int wg = L->wg;
    arrive(&L->wg_sync[wg & 1]);   /* the next workgroup reuses the static LDS */
    if (++L->ended == L->block) {
        L->ended = 0, L->live = L->block, L->wg++;
        for (int l = 0; l < L->block; l++) L->at[l].what = nullptr, L->waves[l / warpSize].live++;
        if (lds) memset(lds, 0xff, L->lds_bytes);   /* NaN */
    }
    while (L->wg == wg && L->err.empty())
        if (!yield()) fail("every other lane has finished");
    leave(&L->wg_sync[wg & 1]);
    return L->err.empty();
}

/* A lane's fiber: each launch that has it, its workgroups; then the next
 * lane runs, or the host once every lane has finished. */
inline void entry() {
    { quiet q; arrived(nullptr); }
    for (;;) {
        launch_state *s;
        int l;
        { quiet q; s = L, l = cur; }
        leave(&s->start);   /* the host's writes before the launch */
        for (int w = 0; w < s->grid; w++) {
            { quiet q; blockIdx = dim3(w, 0, 0); }
            try { s->body(s->arg); } catch (stop &) {}
            if (!end_workgroup()) break;
        }
        arrive(&s->end);
        quiet q;
        s->finished[l] = true;
        if (++s->done == s->block) switch_to(-1);
        else yield();
    }
}

/* Stacks for lanes 0..n-1, each with a guard page below it. */
inline bool make_lanes(int n) {
    for (; made < n; made++) {
        char *m = (char *)mmap(nullptr, STACK, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (m == MAP_FAILED || mprotect(m, GUARD, PROT_NONE)) return false;
        lanes[made].stack = m;
        lanes[made].tsan = tsan_fiber(false);
        make(lanes[made], entry);
    }
    return true;
}

/* Run fn(args...) over grid workgroups of block lanes with lds_bytes of
 * dynamic LDS, at wavefront size warpSize. "" or the error. */
template <typename... P, typename... A>
std::string launch(void (*fn)(P...), dim3 grid, dim3 block, size_t lds_bytes, A... args) {
    /* What a GPU refuses to launch; hipath does not opt in to more than
     * 48 KiB of dynamic LDS, which NVIDIA requires (AMD allows 64). */
    int g = (int)grid.x, b = (int)block.x;
    if (grid.y * grid.z != 1 || block.y * block.z != 1) return "launch refused: hip_cpu runs 1-D launches only";
    if (g < 1 || b < 1 || b > MAX_LANES || lds_bytes > 48 * 1024 || (warpSize != 32 && warpSize != 64))
        return "launch refused: grid " + std::to_string(g) + ", block " + std::to_string(b) + ", " +
               std::to_string(lds_bytes) + " bytes of LDS, wave " + std::to_string(warpSize);
    if (!make_lanes(b)) return "launch refused: no memory for " + std::to_string(b) + " lane stacks";
    auto run = [&] { fn(args...); };
    launch_state s;
    s.grid = g;
    s.block = s.live = b;
    s.blocked = s.arrived = s.gen = s.ended = s.wg = s.done = 0;
    s.body = [](void *r) { (*(decltype(run) *)r)(); };
    s.arg = &run;
    s.at.assign(b, site{ nullptr, "", 0 });
    s.finished.assign(b, false);
    s.waves = std::vector<wave>((b + warpSize - 1) / warpSize);
    for (int l = 0; l < b; l++) s.waves[l / warpSize].live++;
    s.lds_bytes = lds_bytes;
    L = &s;
    lds = lds_bytes ? malloc(lds_bytes) : nullptr;
    if (lds) memset(lds, 0xff, lds_bytes);
    blockDim = dim3(b, 1, 1);
    host.tsan = tsan_fiber(true);
    arrive(&s.start);
    switch_to(0);   /* back when every lane has finished */
    leave(&s.end);
    free(lds);
    lds = nullptr;
    L = nullptr;
    return s.err;
}

}   // namespace hip_cpu
#endif
