/*
 * quant.h -- GGUF's block formats on the device, dequantized on the fly.
 * A block is 32 weights w_j = d*q_j + m with an fp16 scale d
 * (layers/common/dtype.c row_to_f32, kernels/cpu/quant_dot.c):
 *   Q8_0  34 bytes: d, 32 int8 q                  m = 0
 *   Q4_0  18 bytes: d, 16 bytes of nibbles        m = -8d (q stored +8)
 *   Q4_1  20 bytes: d, m, 16 bytes of nibbles
 * Nibble byte j holds q_j in its low four bits and q_{j+16} in its high.
 * The block sizes leave the quants only 2-byte (Q8_0, Q4_0) or 4-byte
 * (Q4_1) aligned, so a lane's load is one 32-bit word of quants; width
 * comes from the wavefront, whose lanes read consecutive words.
 * Included by device.h (HD: host-callable too, so that
 * tests/check_hip_quant.sh runs this math on the CPU for both wave sizes).
 */
#ifndef HIPATH_HIP_QUANT_H
#define HIPATH_HIP_QUANT_H

template <int DT> struct qblock;   /* bytes a block; quants' offset; 32-bit words of quants; alignment */
template <> struct qblock<DT_Q8_0> { enum { bytes = 34, qoff = 2, words = 8, align = 2 }; };
template <> struct qblock<DT_Q4_0> { enum { bytes = 18, qoff = 2, words = 4, align = 2 }; };
template <> struct qblock<DT_Q4_1> { enum { bytes = 20, qoff = 4, words = 4, align = 4 }; };

HD inline float f16at(const uint8_t *p) { return half_to_float(*(const uint16_t *)p); }

/* The block's d and m. */
template <int DT> HD inline void qscale(const uint8_t *b, float *d, float *m) {
    *d = f16at(b);
    *m = DT == DT_Q4_1 ? f16at(b + 2) : DT == DT_Q4_0 ? -8 * *d : 0.0f;
}

/* Quant bytes 4w..4w+3 of block b as one word. */
template <int DT> HD inline uint32_t qword(const uint8_t *b, int w) {
    const uint8_t *p = b + qblock<DT>::qoff + 4 * w;
    if (qblock<DT>::align == 4) return *(const uint32_t *)p;
    return (uint32_t)*(const uint16_t *)p | (uint32_t)*(const uint16_t *)(p + 2) << 16;
}

/* Weight i of a run of blocks, one at a time (embedding rows, GEMM tiles). */
template <int DT> HD inline float qweight(const void *w, int64_t i) {
    const uint8_t *b = (const uint8_t *)w + i / 32 * qblock<DT>::bytes, *q = b + qblock<DT>::qoff;
    int j = (int)(i % 32);
    float d, m;
    qscale<DT>(b, &d, &m);
    if (DT == DT_Q8_0) return d * (int8_t)q[j];
    return d * (j < 16 ? q[j] & 15 : q[j - 16] >> 4) + m;
}

/* sum_j w_j x_j over the weights of word w of block b (x: the block's 32
 * values) as d * sum q_j x_j + m * sum x_j: two scalings a word, not one a weight. */
template <int DT> HD inline float qdot_word(const uint8_t *b, int w, const float *x) {
    float d, m, qx = 0, sx = 0;
    qscale<DT>(b, &d, &m);
    uint32_t u = qword<DT>(b, w);
    for (int i = 0; i < 4; i++, u >>= 8) {
        if (DT == DT_Q8_0) {
            qx += (float)(int8_t)(u & 0xff) * x[4 * w + i];
        } else {
            float lo = x[4 * w + i], hi = x[16 + 4 * w + i];
            qx += (float)(u & 15) * lo + (float)((u >> 4) & 15) * hi;
            sx += lo + hi;
        }
    }
    return d * qx + (DT == DT_Q8_0 ? 0.0f : m * sx);
}

/* One lane's share of row . x (nb blocks): lane l takes word l % words of
 * blocks l / words, then every wave / words-th block after it, so a
 * wavefront step reads wave / words whole blocks, contiguous. The sum
 * over the lanes is the dot product. */
template <int DT> HD inline float qrow_lane(const uint8_t *row, const float *x, int nb, int lane, int wave) {
    const int W = qblock<DT>::words;
    float s = 0;
    for (int b = lane / W; b < nb; b += wave / W) s += qdot_word<DT>(row + (size_t)b * qblock<DT>::bytes, lane % W, x + 32 * b);
    return s;
}

#endif
