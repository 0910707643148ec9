/*
 * cmd_device.c -- `hipath device [--device D]`: the device layer 2 opened,
 * as JSON, with its device-to-device copy bandwidth measured (on sim:
 * modeled), the ceiling a memory-bound kernel can reach.
 */
#include "cli/cli.h"
#include "kernels/backend.h"
#include "trace/trace.h"
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int cmd_device(int argc, char **argv) {
    const char *spec = "auto";
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--device") && i + 1 < argc) spec = argv[++i];
        else if (!strcmp(argv[i], "--help")) { puts("usage: hipath device [--device auto|cpu|hip:N|sim:PROFILE]"); return 0; }
        else return stack_fail("device: unknown option '%s' (see --help)", argv[i]);
    }
    char err[512];
    if (backend_open(spec, err, sizeof err)) return stack_fail("%s", err);
    const rt_device *d = rt_device_now();
    size_t n = (size_t)256 << 20;       /* large enough that the copy, not its latency, dominates */
    char *a = rt_alloc(n, RT_WORKSPACE, "d2d probe"), *b = rt_alloc(n, RT_WORKSPACE, "d2d probe");
    if (!a || !b) { rt_free(a); rt_free(b); backend_close(); return stack_fail("device %s: cannot allocate 2 x %zu bytes", d->name, n); }
    rt_copy(b, a, n, COPY_D2D, -1);       /* warm-up */
    enum { REPS = 5 };
    uint64_t t0 = trace_now_ns();
    for (int i = 0; i < REPS; i++) rt_copy(b, a, n, COPY_D2D, -1);
    double s = (trace_now_ns() - t0) * 1e-9;
    cJSON *j = cJSON_CreateObject();
    cJSON_AddStringToObject(j, "device", d->name);
    cJSON_AddStringToObject(j, "name", d->prof.name);
    cJSON_AddStringToObject(j, "arch", d->prof.arch);
    cJSON_AddNumberToObject(j, "compute_units", d->prof.compute_units);
    cJSON_AddNumberToObject(j, "wavefront_size", d->prof.wavefront_size);
    cJSON_AddNumberToObject(j, "memory_bytes", d->prof.memory_bytes);
    cJSON_AddNumberToObject(j, "memory_bandwidth_bytes_per_s", d->prof.bandwidth);
    /* a copy reads and writes every byte */
    cJSON_AddNumberToObject(j, "d2d_copy_bytes_per_s", 2.0 * n * REPS / s);
    cJSON_AddStringToObject(j, "d2d_clock", d->driver->modeled ? "modeled" : "measured");
    char *out = cJSON_PrintUnformatted(j);
    puts(out);
    free(out);
    cJSON_Delete(j);
    rt_free(a); rt_free(b);
    backend_close();
    return 0;
}
