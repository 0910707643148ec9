/*
 * hip_cpu.h -- just enough HIP to run hipath's real kernels (*_kernels.h)
 * on the CPU, for tests (tests/hip_cpu/, docs/hip-cpu.md). Include it
 * before the kernel headers, in C++ compiled by the host compiler.
 *
 * One OS thread per lane, one workgroup at a time. __syncthreads waits for
 * every lane of the workgroup, __shfl_xor for the lanes of its own
 * wavefront only (so `if (w == 0) wave_sum(v)` works, as on a GPU).
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
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>
#include <vector>
#include "kernels/hip/geometry.h"

#define __global__
#define __device__
#define __host__
#define __shared__ static
#define HIP_DYNAMIC_SHARED(type, var) type *var = (type *)hip_cpu::lds;
#define __syncthreads() hip_cpu::barrier(__FILE__, __LINE__)
#define __shfl_xor(v, mask) hip_cpu::shfl_xor((v), (mask), __FILE__, __LINE__)

struct hip_cpu_dim { unsigned x, y, z; };
inline thread_local hip_cpu_dim threadIdx, blockIdx;
inline hip_cpu_dim blockDim;
inline int warpSize = 64;
struct alignas(16) uint4 { unsigned x, y, z, w; };   /* 16-byte aligned, as HIP's: UBSan checks the loads */

inline float rsqrtf(float x) { return 1.0f / sqrtf(x); }
inline int min(int a, int b) { return a < b ? a : b; }
inline float __uint_as_float(unsigned u) { float f; memcpy(&f, &u, 4); return f; }
inline float __int_as_float(int i) { float f; memcpy(&f, &i, 4); return f; }

namespace hip_cpu {

inline void *lds;   /* the launch's dynamic LDS */
struct stop {};     /* unwinds a lane once the launch has failed */

/* ThreadSanitizer should see the order a GPU gives and no more: a barrier
 * orders its workgroup, a shuffle its wavefront. The runtime's one mutex
 * would order every lane that takes it and hide races, so TSan is told to
 * ignore the runtime (its fields and its mutex) and given those edges by
 * hand: each lane releases a sync object as it arrives and acquires it as
 * it leaves (two objects, alternating: a lane may reach the next wait
 * before the others have left this one). */
#if defined(__SANITIZE_THREAD__)
extern "C" void __tsan_acquire(void *), __tsan_release(void *), __tsan_ignore_thread_begin(), __tsan_ignore_thread_end();
extern "C" void AnnotateIgnoreSyncBegin(const char *, int), AnnotateIgnoreSyncEnd(const char *, int);
struct quiet {
    quiet() { __tsan_ignore_thread_begin(); AnnotateIgnoreSyncBegin(__FILE__, __LINE__); }
    ~quiet() { AnnotateIgnoreSyncEnd(__FILE__, __LINE__); __tsan_ignore_thread_end(); }
};
inline void arrive(char *o) { AnnotateIgnoreSyncEnd(__FILE__, __LINE__); __tsan_release(o); AnnotateIgnoreSyncBegin(__FILE__, __LINE__); }
inline void leave(char *o) { AnnotateIgnoreSyncEnd(__FILE__, __LINE__); __tsan_acquire(o); AnnotateIgnoreSyncBegin(__FILE__, __LINE__); }
#else
struct quiet { quiet() {} };
inline void arrive(char *) {}
inline void leave(char *) {}
#endif

/* Where a lane is: what NULL when it runs, else a wait or RETURNED. */
struct site { const char *what, *file; int line; };
inline const char RETURNED[] = "returned";
inline bool same(site a, site b) { return a.what == b.what && a.line == b.line && !strcmp(a.file, b.file); }
inline std::string str(site s) { return std::string(s.what) + " (" + s.file + ":" + std::to_string(s.line) + ")"; }

/* One wavefront's shuffles: who is there, with which mask and value. */
struct wave {
    int arrived = 0, gen = 0, live = 0, mask[64];
    bool here[64] = {};
    float val[2][64];
    site at;
    std::condition_variable cv;
    char sync[2];                 /* for TSan */
};

/* The launch in progress; every field under mu. */
struct launch_state {
    std::mutex mu;
    std::condition_variable cv;   /* the barrier, and the end of a workgroup */
    int block, live, blocked, arrived, gen, ended, wg;
    site bar;                     /* the barrier the arrived lanes wait at */
    char bar_sync[2], wg_sync[2]; /* for TSan */
    std::vector<site> at;         /* per lane */
    std::vector<wave> waves;
    std::string err;
    size_t lds_bytes;
};
inline launch_state *L;

inline void fail(const std::string &m) {
    if (!L->err.empty()) return;
    L->err = m;
    L->cv.notify_all();
    for (wave &w : L->waves) w.cv.notify_all();
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
    w.cv.notify_all();
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
        L->cv.notify_all();
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

/* Having arrived at the workgroup's barrier or a wavefront's shuffle, wait for gen to move on. */
inline void wait(std::unique_lock<std::mutex> &g, std::condition_variable &cv, const int &gen, char *sync) {
    int seen = gen;
    arrive(&sync[seen & 1]);
    L->blocked++;
    settle();
    cv.wait(g, [&] { return gen != seen || !L->err.empty(); });
    if (!L->err.empty()) throw stop();
    leave(&sync[seen & 1]);
    L->at[threadIdx.x].what = nullptr;
}

inline void barrier(const char *file, int line) {
    quiet q;
    std::unique_lock<std::mutex> g(L->mu);
    site s = { "__syncthreads", file, line };
    if (L->arrived && !same(s, L->bar)) fail(str(s) + ": other lanes wait at another barrier, " + str(L->bar));
    if (!L->err.empty()) throw stop();
    L->bar = L->at[threadIdx.x] = s;
    L->arrived++;
    wait(g, L->cv, L->gen, L->bar_sync);
}

inline float shfl_xor(float v, int mask, const char *file, int line) {
    quiet q;
    std::unique_lock<std::mutex> g(L->mu);
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
    wait(g, w.cv, w.gen, w.sync);
    return w.val[gen & 1][lane ^ mask];
}

/* A lane has returned from the kernel: wait for the workgroup's others;
 * the last one readies the next workgroup. false: the launch failed. */
inline bool end_workgroup() {
    quiet q;
    std::unique_lock<std::mutex> g(L->mu);
    L->at[threadIdx.x] = { RETURNED, "", 0 };
    L->live--, L->waves[threadIdx.x / warpSize].live--;
    if (L->err.empty()) settle();
    int wg = L->wg;
    arrive(&L->wg_sync[wg & 1]);   /* the next workgroup reuses the static LDS */
    if (++L->ended == L->block) {
        L->ended = 0, L->live = L->block, L->wg++;
        for (int l = 0; l < L->block; l++) L->at[l].what = nullptr, L->waves[l / warpSize].live++;
        if (lds) memset(lds, 0xff, L->lds_bytes);   /* NaN */
        L->cv.notify_all();
    }
    L->cv.wait(g, [&] { return L->wg != wg || !L->err.empty(); });
    leave(&L->wg_sync[wg & 1]);
    return L->err.empty();
}

/* Run fn(args...) over d.grid workgroups of d.block lanes with lds_bytes
 * of dynamic LDS, at wavefront size warpSize. "" or the error. */
template <typename... P, typename... A>
std::string launch(void (*fn)(P...), kdims d, size_t lds_bytes, A... args) {
    /* What a GPU refuses to launch; hipath does not opt in to more than
     * 48 KiB of dynamic LDS, which NVIDIA requires (AMD allows 64). */
    if (d.grid < 1 || d.block < 1 || d.block > 1024 || lds_bytes > 48 * 1024 || (warpSize != 32 && warpSize != 64))
        return "launch refused: grid " + std::to_string(d.grid) + ", block " + std::to_string(d.block) + ", " +
               std::to_string(lds_bytes) + " bytes of LDS, wave " + std::to_string(warpSize);
    launch_state s;
    s.block = s.live = d.block;
    s.blocked = s.arrived = s.gen = s.ended = s.wg = 0;
    s.at.assign(d.block, site{ nullptr, "", 0 });
    s.waves = std::vector<wave>((d.block + warpSize - 1) / warpSize);
    for (int l = 0; l < d.block; l++) s.waves[l / warpSize].live++;
    s.lds_bytes = lds_bytes;
    L = &s;
    lds = lds_bytes ? malloc(lds_bytes) : nullptr;
    if (lds) memset(lds, 0xff, lds_bytes);
    blockDim = { (unsigned)d.block, 1, 1 };
    std::vector<std::thread> lanes;
    for (int l = 0; l < d.block; l++)
        lanes.emplace_back([=] {
            threadIdx = { (unsigned)l, 0, 0 };
            for (int b = 0; b < d.grid; b++) {
                blockIdx = { (unsigned)b, 0, 0 };
                try { fn(args...); } catch (stop &) {}
                if (!end_workgroup()) break;
            }
        });
    for (std::thread &t : lanes) t.join();
    free(lds);
    lds = nullptr;
    L = nullptr;
    return s.err;
}

}   // namespace hip_cpu
#endif
