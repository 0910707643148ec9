/*
 * sim.h -- layer 1, simulated: a GPU as the wave model of a device profile.
 *
 * A launch of G workgroups of B threads is W = G * ceil(B / wave)
 * wavefronts. Each compute unit runs one workgroup at a time, so the grid
 * goes out in waves = ceil(G / CUs) rounds. Arithmetic is a CU's own (its
 * share Pi / CUs), so a round of compute takes as long as one workgroup's,
 * and a last round with one CU busy takes a whole one. Memory bandwidth is
 * the device's, shared by the CUs that are busy: a grid that fills the CUs
 * reads at beta however its last round is filled, a grid of G < CUs at
 * beta * G / CUs (a CU draws no more than its share):
 *   t_compute = waves * (F/G) / (Pi/CUs)
 *   t_memory  = R / (beta * min(1, G / CUs))
 *   t         = max(t_compute, t_memory) + launch latency,  t_wave = that max / waves
 * where Pi is the rate the kernel computes at: a matmul's at the peak of
 * its weights' dtype (matrix cores), any other kernel at fp32's.
 * A grid that fills every CU k times gives max(F/Pi, R/beta), the bound;
 * a grid of 2 workgroups on 96 CUs gives 48 times it: 94 CUs sit idle.
 * (Bandwidth shared, not split per CU: otherwise a memory-bound GEMM whose
 * last round is nearly empty would run slower than one with more rows,
 * and a longer prompt could prefill faster than a shorter one.)
 */
#ifndef HIPATH_GPU_SIM_H
#define HIPATH_GPU_SIM_H

#include "layers/common/copy.h"
#include "layers/gpu/profile.h"
#include <stdint.h>

typedef struct {
    int workgroups, wavefronts, waves;
    int cus_last;                 /* CUs busy in the last wave */
    int compute_bound;            /* t_compute > t_memory: its peak, not the bandwidth, sets its time */
    double wave_s, busy_s, total_s;
} sim_kernel;

/* A kernel's class, what one efficiency covers when hipath validate fits
 * the model to published measurements (labs/validate.h): matmuls by which
 * bound sets their time, attention by phase (prefill's FLOPs, decode's KV
 * reads), and the rest (norms, RoPE, SwiGLU, adds, embedding, KV appends). */
enum sim_class { SIM_GEMM_COMPUTE, SIM_GEMM_MEMORY, SIM_ATTENTION_PREFILL, SIM_ATTENTION_DECODE, SIM_ELEMENTWISE, SIM_CLASSES };
extern const char *const SIM_CLASS_NAME[SIM_CLASSES];   /* "gemm_compute", ... */
enum sim_class sim_class_of(const char *kernel, const sim_kernel *k);

/* Model one launch. 0, or -1 with a reason (a profile without peak,
 * bandwidth or CUs, or an empty grid). */
int sim_model(const gpu_profile *p, int workgroups, int block, double flops, double bytes, double peak,
              sim_kernel *k, char *err, int errlen);

/* The simulated device's timeline: one stream per GPU, in order. Times are
 * on the trace timeline; slices are TRACE_MODELED on each GPU's stream
 * track (SIM_STREAM_TRACK(g)) under layer 1. The GPUs come in groups of
 * `gpus` (tensor parallelism) that run the same shard of every kernel in
 * lockstep, so one timeline stands for the group and each GPU's track
 * gets its slices; a group is a pipeline stage (`stages`, --pp) of an
 * engine replica (`replicas`, --dp), each with a timeline of its own.
 * GPU k of group j is GPU j x gpus + k on the trace. */
#define SIM_STREAM_TRACK(g) (1 + (g))
void     sim_open(const gpu_profile *p, int gpus, int stages, int replicas);
/* Where the calling thread's work goes from now: replica r (an engine's
 * thread, once), stage s (its forward, as it reaches each stage). */
void     sim_replica(int r);
void     sim_stage(int s);
/* The track of GPU g of the calling thread's group. */
int      sim_track(int g);
const gpu_profile *sim_profile(void);    /* NULL when no device is simulated */
/* Queue kernel (for op), launched at now, at max(now, stream free), on
 * every GPU; k is one GPU's shape. Returns its modeled end. */
uint64_t sim_launch(const char *kernel, const char *op, int64_t step, const sim_kernel *k, double flops, double bytes,
                    uint64_t now);
/* Queue a copy of n bytes: over the host link (H2D, D2H) or the device
 * memory (D2D: read and write). H2D and D2D happen on every GPU (each
 * holds the step's inputs), D2H from GPU 0 (which holds the logits).
 * Returns its modeled end. */
uint64_t sim_copy(enum copy_dir dir, double bytes, int64_t step);
/* Collectives over the interconnect (link.h), queued on every GPU's stream:
 * the ring all-reduce of `bytes` (or one of its halves), and the gather of each GPU's `bytes` to
 * GPU 0 (arrows from every GPU's slice into GPU 0's: the join). `call` is
 * the library call's name. Return their modeled end. */
uint64_t sim_ring(const char *call, double bytes, int phases, int64_t step);   /* phases: gpu_ring_time's */
/* Expert parallelism: the all-to-all in which GPU g of the group sends
 * sent[g] bytes and receives received[g] (link.h), and a launch whose
 * shape differs by GPU (k[g]: its experts' rows), the group waiting for
 * the slowest. Return their modeled end. */
uint64_t sim_all_to_all(const char *call, const double *sent, const double *received, int64_t step);
uint64_t sim_launch_each(const char *kernel, const char *op, int64_t step, const sim_kernel *k, const double *flops,
                         const double *bytes, uint64_t now);
uint64_t sim_gather(const char *call, double bytes, int64_t step);
/* The activations' hand-off from stage `from` to stage `to` of the
 * calling thread's replica (link.h's send), GPU k to GPU k: it starts when
 * both groups are free and holds both. Returns its modeled end. */
uint64_t sim_send(double bytes, int from, int to, int64_t step);
/* The modeled end of what the calling thread's group has queued (an event
 * recorded on its streams), and the host waiting for such an end. */
uint64_t sim_event_record(void);
void     sim_event_wait(uint64_t t);
/* The modeled time the streams have been busy since sim_open: every kernel,
 * copy and collective queued, back to back (what a step's gpu_ns sums),
 * whatever the host did between them. */
uint64_t sim_busy_ns(void);
/* The host waits for its replica's streams: the timeline jumps to their end. */
void     sim_wait(void);
/* A sweep's lighter trace (on 1): a step's kernels are not each a slice
 * and a CU-occupancy series, but one slice per kernel class (arg `class`),
 * its duration the sum of theirs, its args their launches, FLOPs and bytes.
 * Sums per step are the same as the kernels' (v_steps.gpu_ns); copies and
 * collectives stay slices of their own. Written when the step changes and
 * when the host waits. */
void     sim_summarize(int on);

#endif
