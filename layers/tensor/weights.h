/*
 * weights.h -- layer 5: the named tensors of a checkpoint, mmap'd.
 *
 * A checkpoint is one or more files (safetensors shards, or one GGUF file);
 * every tensor in them lands in one table, looked up by name.
 */
#ifndef HIPATH_WEIGHTS_H
#define HIPATH_WEIGHTS_H

#include "layers/common/tensor.h"

#define WEIGHTS_MAX_FILES 64

typedef struct {
    int n, cap;
    tensor *t;                      /* names are owned (malloc'd) */
    int *slot, nslot;               /* by name: 1 + index into t, 0 empty; nslot a power of two
                                       (a MoE checkpoint has tens of thousands of tensors) */
    int nfiles;
    struct { char *path; void *map; size_t size; } file[WEIGHTS_MAX_FILES];
} weights;

/* Map one safetensors file and add its tensors. Every header field is
 * checked against the file: offsets inside the data, no overlap, byte count
 * equal to shape x dtype size. Returns 0, or -1 with a one-line reason. */
int safetensors_add(weights *w, const char *path, char *err, int errlen);
/* The same for a file already in memory (size bytes at map, which must
 * outlive w): what safetensors_add does once the file is mapped. */
int safetensors_parse(weights *w, const char *path, const void *map, size_t size, char *err, int errlen);
/* Tensors [first, n) all come from the file at base: each must sit at an
 * address its dtype can be loaded from (dtype_align), and no two may share
 * a byte. 0, or -1 with a one-line reason. */
int weights_check(const weights *w, int first, const void *base, const char *path, char *err, int errlen);
/* Append a tensor (its name already malloc'd; owned from now on). 0, or -1
 * when out of memory. */
int weights_add(weights *w, tensor t);
const tensor *weights_find(const weights *w, const char *name);
size_t weights_bytes(const weights *w);
/* Drop the pages wholly inside n bytes at p from this process: a copy has
 * replaced them, or they are read no more. They stay in the page cache,
 * and come back from it if read again; only the resident size falls. */
void weights_release(const void *p, size_t n);
void weights_free(weights *w);

/* mmap a whole file read-only; used by the loaders. */
int weights_map_file(weights *w, const char *path, const void **data, size_t *size,
                     char *err, int errlen);

#endif
