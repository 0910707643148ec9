/*
 * link.h -- layer 1: the links between the GPUs of one server, and what a
 * collective over them costs (docs/devices.md, "Between GPUs").
 *
 * Tensor parallelism over N GPUs sums each layer's partial results twice
 * (after attention's output projection and after the MLP's down
 * projection) with an all-reduce. NCCL and RCCL run it as a ring: a
 * reduce-scatter then an all-gather, each N - 1 steps in which every GPU
 * sends bytes / N to the next one, so
 *   t = 2 (N-1)/N x bytes / beta_ring  +  2 (N-1) x alpha
 * (Patarasuk & Yuan 2009; Thakur, Rabenseifner & Gropp 2005): a bandwidth
 * term, which no algorithm beats (each GPU must send and receive
 * (N-1)/N of the data twice over), and one hop's latency alpha per step.
 * beta_ring is what one GPU sends at while every GPU sends:
 *   switch  all its links (NVLink through NVSwitch: any peer at full rate)
 *   mesh    min(links, N-1) links (xGMI: one link per peer; the rings run
 *           over the N-1 links to the group's peers)
 *   host    its one PCIe link, through the host
 * Its halves are collectives of their own: the reduce-scatter (each GPU
 * ends with 1/N of the sums) and the all-gather (each GPU's 1/N to all),
 * each (N-1)/N x bytes / beta_ring + (N-1) x alpha.
 * A pipeline stage hands its activations to the next over one pair of
 * GPUs: bytes / beta_pair + alpha, with beta_pair all the links on a
 * switch, one link on a mesh or the host.
 * Expert parallelism sends each token to its experts' GPUs and back, an
 * all-to-all: each GPU sends every peer its share at once, over its links
 * at beta_ring, in N-1 exchanges (pairwise exchange, Thakur et al. 2005):
 *   t = bytes / beta_ring  +  (N-1) x alpha
 * where bytes is the busiest GPU's traffic, the larger of what it sends
 * and what it receives (with hot experts one GPU receives most of it, and
 * the others wait for it).
 */
#ifndef HIPATH_GPU_LINK_H
#define HIPATH_GPU_LINK_H

#include "layers/gpu/profile.h"

/* n GPUs of this profile in one server: 0, or -1 with a one-line reason
 * (n < 1, no interconnect in the profile, more than it joins). */
int    gpu_link_check(const gpu_profile *p, int n, char *err, int errlen);
/* beta_ring for n GPUs, bytes/s (0 for n = 1: nothing to send). */
double gpu_ring_bandwidth(const gpu_profile *p, int n);
/* The ring all-reduce of `bytes` over n GPUs, seconds, and its two terms;
 * gpu_ring_time: `phases` of its two halves (2: the all-reduce; 1: a
 * reduce-scatter or an all-gather). */
typedef struct { double bandwidth_s, latency_s, total_s; } gpu_all_reduce;
gpu_all_reduce gpu_all_reduce_time(const gpu_profile *p, int n, double bytes);
gpu_all_reduce gpu_ring_time(const gpu_profile *p, int n, double bytes, int phases);
/* The all-to-all over n GPUs whose busiest GPU sends or receives `bytes`
 * (the same two terms). */
gpu_all_reduce gpu_all_to_all_time(const gpu_profile *p, int n, double bytes);
/* beta_pair, bytes/s, and one point-to-point send of `bytes` between two
 * GPUs, seconds: bytes / beta_pair + alpha. */
double gpu_pair_bandwidth(const gpu_profile *p);
double gpu_send_time(const gpu_profile *p, double bytes);

#endif
