/* link.c -- layer 1: the interconnect's collectives (link.h). */
#include "layers/gpu/link.h"
#include <stdio.h>
#include <string.h>

int gpu_link_check(const gpu_profile *p, int n, char *err, int errlen) {
    if (n < 1) return snprintf(err, errlen, "%d GPUs: at least 1", n), -1;
    if (n == 1) return 0;
    if (p->link.links < 1)
        return snprintf(err, errlen, "%s: the profile gives no interconnect, so it cannot be split over %d GPUs", p->name, n), -1;
    if (n > p->link.max_gpus)
        return snprintf(err, errlen, "%d GPUs: %s joins at most %d in one server (%s)", n, p->name, p->link.max_gpus, p->link.name), -1;
    return 0;
}

double gpu_ring_bandwidth(const gpu_profile *p, int n) {
    if (n < 2) return 0;
    if (!strcmp(p->link.topology, "switch")) return p->link.links * p->link.link_bw;
    if (!strcmp(p->link.topology, "mesh")) return (n - 1 < p->link.links ? n - 1 : p->link.links) * p->link.link_bw;
    return p->link.link_bw;
}

gpu_all_reduce gpu_ring_time(const gpu_profile *p, int n, double bytes, int phases) {
    gpu_all_reduce a = { 0, 0, 0 };
    if (n < 2) return a;
    a.bandwidth_s = (double)phases * (n - 1) / n * bytes / gpu_ring_bandwidth(p, n);
    a.latency_s = (double)phases * (n - 1) * p->link.latency_s;
    a.total_s = a.bandwidth_s + a.latency_s;
    return a;
}

gpu_all_reduce gpu_all_reduce_time(const gpu_profile *p, int n, double bytes) { return gpu_ring_time(p, n, bytes, 2); }

gpu_all_reduce gpu_all_to_all_time(const gpu_profile *p, int n, double bytes) {
    gpu_all_reduce a = { 0, 0, 0 };
    if (n < 2) return a;
    a.bandwidth_s = bytes / gpu_ring_bandwidth(p, n);
    a.latency_s = (n - 1) * p->link.latency_s;
    a.total_s = a.bandwidth_s + a.latency_s;
    return a;
}

double gpu_pair_bandwidth(const gpu_profile *p) {
    return !strcmp(p->link.topology, "switch") ? p->link.links * p->link.link_bw : p->link.link_bw;
}

double gpu_send_time(const gpu_profile *p, double bytes) { return bytes / gpu_pair_bandwidth(p) + p->link.latency_s; }
