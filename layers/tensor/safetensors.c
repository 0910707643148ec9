/*
 * safetensors.c -- the safetensors format: an 8-byte little-endian header
 * length N, N bytes of JSON {name: {dtype, shape, data_offsets}}, then the
 * raw tensor bytes. We trust nothing in the header.
 */
#include "layers/tensor/weights.h"
#include <cjson/cJSON.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

int weights_map_file(weights *w, const char *path, const void **data, size_t *size,
                     char *err, int errlen) {
    if (w->nfiles == WEIGHTS_MAX_FILES) { snprintf(err, errlen, "%s: too many weight files", path); return -1; }
    int fd = open(path, O_RDONLY);
    if (fd < 0) { snprintf(err, errlen, "%s: cannot open", path); return -1; }
    struct stat st;
    if (fstat(fd, &st) != 0 || st.st_size == 0) {
        close(fd); snprintf(err, errlen, "%s: empty or unreadable file", path); return -1;
    }
    void *map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (map == MAP_FAILED) { snprintf(err, errlen, "%s: mmap failed", path); return -1; }
    w->file[w->nfiles].path = strdup(path);
    w->file[w->nfiles].map = map;
    w->file[w->nfiles].size = (size_t)st.st_size;
    w->nfiles++;
    *data = map; *size = (size_t)st.st_size;
    return 0;
}

static int dtype_from_name(const char *s, dtype *dt) {
    static const struct { const char *name; dtype dt; } M[] = {
        { "F32", DT_F32 }, { "F16", DT_F16 }, { "BF16", DT_BF16 }, { "I32", DT_I32 } };
    for (size_t i = 0; i < sizeof M / sizeof M[0]; i++)
        if (!strcmp(s, M[i].name)) { *dt = M[i].dt; return 0; }
    return -1;
}

static int cmp_by_data(const void *a, const void *b) {
    const tensor *x = *(const tensor *const *)a, *y = *(const tensor *const *)b;
    return (x->data > y->data) - (x->data < y->data);
}

int weights_check(const weights *w, int first, const void *base, const char *path, char *err, int errlen) {
    int n = w->n - first;
    for (int i = first; i < w->n; i++)
        if ((uintptr_t)w->t[i].data % dtype_align(w->t[i].dt)) {
            snprintf(err, errlen, "%s: tensor %s: data at file offset %td, not a multiple of %d as %s elements need",
                     path, w->t[i].name, (const uint8_t *)w->t[i].data - (const uint8_t *)base,
                     dtype_align(w->t[i].dt), dtype_name(w->t[i].dt));
            return -1;
        }
    /* Overlapping byte ranges mean a lying header. */
    const tensor **by = malloc((size_t)(n ? n : 1) * sizeof *by);
    if (!by) { snprintf(err, errlen, "%s: out of memory", path); return -1; }
    for (int i = 0; i < n; i++) by[i] = &w->t[first + i];
    qsort(by, (size_t)n, sizeof *by, cmp_by_data);
    int rc = 0;
    for (int i = 1; i < n && rc == 0; i++)
        if ((const uint8_t *)by[i - 1]->data + by[i - 1]->nbytes > (const uint8_t *)by[i]->data) {
            snprintf(err, errlen, "%s: tensors %s and %s overlap", path, by[i - 1]->name, by[i]->name);
            rc = -1;
        }
    free(by);
    return rc;
}

/* FNV-1a of a name: where its slot search starts. */
static size_t name_hash(const char *s) {
    uint64_t h = 1469598103934665603ull;
    for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return (size_t)h;
}

/* Tensor i's name into the open-addressed index (the first of a name wins,
 * as a scan in order found it). */
static void index_put(weights *w, int i) {
    for (size_t j = name_hash(w->t[i].name) & (size_t)(w->nslot - 1);; j = (j + 1) & (size_t)(w->nslot - 1)) {
        if (!w->slot[j]) { w->slot[j] = i + 1; return; }
        if (!strcmp(w->t[w->slot[j] - 1].name, w->t[i].name)) return;
    }
}

int weights_add(weights *w, tensor t) {
    if (w->n == w->cap) {
        int cap = w->cap ? 2 * w->cap : 256;
        tensor *nt = realloc(w->t, (size_t)cap * sizeof *nt);
        if (!nt) return -1;
        w->t = nt; w->cap = cap;
    }
    if (2 * (w->n + 1) > w->nslot) {   /* at most half full: rebuilt twice as large */
        int nslot = w->nslot ? 2 * w->nslot : 512, *slot = calloc((size_t)nslot, sizeof *slot);
        if (!slot) return -1;
        free(w->slot);
        w->slot = slot; w->nslot = nslot;
        for (int i = 0; i < w->n; i++) index_put(w, i);
    }
    w->t[w->n++] = t;
    index_put(w, w->n - 1);
    return 0;
}

int safetensors_add(weights *w, const char *path, char *err, int errlen) {
    const void *map; size_t size;
    return weights_map_file(w, path, &map, &size, err, errlen) ? -1 : safetensors_parse(w, path, map, size, err, errlen);
}

int safetensors_parse(weights *w, const char *path, const void *map, size_t size, char *err, int errlen) {
    const uint8_t *base = map;
    if (size < 8) { snprintf(err, errlen, "%s: truncated (no header length)", path); return -1; }
    uint64_t hlen = 0;
    for (int i = 7; i >= 0; i--) hlen = hlen << 8 | base[i];
    if (hlen > size - 8) { snprintf(err, errlen, "%s: header length %llu runs past the file (%zu bytes)", path, (unsigned long long)hlen, size); return -1; }
    cJSON *h = cJSON_ParseWithLength((const char *)base + 8, (size_t)hlen);
    if (!h || !cJSON_IsObject(h)) { cJSON_Delete(h); snprintf(err, errlen, "%s: header is not a JSON object", path); return -1; }
    const uint8_t *data = base + 8 + hlen;
    size_t data_size = size - 8 - hlen;
    int first = w->n, rc = -1;
    cJSON *e;
    cJSON_ArrayForEach(e, h) {
        if (!strcmp(e->string, "__metadata__")) continue;
        const char *name = e->string;
        cJSON *jdt = cJSON_GetObjectItem(e, "dtype"), *jsh = cJSON_GetObjectItem(e, "shape"),
              *joff = cJSON_GetObjectItem(e, "data_offsets");
        tensor t = { 0 };
        if (!cJSON_IsString(jdt) || dtype_from_name(jdt->valuestring, &t.dt)) {
            snprintf(err, errlen, "%s: tensor %s: unsupported or missing dtype", path, name); goto out;
        }
        if (!cJSON_IsArray(jsh) || cJSON_GetArraySize(jsh) > 4) {
            snprintf(err, errlen, "%s: tensor %s: bad shape", path, name); goto out;
        }
        t.ndim = cJSON_GetArraySize(jsh);
        double numel = 1;
        for (int i = 0; i < t.ndim; i++) {
            cJSON *d = cJSON_GetArrayItem(jsh, i);
            if (!cJSON_IsNumber(d) || d->valuedouble < 0 || d->valuedouble > 1e12) {
                snprintf(err, errlen, "%s: tensor %s: bad shape", path, name); goto out;
            }
            t.shape[i] = (int64_t)d->valuedouble;
            numel *= d->valuedouble;
        }
        if (!cJSON_IsArray(joff) || cJSON_GetArraySize(joff) != 2) {
            snprintf(err, errlen, "%s: tensor %s: bad data_offsets", path, name); goto out;
        }
        double b = cJSON_GetArrayItem(joff, 0)->valuedouble, end = cJSON_GetArrayItem(joff, 1)->valuedouble;
        if (b < 0 || end < b || end > (double)data_size) {
            snprintf(err, errlen, "%s: tensor %s: data_offsets [%.0f, %.0f] outside the %zu data bytes", path, name, b, end, data_size); goto out;
        }
        if (end - b != numel * (double)dtype_row_bytes(t.dt, 1)) {
            snprintf(err, errlen, "%s: tensor %s: %.0f bytes do not hold %s shape of %.0f elements", path, name, end - b, jdt->valuestring, numel); goto out;
        }
        t.data = data + (size_t)b;
        t.nbytes = (size_t)(end - b);
        t.name = strdup(name);
        if (!t.name || weights_add(w, t)) { snprintf(err, errlen, "%s: out of memory", path); goto out; }
    }
    rc = weights_check(w, first, map, path, err, errlen);
out:
    cJSON_Delete(h);
    return rc;
}

const tensor *weights_find(const weights *w, const char *name) {
    for (size_t j = w->nslot ? name_hash(name) & (size_t)(w->nslot - 1) : 0; w->nslot && w->slot[j]; j = (j + 1) & (size_t)(w->nslot - 1))
        if (!strcmp(w->t[w->slot[j] - 1].name, name)) return &w->t[w->slot[j] - 1];
    return NULL;
}

size_t weights_bytes(const weights *w) {
    size_t s = 0;
    for (int i = 0; i < w->n; i++) s += w->t[i].nbytes;
    return s;
}

void weights_release(const void *p, size_t n) {
    uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE), a = ((uintptr_t)p + page - 1) / page * page,
              b = ((uintptr_t)p + n) / page * page;
    if (b > a) madvise((void *)a, b - a, MADV_DONTNEED);   /* a read-only private mapping: nothing is lost */
}

void weights_free(weights *w) {
    for (int i = 0; i < w->n; i++) free((char *)w->t[i].name);
    free(w->t);
    free(w->slot);
    for (int i = 0; i < w->nfiles; i++) { if (w->file[i].map) munmap(w->file[i].map, w->file[i].size); free(w->file[i].path); }
    memset(w, 0, sizeof *w);
}
