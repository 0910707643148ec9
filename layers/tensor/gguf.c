/*
 * gguf.c -- parse a GGUF file (v2 or v3, little-endian) in place.
 *
 *   magic "GGUF" | u32 version | u64 n_tensors | u64 n_kv
 *   n_kv x   { string key | u32 type | value }
 *   n_tensors x { string name | u32 n_dims | u64 ne[n_dims] | u32 type | u64 offset }
 *   padding to `general.alignment` (default 32) | tensor data
 *
 * A string is u64 length + bytes; an array is u32 element type + u64 count
 * + elements (arrays may nest). Every length is checked against the bytes
 * that are left before it is used.
 */
#include "layers/tensor/gguf.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Bytes of a fixed-size value; 0 for STRING and ARRAY. */
static const int SCALAR_BYTES[GGUF_NTYPES] = {
    [GGUF_U8] = 1, [GGUF_I8] = 1, [GGUF_U16] = 2, [GGUF_I16] = 2, [GGUF_U32] = 4, [GGUF_I32] = 4,
    [GGUF_F32] = 4, [GGUF_BOOL] = 1, [GGUF_U64] = 8, [GGUF_I64] = 8, [GGUF_F64] = 8 };

/* ggml's type ids for the dtypes we can compute with. */
static int dtype_from_ggml(uint32_t t, dtype *dt) {
    static const struct { uint32_t ggml; dtype dt; } M[] = {
        { 0, DT_F32 }, { 1, DT_F16 }, { 2, DT_Q4_0 }, { 3, DT_Q4_1 }, { 8, DT_Q8_0 },
        { 26, DT_I32 }, { 30, DT_BF16 } };
    for (size_t i = 0; i < sizeof M / sizeof M[0]; i++)
        if (M[i].ggml == t) { *dt = M[i].dt; return 0; }
    return -1;
}

static uint32_t u32_at(const uint8_t *p) { uint32_t v; memcpy(&v, p, 4); return v; }
static uint64_t u64_at(const uint8_t *p) { uint64_t v; memcpy(&v, p, 8); return v; }

typedef struct {
    const uint8_t *b;
    size_t size, pos;
    const char *path;
    char *err;
    int errlen;
} reader;

/* Are n more bytes there? `what` names the field for the error. */
static int need(reader *r, uint64_t n, const char *what) {
    if (n <= r->size - r->pos) return 0;
    snprintf(r->err, r->errlen, "%s: %s runs past the end of the file (offset %zu, %llu bytes needed, %zu left)",
             r->path, what, r->pos, (unsigned long long)n, r->size - r->pos);
    return -1;
}
static int rd_u32(reader *r, uint32_t *v, const char *what) {
    if (need(r, 4, what)) return -1;
    *v = u32_at(r->b + r->pos); r->pos += 4;
    return 0;
}
static int rd_u64(reader *r, uint64_t *v, const char *what) {
    if (need(r, 8, what)) return -1;
    *v = u64_at(r->b + r->pos); r->pos += 8;
    return 0;
}
static int rd_str(reader *r, const uint8_t **p, uint64_t *n, const char *what) {
    if (rd_u64(r, n, what) || need(r, *n, what)) return -1;
    *p = r->b + r->pos; r->pos += *n;
    return 0;
}

/* A value of the given type, checked, nested arrays included. */
static int rd_value(reader *r, uint32_t type, gguf_value *v, const char *what, int depth) {
    if (type >= GGUF_NTYPES) {
        snprintf(r->err, r->errlen, "%s: %s has unknown value type %u", r->path, what, type); return -1;
    }
    v->type = type;
    if (type == GGUF_STRING) return rd_str(r, &v->p, &v->n, what);
    if (type != GGUF_ARRAY) {
        if (need(r, SCALAR_BYTES[type], what)) return -1;
        v->p = r->b + r->pos; r->pos += SCALAR_BYTES[type];
        return 0;
    }
    uint32_t elem;
    if (rd_u32(r, &elem, what) || rd_u64(r, &v->n, what)) return -1;
    if (elem >= GGUF_NTYPES) {
        snprintf(r->err, r->errlen, "%s: %s is an array of unknown type %u", r->path, what, elem); return -1;
    }
    if (depth >= 4) { snprintf(r->err, r->errlen, "%s: %s: arrays nested too deep", r->path, what); return -1; }
    v->elem = elem;
    v->p = r->b + r->pos;
    if (SCALAR_BYTES[elem]) {
        if (v->n > (r->size - r->pos) / SCALAR_BYTES[elem]) return need(r, UINT64_MAX, what);
        r->pos += v->n * SCALAR_BYTES[elem];
        return 0;
    }
    /* Each string or array takes at least 8 bytes, so a lying count runs
     * out of file long before it runs out of time. */
    gguf_value e;
    for (uint64_t i = 0; i < v->n; i++)
        if (rd_value(r, elem, &e, what, depth + 1)) return -1;
    return 0;
}

static int fail_oom(reader *r) { snprintf(r->err, r->errlen, "%s: out of memory", r->path); return -1; }

static char *dup_n(const uint8_t *p, uint64_t n) {
    char *s = malloc(n + 1);
    if (s) { memcpy(s, p, n); s[n] = 0; }
    return s;
}

static int rd_tensor_info(reader *r, gguf_tensor_info *ti, int i) {
    const uint8_t *name;
    uint64_t len;
    char what[96];
    snprintf(what, sizeof what, "tensor info %d name", i);
    if (rd_str(r, &name, &len, what)) return -1;
    if (len > 256) { snprintf(r->err, r->errlen, "%s: %s is %llu bytes long", r->path, what, (unsigned long long)len); return -1; }
    if (!(ti->name = dup_n(name, len))) return fail_oom(r);
    snprintf(what, sizeof what, "tensor %s", ti->name);
    uint32_t ndim, type;
    if (rd_u32(r, &ndim, what)) return -1;
    if (ndim < 1 || ndim > 4) { snprintf(r->err, r->errlen, "%s: %s has %u dims (1 to 4)", r->path, what, ndim); return -1; }
    ti->ndim = (int)ndim;
    uint64_t numel = 1;
    for (uint32_t d = 0; d < ndim; d++) {
        if (rd_u64(r, &ti->ne[d], what)) return -1;
        if (ti->ne[d] == 0 || ti->ne[d] > (1ull << 40) || numel > (1ull << 50) / ti->ne[d]) {
            snprintf(r->err, r->errlen, "%s: %s has dimension %u of %llu", r->path, what, d, (unsigned long long)ti->ne[d]); return -1;
        }
        numel *= ti->ne[d];
    }
    if (rd_u32(r, &type, what) || rd_u64(r, &ti->offset, what)) return -1;
    if (dtype_from_ggml(type, &ti->dt)) {
        snprintf(r->err, r->errlen, "%s: %s has ggml type %u, not supported (F32, F16, BF16, Q8_0, Q4_0, Q4_1, I32)", r->path, what, type); return -1;
    }
    if (ti->ne[0] % dtype_block(ti->dt)) {
        snprintf(r->err, r->errlen, "%s: %s: row of %llu is not a whole number of %s blocks", r->path, what, (unsigned long long)ti->ne[0], dtype_name(ti->dt)); return -1;
    }
    ti->nbytes = dtype_row_bytes(ti->dt, (int64_t)ti->ne[0]) * (numel / ti->ne[0]);
    return 0;
}

int gguf_parse(gguf *g, const char *path, const void *base, size_t size, char *err, int errlen) {
    memset(g, 0, sizeof *g);
    g->path = path; g->base = base; g->size = size; g->alignment = 32;
    reader r = { base, size, 0, path, err, errlen };
    uint32_t magic;
    uint64_t n_tensors, n_kv;
    if (rd_u32(&r, &magic, "magic")) return -1;
    if (memcmp(base, "GGUF", 4)) { snprintf(err, errlen, "%s: magic is not \"GGUF\"; not a GGUF file", path); return -1; }
    if (rd_u32(&r, &g->version, "version")) return -1;
    if (g->version != 2 && g->version != 3) {
        snprintf(err, errlen, "%s: version %u is not supported (2 or 3)", path, g->version); return -1;
    }
    if (rd_u64(&r, &n_tensors, "tensor_count") || rd_u64(&r, &n_kv, "kv_count")) return -1;
    /* A key/value takes at least 12 bytes, a tensor info 24: bound the
     * counts by the file before allocating for them. */
    if (n_kv > (size - r.pos) / 12 || n_tensors > (size - r.pos) / 24) {
        snprintf(err, errlen, "%s: kv_count %llu / tensor_count %llu: more than the file can hold", path,
                 (unsigned long long)n_kv, (unsigned long long)n_tensors);
        return -1;
    }
    g->kv = calloc(n_kv ? n_kv : 1, sizeof *g->kv);
    g->ti = calloc(n_tensors ? n_tensors : 1, sizeof *g->ti);
    if (!g->kv || !g->ti) return fail_oom(&r);
    for (uint64_t i = 0; i < n_kv; i++) {
        const uint8_t *key;
        uint64_t len;
        uint32_t type;
        char what[48];
        snprintf(what, sizeof what, "metadata key %llu", (unsigned long long)i);
        if (rd_str(&r, &key, &len, what)) return -1;
        g->n_kv++;   /* counted now, so gguf_close frees what a failure leaves */
        if (!(g->kv[i].key = dup_n(key, len))) return fail_oom(&r);
        if (rd_u32(&r, &type, g->kv[i].key) || rd_value(&r, type, &g->kv[i].v, g->kv[i].key, 0)) return -1;
    }
    for (uint64_t i = 0; i < n_tensors; i++) {
        g->n_tensors++;
        if (rd_tensor_info(&r, &g->ti[i], (int)i)) return -1;
    }

    const gguf_value *a = gguf_meta(g, "general.alignment");
    if (a) {
        if (a->type != GGUF_U32 || !u32_at(a->p) || (u32_at(a->p) & (u32_at(a->p) - 1))) {
            snprintf(err, errlen, "%s: general.alignment must be a u32 power of two", path); return -1;
        }
        g->alignment = u32_at(a->p);
    }
    g->data_start = (r.pos + g->alignment - 1) / g->alignment * g->alignment;
    size_t data_size = g->data_start <= size ? size - g->data_start : 0;
    for (int i = 0; i < g->n_tensors; i++) {
        const gguf_tensor_info *ti = &g->ti[i];
        if (ti->offset % g->alignment) {
            snprintf(err, errlen, "%s: tensor %s: offset %llu is not a multiple of the alignment %llu", path, ti->name,
                     (unsigned long long)ti->offset, (unsigned long long)g->alignment); return -1;
        }
        if (ti->offset > data_size || ti->nbytes > data_size - ti->offset) {
            snprintf(err, errlen, "%s: tensor %s: data [%llu, +%zu) runs past the end of the file (%zu data bytes)", path,
                     ti->name, (unsigned long long)ti->offset, ti->nbytes, data_size); return -1;
        }
    }
    return 0;
}

int gguf_open(gguf *g, const char *path, char *err, int errlen) {
    weights own = { 0 };
    const void *base;
    size_t size;
    if (weights_map_file(&own, path, &base, &size, err, errlen)) return -1;
    int rc = gguf_parse(g, path, base, size, err, errlen);
    g->own = own;
    if (rc) gguf_close(g);
    return rc;
}

void gguf_close(gguf *g) {
    for (int i = 0; i < g->n_kv; i++) free(g->kv[i].key);
    for (int i = 0; i < g->n_tensors; i++) free(g->ti[i].name);
    free(g->kv);
    free(g->ti);
    weights_free(&g->own);
    memset(g, 0, sizeof *g);
}

const gguf_value *gguf_meta(const gguf *g, const char *key) {
    for (int i = 0; i < g->n_kv; i++)
        if (!strcmp(g->kv[i].key, key)) return &g->kv[i].v;
    return NULL;
}

int gguf_value_int(const gguf_value *v, int64_t *out) {
    switch (v->type) {
    case GGUF_U8: case GGUF_BOOL: *out = v->p[0]; return 0;
    case GGUF_I8:  *out = (int8_t)v->p[0]; return 0;
    case GGUF_U16: *out = (uint16_t)(v->p[0] | v->p[1] << 8); return 0;
    case GGUF_I16: *out = (int16_t)(v->p[0] | v->p[1] << 8); return 0;
    case GGUF_U32: *out = u32_at(v->p); return 0;
    case GGUF_I32: *out = (int32_t)u32_at(v->p); return 0;
    case GGUF_U64: case GGUF_I64: *out = (int64_t)u64_at(v->p); return 0;
    default: return -1;
    }
}

int gguf_value_float(const gguf_value *v, double *out) {
    int64_t i;
    if (v->type == GGUF_F32) { float f; memcpy(&f, v->p, 4); *out = f; return 0; }
    if (v->type == GGUF_F64) { memcpy(out, v->p, 8); return 0; }
    if (gguf_value_int(v, &i)) return -1;
    *out = (double)i;
    return 0;
}

int gguf_meta_int(const gguf *g, const char *key, int64_t *out) {
    const gguf_value *v = gguf_meta(g, key);
    return v ? gguf_value_int(v, out) : -1;
}

int gguf_meta_float(const gguf *g, const char *key, double *out) {
    const gguf_value *v = gguf_meta(g, key);
    return v ? gguf_value_float(v, out) : -1;
}

const char *gguf_meta_str(const gguf *g, const char *key, size_t *len) {
    const gguf_value *v = gguf_meta(g, key);
    if (!v || v->type != GGUF_STRING) return NULL;
    *len = (size_t)v->n;
    return (const char *)v->p;
}

const gguf_value *gguf_meta_array(const gguf *g, const char *key, gguf_type elem, uint64_t *n) {
    const gguf_value *v = gguf_meta(g, key);
    if (!v || v->type != GGUF_ARRAY || v->elem != elem) return NULL;
    *n = v->n;
    return v;
}

/* Bytes a value occupies at p; only called on values gguf_parse checked. */
static uint64_t value_bytes(gguf_type t, const uint8_t *p) {
    if (t == GGUF_STRING) return 8 + u64_at(p);
    if (t != GGUF_ARRAY) return SCALAR_BYTES[t];
    gguf_type elem = u32_at(p);
    uint64_t n = u64_at(p + 4), s = 12;
    if (SCALAR_BYTES[elem]) return s + n * SCALAR_BYTES[elem];
    for (uint64_t i = 0; i < n; i++) s += value_bytes(elem, p + s);
    return s;
}

void gguf_iter_init(gguf_iter *it, const gguf_value *array) {
    it->a = array; it->i = 0; it->p = array->p;
}

int gguf_iter_next(gguf_iter *it, gguf_value *e) {
    if (it->i == it->a->n) return 0;
    gguf_type t = it->a->elem;
    e->type = t;
    e->elem = 0;
    if (t == GGUF_STRING) { e->n = u64_at(it->p); e->p = it->p + 8; }
    else if (t == GGUF_ARRAY) { e->elem = u32_at(it->p); e->n = u64_at(it->p + 4); e->p = it->p + 12; }
    else { e->n = 1; e->p = it->p; }
    it->p += value_bytes(t, it->p);
    it->i++;
    return 1;
}
