/*
 * profile.c -- layer 1: load and check a GPU profile (profile.h).
 */
#include "layers/gpu/profile.h"
#include "layers/common/file.h"
#include <cjson/cJSON.h>
#include <dirent.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define NDIRS 5

/* The folders a profile name is looked up in, in order; returns how many.
 * Beside the executable: build/hipath, and deeper builds (build/asan/hipath). */
static int profile_dirs(char dirs[NDIRS][PATH_MAX]) {
    int n = 0;
    const char *home = getenv("HIPATH_HOME");
    if (home && *home) snprintf(dirs[n++], PATH_MAX, "%.*s/layers/gpu/profiles", PATH_MAX - 32, home);
    char exe[PATH_MAX];
    ssize_t k = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (k > 0) {
        exe[k] = 0;
        char *slash = strrchr(exe, '/');
        static const char *UP[] = { "/..", "/../..", "/../../.." };
        if (slash) {
            *slash = 0;
            for (int i = 0; i < 3; i++) snprintf(dirs[n++], PATH_MAX, "%.*s%s/layers/gpu/profiles", PATH_MAX - 48, exe, UP[i]);
        }
    }
    snprintf(dirs[n++], PATH_MAX, "./layers/gpu/profiles");
    return n;
}

void gpu_profile_list(char *buf, int len) {
    char dirs[NDIRS][PATH_MAX];
    int nd = profile_dirs(dirs);
    buf[0] = 0;
    for (int d = 0; d < nd && !buf[0]; d++) {
        struct dirent **e;
        int n = scandir(dirs[d], &e, NULL, alphasort);
        for (int i = 0; i < n; i++) {
            size_t l = strlen(e[i]->d_name);
            if (l > 5 && !strcmp(e[i]->d_name + l - 5, ".json")) {
                size_t used = strlen(buf);
                snprintf(buf + used, len - used, "%s%.*s", used ? ", " : "", (int)(l - 5), e[i]->d_name);
            }
            free(e[i]);
        }
        if (n >= 0) free(e);
    }
}

static int resolve(const char *name_or_path, char *path, char *err, int errlen) {
    size_t n = strlen(name_or_path);
    if (strchr(name_or_path, '/') || (n > 5 && !strcmp(name_or_path + n - 5, ".json"))) {
        snprintf(path, PATH_MAX, "%s", name_or_path);
        return 0;
    }
    int plain = n > 0 && n < 64;
    for (size_t i = 0; i < n; i++) plain &= !!strchr("abcdefghijklmnopqrstuvwxyz0123456789-_", name_or_path[i]);
    char dirs[NDIRS][PATH_MAX];
    int nd = plain ? profile_dirs(dirs) : 0;
    for (int d = 0; d < nd; d++) {
        snprintf(path, PATH_MAX, "%.*s/%s.json", PATH_MAX - 80, dirs[d], name_or_path);
        if (access(path, R_OK) == 0) return 0;
    }
    char known[512];
    gpu_profile_list(known, sizeof known);
    snprintf(err, errlen, "unknown device '%s' (known: %s; or give a path to a profile .json)", name_or_path, known[0] ? known : "none found");
    return -1;
}

/* obj[name], a number in (lo, hi] (or [lo, hi] when closed); `key` names it in messages. */
static int get_num(cJSON *obj, const char *name, const char *key, double lo, int closed, double hi,
                   double *out, const char *path, char *err, int errlen) {
    cJSON *v = cJSON_GetObjectItem(obj, name);
    if (!cJSON_IsNumber(v)) { snprintf(err, errlen, "%s: missing or non-numeric key %s", path, key); return -1; }
    double x = v->valuedouble;
    if (!(closed ? x >= lo : x > lo) || !(x <= hi)) {
        snprintf(err, errlen, "%s: key %s is %g; it must be in %c%g, %g]", path, key, x, closed ? '[' : '(', lo, hi);
        return -1;
    }
    *out = x;
    return 0;
}

static int get_str(cJSON *obj, const char *key, char *out, size_t n, const char *path, char *err, int errlen) {
    cJSON *v = cJSON_GetObjectItem(obj, key);
    if (!cJSON_IsString(v) || !*v->valuestring) { snprintf(err, errlen, "%s: missing or empty string key %s", path, key); return -1; }
    snprintf(out, n, "%s", v->valuestring);
    return 0;
}

/* The optional "interconnect" object (docs/devices.md, "Between GPUs"). */
static int load_link(cJSON *j, gpu_profile *p, const char *path, char *err, int errlen) {
    cJSON *o = cJSON_GetObjectItem(j, "interconnect");
    if (!o) return 0;
    double links, gpus;
    if (!cJSON_IsObject(o)) { snprintf(err, errlen, "%s: key interconnect must be an object", path); return -1; }
    if (get_str(o, "name", p->link.name, sizeof p->link.name, path, err, errlen) ||
        get_str(o, "source", p->link.source, sizeof p->link.source, path, err, errlen) ||
        get_str(o, "topology", p->link.topology, sizeof p->link.topology, path, err, errlen) ||
        get_num(o, "links", "interconnect.links", 0, 0, 64, &links, path, err, errlen) ||
        get_num(o, "link_bytes_per_s", "interconnect.link_bytes_per_s", 0, 0, 1e15, &p->link.link_bw, path, err, errlen) ||
        get_num(o, "latency_s", "interconnect.latency_s", 0, 0, 1, &p->link.latency_s, path, err, errlen) ||
        get_num(o, "max_gpus", "interconnect.max_gpus", 1, 1, 64, &gpus, path, err, errlen))
        return -1;
    if (strcmp(p->link.topology, "switch") && strcmp(p->link.topology, "mesh") && strcmp(p->link.topology, "host")) {
        snprintf(err, errlen, "%s: key interconnect.topology is '%s'; it must be switch, mesh or host", path, p->link.topology);
        return -1;
    }
    if (links != (int)links || gpus != (int)gpus) {
        snprintf(err, errlen, "%s: keys interconnect.links and max_gpus must be whole numbers", path);
        return -1;
    }
    p->link.links = (int)links;
    p->link.max_gpus = (int)gpus;
    return 0;
}

static const char *const PEAK_DTYPES[] = { "fp32", "fp16", "bf16", "int8" };   /* as in gpu_profile.peak */
#define NPEAKS 4

int gpu_profile_load(gpu_profile *p, const char *name_or_path, char *err, int errlen) {
    char path[PATH_MAX];
    memset(p, 0, sizeof *p);
    if (resolve(name_or_path, path, err, errlen)) return -1;
    snprintf(p->path, sizeof p->path, "%s", path);
    cJSON *j = json_read(path, FILE_SMALL, err, errlen);
    if (!j) return -1;
    cJSON *peak = cJSON_GetObjectItem(j, "peak_flops");
    double cu, wave, lds = 0;
    int rc = -1;
    if (get_str(j, "name", p->name, sizeof p->name, path, err, errlen) ||
        get_str(j, "arch", p->arch, sizeof p->arch, path, err, errlen) ||
        get_str(j, "source", p->source, sizeof p->source, path, err, errlen) ||
        get_num(j, "memory_bytes", "memory_bytes", 0, 0, 1e15, &p->memory_bytes, path, err, errlen) ||
        get_num(j, "memory_bandwidth_bytes_per_s", "memory_bandwidth_bytes_per_s", 0, 0, 1e15, &p->bandwidth, path, err, errlen))
        goto out;
    if (!cJSON_IsObject(peak)) { snprintf(err, errlen, "%s: missing object key peak_flops", path); goto out; }
    /* A peak may be left out (it stays 0); one that is given must be a
     * rate. The question that needs a peak asks gpu_profile_peak for it. */
    double *slot[] = { &p->peak.fp32, &p->peak.fp16, &p->peak.bf16, &p->peak.int8 };
    for (int i = 0; i < NPEAKS; i++) {
        char key[32];
        snprintf(key, sizeof key, "peak_flops.%s", PEAK_DTYPES[i]);
        if (cJSON_GetObjectItem(peak, PEAK_DTYPES[i]) && get_num(peak, PEAK_DTYPES[i], key, 0, 0, 1e18, slot[i], path, err, errlen)) goto out;
    }
    if (get_num(j, "compute_units", "compute_units", 0, 0, 1e5, &cu, path, err, errlen) ||
        get_num(j, "wavefront_size", "wavefront_size", 0, 0, 1e3, &wave, path, err, errlen) ||
        get_num(j, "host_link_bytes_per_s", "host_link_bytes_per_s", 0, 0, 1e15, &p->host_link, path, err, errlen) ||
        get_num(j, "launch_latency_s", "launch_latency_s", 0, 1, 1, &p->launch_latency_s, path, err, errlen))
        goto out;
    if (cJSON_GetObjectItem(j, "lds_bytes_per_cu") &&
        get_num(j, "lds_bytes_per_cu", "lds_bytes_per_cu", 0, 1, 1 << 30, &lds, path, err, errlen))
        goto out;
    if (load_link(j, p, path, err, errlen)) goto out;
    if (wave != 32 && wave != 64) { snprintf(err, errlen, "%s: key wavefront_size is %g; it must be 32 or 64", path, wave); goto out; }
    if (cu != (int)cu) { snprintf(err, errlen, "%s: key compute_units is %g; it must be a whole number", path, cu); goto out; }
    p->compute_units = (int)cu;
    p->wavefront_size = (int)wave;
    p->lds_bytes_per_cu = (int)lds;
    rc = 0;
out:
    cJSON_Delete(j);
    return rc;
}

double gpu_profile_matmul_peak(const gpu_profile *p, dtype dt) {
    switch (dt) {
    case DT_F16:  return p->peak.fp16;
    case DT_BF16: return p->peak.bf16;
    case DT_Q8_0: case DT_Q4_0: case DT_Q4_1: return p->peak.int8;
    default:      return p->peak.fp32;
    }
}

int gpu_profile_peak(const gpu_profile *p, const char *dtype, double *out, char *err, int errlen) {
    const double peak[NPEAKS] = { p->peak.fp32, p->peak.fp16, p->peak.bf16, p->peak.int8 };
    for (int i = 0; i < NPEAKS; i++) {
        if (strcmp(dtype, PEAK_DTYPES[i])) continue;
        *out = peak[i];
        if (peak[i] > 0) return 0;
        snprintf(err, errlen, "%s: missing or non-numeric key peak_flops.%s", p->path[0] ? p->path : p->name, dtype);
        return -1;
    }
    snprintf(err, errlen, "no peak for dtype '%s' (fp32, fp16, bf16, int8)", dtype);
    return -1;
}
