/*
 * sim.h -- layer 1, simulated: a GPU as the wave model of a device profile.
 *
 * A launch of G workgroups of B threads is W = G * ceil(B / wave)
 * wavefronts. Each compute unit runs one workgroup at a time at its share
 * of the device (Pi / CUs, beta / CUs), so the grid goes out in
 * waves = ceil(G / CUs) rounds, each taking as long as one workgroup:
 *   t_wave = max((F/G) / (Pi/CUs), (R/G) / (beta/CUs))
 * where Pi is the rate the kernel computes at: a matmul's at the peak of
 * its weights' dtype (matrix cores), any other kernel at fp32's.
 *   t      = waves * t_wave + launch latency
 * A grid that fills every CU k times gives max(F/Pi, R/beta), the bound;
 * a grid of 2 workgroups on 96 CUs gives 48 times it: 94 CUs sit idle.
 */
#ifndef HIPATH_GPU_SIM_H
#define HIPATH_GPU_SIM_H

#include "layers/common/copy.h"
#include "layers/gpu/profile.h"
#include <stdint.h>

typedef struct {
    int workgroups, wavefronts, waves;
    int cus_last;                 /* CUs busy in the last wave */
    double wave_s, busy_s, total_s;
} sim_kernel;

/* Model one launch. 0, or -1 with a reason (a profile without peak,
 * bandwidth or CUs, or an empty grid). */
int sim_model(const gpu_profile *p, int workgroups, int block, double flops, double bytes, double peak,
              sim_kernel *k, char *err, int errlen);

/* The simulated device's timeline (one stream, in order). Times are on the
 * trace timeline; slices are TRACE_MODELED on the GPU layer's stream track. */
void     sim_open(const gpu_profile *p);
const gpu_profile *sim_profile(void);    /* NULL when no device is simulated */
/* Queue kernel (for op), launched at now, at max(now, stream free); returns
 * its modeled end. */
uint64_t sim_launch(const char *kernel, const char *op, int64_t step, const sim_kernel *k, double flops, double bytes,
                    uint64_t now);
/* Queue a copy of n bytes: over the host link (H2D, D2H) or the device
 * memory (D2D: read and write). Returns its modeled end. */
uint64_t sim_copy(enum copy_dir dir, double bytes, int64_t step);
/* The host waits for the stream: the timeline jumps to its end. */
void     sim_wait(void);

#endif
