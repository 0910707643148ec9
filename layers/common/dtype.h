/*
 * dtype.h -- shared vocabulary: the element types a weight can be stored
 * in, their sizes, and conversion of a stored row to f32. Every layer may
 * include layers/common/ (docs/architecture.md, "the rule").
 */
#ifndef HIPATH_DTYPE_H
#define HIPATH_DTYPE_H

#include <stddef.h>
#include <stdint.h>

typedef enum {
    DT_F32, DT_F16, DT_BF16,
    DT_Q8_0, DT_Q4_0, DT_Q4_1,     /* GGUF block formats, 32 weights a block */
    DT_I32, DT_COUNT
} dtype;

const char *dtype_name(dtype dt);
/* Bytes for n consecutive elements of a row (n a multiple of the block size
 * for block formats). */
size_t dtype_row_bytes(dtype dt, int64_t n);
int    dtype_block(dtype dt);          /* elements per block: 1 or 32 */
/* What a tensor's address must be a multiple of: the kernels load whole
 * elements (a block's f16 scale first) through typed pointers. */
int    dtype_align(dtype dt);

static inline float bf16_to_f32(uint16_t h) {
    union { uint32_t u; float f; } v = { .u = (uint32_t)h << 16 };
    return v.f;
}
float    f16_to_f32(uint16_t h);

/* Dequantize or convert row `n` elements starting at `src` into f32. */
void row_to_f32(float *dst, const void *src, dtype dt, int64_t n);

#endif
