/*
 * profile.h -- layer 1: a GPU as the numbers the lower bounds need
 * (capacity, bandwidth, peak rates), read from layers/gpu/profiles/<name>.json.
 */
#ifndef HIPATH_GPU_PROFILE_H
#define HIPATH_GPU_PROFILE_H

#include "layers/common/dtype.h"
#include <limits.h>

typedef struct {
    char name[128];          /* "AMD Radeon PRO W7900" */
    char arch[64];           /* "RDNA3 (gfx1100)" */
    char source[512];        /* the datasheet the figures come from */
    char path[PATH_MAX];     /* the file it was read from, for messages */
    double memory_bytes;     /* M_cap */
    double bandwidth;        /* beta, device memory, bytes/s */
    struct { double fp32, fp16, bf16, int8; } peak;   /* Pi, dense FLOP/s (OP/s for int8); 0: not given */
    int compute_units;       /* CUs (AMD) or SMs (NVIDIA) */
    int wavefront_size;      /* 64 CDNA, 32 RDNA wave32 and NVIDIA warps */
    int lds_bytes_per_cu;    /* LDS / shared memory; 0 when not given */
    double host_link;        /* host <-> device, one direction, bytes/s */
    double launch_latency_s; /* one kernel launch, typical measured */
    /* The links between GPUs of one server, for tensor and pipeline
     * parallelism (layers/gpu/link.h); links == 0: the profile gives none. */
    struct {
        char name[128];      /* "NVLink 4 via NVSwitch (HGX H100 8-GPU)" */
        char topology[16];   /* "switch": every link to switches, any peer at all of them;
                                "mesh": one link to each peer; "host": through PCIe and the host */
        int links;           /* per GPU */
        double link_bw;      /* one link, one direction, bytes/s */
        double latency_s;    /* one hop of a collective step, typical measured */
        int max_gpus;        /* GPUs one server joins this way */
        char source[512];    /* the datasheet the link figures come from */
    } link;
} gpu_profile;

/* A profile name ("w7900") looked up in $HIPATH_HOME/layers/gpu/profiles,
 * <executable>/../layers/gpu/profiles, then ./layers/gpu/profiles; or a path
 * to a JSON file (anything with a '/' or ending in .json). 0, or -1 with a
 * one-line reason naming the file and key. */
int gpu_profile_load(gpu_profile *p, const char *name_or_path, char *err, int errlen);

/* The peak a kernel computing with weights of dtype dt reaches: F16 and
 * BF16 on matrix cores at theirs, the GGUF block formats at int8's (0 when
 * the profile gives none), anything else at fp32's. */
double gpu_profile_matmul_peak(const gpu_profile *p, dtype dt);
/* Pi for a compute dtype ("fp32", "fp16", "bf16", "int8"). A profile need
 * give only the peaks its questions use: 0 and *out, or -1 with a one-line
 * reason naming the file and the key (peak_flops.int8) it lacks. */
int gpu_profile_peak(const gpu_profile *p, const char *dtype, double *out, char *err, int errlen);

/* The known profile names, ", "-separated, into buf (for help text). */
void gpu_profile_list(char *buf, int len);

#endif
