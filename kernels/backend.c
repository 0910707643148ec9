/*
 * backend.c -- the registry: --device names a backend, the backend names
 * its driver; layer 2 opens the driver, layer 4 calls the kernels.
 */
#include "kernels/backend.h"
#include <string.h>

extern const backend backend_cpu, backend_sim, backend_analytic;   /* kernels/cpu/ */
#ifdef HIPATH_HIP
extern const backend backend_hip;                                  /* kernels/hip/backend_hip.hip */
#endif

/* --device PREFIX[:ARG] */
static const struct { const char *prefix; const backend *b; int has_arg; } REGISTRY[] = {
    { "cpu", &backend_cpu, 0 },
    { "sim", &backend_sim, 1 },
    { "analytic", &backend_analytic, 1 },
#ifdef HIPATH_HIP
    { "hip", &backend_hip, 1 },
#endif
};

static const backend *now = &backend_cpu;
const backend *backend_now(void) { return now; }

static int open_as(const backend *b, const char *name, const char *arg, char *err, int errlen) {
    if (rt_open(b->driver, name, arg, b->jit, b->n_jit, err, errlen)) return -1;
    now = b;
    return 0;
}

int backend_open(const char *spec, char *err, int errlen) {
    if (!strcmp(spec, "auto")) {
        int found = 0;
#ifdef HIPATH_HIP
        found = !open_as(&backend_hip, "hip:0", "0", err, errlen);
#endif
        if (!found && open_as(&backend_sim, "sim:w7900", "w7900", err, errlen)) return -1;
        const rt_device *d = rt_device_now();
        fprintf(stderr, "hipath: device auto -> %s (%s)%s\n", d->name, d->prof.name, found ? "" : ", no HIP device");
        return 0;
    }
    for (size_t i = 0; i < sizeof REGISTRY / sizeof *REGISTRY; i++) {
        size_t n = strlen(REGISTRY[i].prefix);
        if (strncmp(spec, REGISTRY[i].prefix, n)) continue;
        if (REGISTRY[i].has_arg ? spec[n] == ':' && spec[n + 1] : !spec[n])
            return open_as(REGISTRY[i].b, spec, REGISTRY[i].has_arg ? spec + n + 1 : "", err, errlen);
    }
    if (!strncmp(spec, "hip:", 4)) {
        snprintf(err, errlen, "device %s: this build has no HIP (build with make HIP=amd, HIP=nvidia or HIP=cpu)", spec);
        return -1;
    }
    snprintf(err, errlen, "--device '%s': expected auto, cpu, hip:N, sim:PROFILE or analytic:PROFILE", spec);
    return -1;
}

void backend_close(void) {
    rt_close();
    now = &backend_cpu;
}
