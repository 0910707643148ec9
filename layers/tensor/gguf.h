/*
 * gguf.h -- layer 5: llama.cpp's single-file checkpoint format.
 *
 * A GGUF file is a header ("GGUF", version, counts), typed key/value
 * metadata (the config and the tokenizer live here), tensor infos (name,
 * dims fastest-first, ggml type, offset), then the aligned tensor data.
 * Everything is parsed in place from the mmap'd bytes and checked against
 * the file size first, so later reads need no checks.
 */
#ifndef HIPATH_GGUF_H
#define HIPATH_GGUF_H

#include "layers/tensor/weights.h"

typedef enum {
    GGUF_U8, GGUF_I8, GGUF_U16, GGUF_I16, GGUF_U32, GGUF_I32, GGUF_F32,
    GGUF_BOOL, GGUF_STRING, GGUF_ARRAY, GGUF_U64, GGUF_I64, GGUF_F64, GGUF_NTYPES
} gguf_type;

/* One value, pointing into the file. STRING: p = the bytes, n = their
 * count. ARRAY: p = the first element, n = element count, elem = their
 * type. Otherwise p = the little-endian scalar. */
typedef struct {
    gguf_type type, elem;
    const uint8_t *p;
    uint64_t n;
} gguf_value;

typedef struct { char *key; gguf_value v; } gguf_kv;

typedef struct {
    char *name;          /* as stored, e.g. "blk.0.attn_q.weight" */
    dtype dt;
    int ndim;
    uint64_t ne[4];      /* ne[0] is the fastest dimension */
    uint64_t offset;     /* from the start of the data section */
    size_t nbytes;
} gguf_tensor_info;

typedef struct {
    const char *path;
    const uint8_t *base;
    size_t size;
    uint32_t version;
    int n_kv, n_tensors;
    gguf_kv *kv;
    gguf_tensor_info *ti;
    uint64_t alignment;
    size_t data_start;   /* offset of the data section in the file */
    weights own;         /* the mapping, when gguf_open made it */
} gguf;

/* Parse the header, metadata and tensor infos of size bytes at base.
 * 0, or -1 with a one-line reason naming the file and the field. */
int  gguf_parse(gguf *g, const char *path, const void *base, size_t size, char *err, int errlen);
/* mmap path and parse it (for readers that want only the metadata). */
int  gguf_open(gguf *g, const char *path, char *err, int errlen);
void gguf_close(gguf *g);

/* Metadata getters. NULL / -1 when the key is absent or of another kind. */
const gguf_value *gguf_meta(const gguf *g, const char *key);
int gguf_meta_int(const gguf *g, const char *key, int64_t *out);    /* any integer or bool */
int gguf_meta_float(const gguf *g, const char *key, double *out);   /* f32, f64 or integer */
/* A string's bytes (not NUL-terminated) and length. */
const char *gguf_meta_str(const gguf *g, const char *key, size_t *len);
/* An array, with its element count in *n and type in *elem. */
const gguf_value *gguf_meta_array(const gguf *g, const char *key, gguf_type elem, uint64_t *n);

/* Walk an array's elements in order (strings and nested arrays have
 * variable size, so there is no random access). */
typedef struct { const gguf_value *a; uint64_t i; const uint8_t *p; } gguf_iter;
void gguf_iter_init(gguf_iter *it, const gguf_value *array);
int  gguf_iter_next(gguf_iter *it, gguf_value *elem);   /* 1, or 0 at the end */
int  gguf_value_int(const gguf_value *v, int64_t *out);
int  gguf_value_float(const gguf_value *v, double *out);

#endif
