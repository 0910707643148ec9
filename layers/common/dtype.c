/* dtype.c -- dtypes: sizes, names, and conversion of a row to f32. */
#include "layers/common/dtype.h"
#include <string.h>

static const struct { const char *name; int block; int block_bytes; } DT[DT_COUNT] = {
    [DT_F32]  = { "F32",  1, 4 },
    [DT_F16]  = { "F16",  1, 2 },
    [DT_BF16] = { "BF16", 1, 2 },
    [DT_Q8_0] = { "Q8_0", 32, 2 + 32 },       /* f16 d, int8 q[32] */
    [DT_Q4_0] = { "Q4_0", 32, 2 + 16 },       /* f16 d, nibbles[16] */
    [DT_Q4_1] = { "Q4_1", 32, 2 + 2 + 16 },   /* f16 d, f16 m, nibbles[16] */
    [DT_I32]  = { "I32",  1, 4 },
};

const char *dtype_name(dtype dt) { return dt < DT_COUNT ? DT[dt].name : "?"; }
int dtype_block(dtype dt) { return DT[dt].block; }
int dtype_align(dtype dt) { return DT[dt].block == 1 ? DT[dt].block_bytes : 2; }
size_t dtype_row_bytes(dtype dt, int64_t n) {
    return (size_t)(n / DT[dt].block) * DT[dt].block_bytes;
}

float f16_to_f32(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000) << 16, exp = (h >> 10) & 0x1f, man = h & 0x3ff, u;
    if (exp == 0) {
        if (man == 0) u = sign;
        else {                               /* subnormal: normalise */
            exp = 127 - 15 + 1;
            while (!(man & 0x400)) { man <<= 1; exp--; }
            u = sign | (exp << 23) | ((man & 0x3ff) << 13);
        }
    } else if (exp == 31) u = sign | 0x7f800000 | (man << 13);
    else u = sign | ((exp + 127 - 15) << 23) | (man << 13);
    float f; memcpy(&f, &u, 4);
    return f;
}

void row_to_f32(float *dst, const void *src, dtype dt, int64_t n) {
    const uint8_t *p = src;
    switch (dt) {
    case DT_F32: memcpy(dst, src, (size_t)n * 4); return;
    case DT_F16: for (int64_t i = 0; i < n; i++) dst[i] = f16_to_f32(((const uint16_t *)src)[i]); return;
    case DT_BF16: for (int64_t i = 0; i < n; i++) dst[i] = bf16_to_f32(((const uint16_t *)src)[i]); return;
    case DT_Q8_0:
        for (int64_t b = 0; b < n / 32; b++, p += 34) {
            float d = f16_to_f32((uint16_t)(p[0] | p[1] << 8));
            for (int j = 0; j < 32; j++) dst[b * 32 + j] = d * (int8_t)p[2 + j];
        }
        return;
    case DT_Q4_0:
        for (int64_t b = 0; b < n / 32; b++, p += 18) {
            float d = f16_to_f32((uint16_t)(p[0] | p[1] << 8));
            for (int j = 0; j < 16; j++) {
                dst[b * 32 + j]      = d * ((p[2 + j] & 0xf) - 8);
                dst[b * 32 + j + 16] = d * ((p[2 + j] >> 4) - 8);
            }
        }
        return;
    case DT_Q4_1:
        for (int64_t b = 0; b < n / 32; b++, p += 20) {
            float d = f16_to_f32((uint16_t)(p[0] | p[1] << 8));
            float m = f16_to_f32((uint16_t)(p[2] | p[3] << 8));
            for (int j = 0; j < 16; j++) {
                dst[b * 32 + j]      = d * (p[4 + j] & 0xf) + m;
                dst[b * 32 + j + 16] = d * (p[4 + j] >> 4) + m;
            }
        }
        return;
    default: memset(dst, 0, (size_t)n * 4);
    }
}
