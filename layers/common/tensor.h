/*
 * tensor.h -- shared vocabulary: what a tensor is.
 *
 * A tensor here is a view: a name, a dtype, a shape and a pointer to bytes
 * that usually live in an mmap'd weights file. Row-major; shape[0] is the
 * slowest dimension, so a linear weight W has shape [out, in] as in HF.
 * Layer 5 loads them; layers 4 and 3 compute with them.
 */
#ifndef HIPATH_TENSOR_H
#define HIPATH_TENSOR_H

#include "layers/common/dtype.h"

typedef struct {
    const char *name;
    dtype dt;
    int ndim;
    int64_t shape[4];
    const void *data;
    size_t nbytes;
} tensor;

#endif
