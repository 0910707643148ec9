/*
 * hip_cpu_test.cpp -- every kernel of the HIP backend, the real source
 * (the kernel headers in kernels/hip/) run on the CPU by layers/runtime/hip/hip_cpu.h,
 * against its CPU twin (kernels/cpu/) at wavefront sizes 32 and 64.
 *
 * Shapes are small and odd: lengths no workgroup or wavefront divides,
 * GQA and MQA, head_dim 64 and 128, a paged cache with a shuffled block
 * table, every stored dtype, weights at the least alignment the launchers
 * allow. Buffers are exactly their size, so AddressSanitizer sees a read
 * past one. Weights are random stored bytes (scales kept finite).
 *
 * Tolerance: max |got - ref| <= 1e-4 * scale, scale = sum_k |w_k x_k| + |b|
 * per output of a matmul, else the case's max |ref|. Both sides round in
 * f32 in different orders; for the sizes here (K <= 352) the rounding
 * bound of either sum is about (K + 64) * 2^-24 < 2.5e-5. One dropped or
 * doubled term of a sum of K moves it by about 1/K (3e-3 at K = 352), far
 * above the tolerance; a wrong index, by the whole scale.
 *
 * The launch arguments mirror the launchers (elementwise.hip, matmul.hip,
 * attention.hip, mla.hip, moe.hip); the grids are theirs (geometry.h).
 */
#include "layers/runtime/hip/hip_cpu.h"
#include "kernels/hip/elementwise_kernels.h"
#include "kernels/hip/matmul_kernels.h"
#include "kernels/hip/attention_kernels.h"
#include "kernels/hip/mla_kernels.h"
#include "kernels/hip/moe_kernels.h"
extern "C" {
#include "kernels/cpu/kernels.h"
}
#include <stdlib.h>
#include <time.h>
#include <algorithm>
#include <string>
#include <vector>

/* A launch in geometry.h's terms, as the launchers make it. */
template <typename... P, typename... A> static std::string launch(void (*fn)(P...), kdims d, size_t lds, A... a) {
    return hip_cpu::launch(fn, dim3(d.grid), dim3(d.block), lds, a...);
}
typedef std::vector<float> vec;
static const double TOL = 1e-4;
static int passed, failed;

static uint32_t rnd(void) {
    static uint64_t s = 0x9e3779b97f4a7c15ull;
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    return (uint32_t)(s >> 33);
}
static float uni(void) { return (float)rnd() / 2147483648.0f - 1.0f; }   /* [-1, 1) */
static vec rand_vec(size_t n) {
    vec v(n);
    for (float &f : v) f = uni();
    return v;
}
/* An fp16 bit pattern 2^e .. 2^(e+1), e in [lo, hi] (biased exponents), random sign. */
static uint16_t rand_f16(int lo, int hi) { return (uint16_t)((rnd() & 1) << 15 | (lo + rnd() % (hi - lo + 1)) << 10 | (rnd() & 1023)); }

/* The least alignment the launchers allow a weight: its element's, or its
 * block's (quant.h: the scale is 2 bytes, Q4_1's quants a word). */
static int least_align(dtype dt) { return dt == DT_F32 || dt == DT_Q4_1 ? 4 : 2; }

/* Report one case: got against ref, per-element scale (empty: max |ref|). */
static void check(const std::string &name, const std::string &err, const vec &got, const vec &ref, const std::vector<double> &scale = {}) {
    double s = 0, e = 0;
    for (float r : ref) s = std::max(s, (double)fabsf(r));
    for (size_t i = 0; i < ref.size(); i++) {
        double d = fabs((double)got[i] - ref[i]) / (scale.empty() ? s : scale[i]);
        if (d > e || d != d) e = d;   /* a NaN stays */
    }
    bool ok = err.empty() && e <= TOL;
    ok ? passed++ : failed++;
    printf("%s wave %d  %-44s max err %.1e%s%s\n", ok ? "ok  " : "FAIL", warpSize, name.c_str(), e,
           err.empty() ? "" : "  ", err.c_str());
}

/* A weight matrix [N, K] of dtype dt as the backend gets it, starting at
 * `align` bytes past a 16-byte boundary (0: aligned), in a block exactly
 * its size; f32 is its values (the dequantizer's, layers/common/dtype.c). */
struct weight {
    tensor t;
    char *mem;
    vec f32;
    weight(dtype dt, int N, int K, int align) {
        size_t row = dtype_row_bytes(dt, K), bytes = row * N;
        mem = (char *)malloc(bytes + align);
        uint8_t *p = (uint8_t *)mem + align;
        t = { "W", dt, 2, { N, K }, p, bytes };
        for (size_t i = 0; i < bytes;) {
            if (dtype_block(dt) == 32) {   /* d in 2^-7..2^-4, Q4_1's m, then random quants */
                uint16_t h[2] = { rand_f16(8, 10), rand_f16(12, 14) };
                int hb = dt == DT_Q4_1 ? 4 : 2;
                memcpy(p + i, h, hb);
                for (int j = hb; j < (int)dtype_row_bytes(dt, 32); j++) p[i + j] = (uint8_t)rnd();
                i += dtype_row_bytes(dt, 32);
            } else if (dt == DT_F32) {
                float f = uni();
                memcpy(p + i, &f, 4), i += 4;
            } else {                       /* f16 2^-4..2; bf16 the top half of an f32 */
                float f = uni();
                uint32_t u;
                memcpy(&u, &f, 4);
                uint16_t h = dt == DT_F16 ? rand_f16(11, 15) : (uint16_t)(u >> 16);
                memcpy(p + i, &h, 2), i += 2;
            }
        }
        f32.resize((size_t)N * K);
        for (int n = 0; n < N; n++) row_to_f32(&f32[(size_t)n * K], p + n * row, dt, K);
    }
    ~weight() { free(mem); }
};

static void elementwise(int n) {
    vec x = rand_vec(n), y = rand_vec(n), got = x, ref = x;
    std::string e = launch(add_kernel, geo_elementwise(n), 0, got.data(), y.data(), n);
    k_add(ref.data(), y.data(), n);
    check("add n=" + std::to_string(n), e, got, ref);
    got = ref = x;
    e = launch(silu_mul_kernel, geo_elementwise(n), 0, got.data(), y.data(), n);
    k_silu_mul(ref.data(), y.data(), n);
    check("silu_mul n=" + std::to_string(n), e, got, ref);
}

template <int DT> static void embedding(int rows, int dim) {
    weight E((dtype)DT, rows, dim, least_align((dtype)DT));
    std::vector<int> ids = { rows - 1, 0, 2 };
    int T = (int)ids.size();
    vec got(T * dim), ref(T * dim);
    std::string e = launch(embedding_kernel<DT>, geo_embedding(T), 0, got.data(), E.t.data, ids.data(), dim);
    k_embedding(ref.data(), &E.t, ids.data(), T);
    check(std::string("embedding ") + dtype_name((dtype)DT) + " dim=" + std::to_string(dim), e, got, ref);
}

static void rmsnorm(int T, int n, bool in_place) {
    vec x = rand_vec((size_t)T * n), w = rand_vec(n), got(x.size()), ref(x.size());
    if (in_place) got = x;
    std::string e = launch(rmsnorm_kernel, geo_rmsnorm(T), 0, got.data(), in_place ? got.data() : x.data(), w.data(), n, 1e-5f);
    k_rmsnorm(ref.data(), x.data(), w.data(), T, n, 1e-5f);
    check("rmsnorm n=" + std::to_string(n) + (in_place ? " in place" : ""), e, got, ref);
}

static void rope(int head_dim, int adjacent, bool table) {
    int T = 3, H = 3;
    std::vector<int> pos = { 0, 5, 1000 };
    vec x = rand_vec((size_t)T * H * head_dim), got = x, ref = x, freq(head_dim / 2);
    for (int i = 0; i < head_dim / 2; i++) freq[i] = powf(10000.0f, -2.0f * i / head_dim) * (i % 3 ? 1.0f : 0.25f);   /* yarn-like */
    const float *f = table ? freq.data() : nullptr;
    std::string e = launch(rope_kernel, geo_rope(T, H, head_dim), 0, got.data(), H, head_dim, pos.data(), 10000.0f, f, adjacent);
    k_rope(ref.data(), T, H, head_dim, pos.data(), 10000.0f, f, adjacent);
    check(std::string(adjacent ? "rope adjacent" : "rope half") + (table ? " inv_freq" : "") + " head_dim=" + std::to_string(head_dim),
          e, got, ref);
}

/* y = x W^T (+ b), the kernel matmul.hip's matmul_dt would pick on a
 * device of `cus` CUs: a GEMM whose tiles are fewer is split along K. */
template <int DT> static void matmul(int T, int N, int K, int align, bool bias, int cus = 1) {
    weight W((dtype)DT, N, K, align);
    vec x = rand_vec((size_t)T * K), b = rand_vec(N), got((size_t)T * N), ref(got.size());
    const float *bp = bias ? b.data() : nullptr;
    const void *w = W.t.data;
    size_t row = dtype_row_bytes((dtype)DT, K);
    int kslice = gemm_slice_k(T, N, K, cus);
    kdims d = geo_matmul(T, N, K, warpSize, cus);
    std::string e, kind;
    if (T > 1 && kslice < K) {
        kind = "gemm split-K " + std::to_string(d.grid / gemm_tiles(T, N)) + "x" + std::to_string(kslice);
        e = launch(gemm_init_kernel, geo_elementwise(T * N), 0, got.data(), bp, T, N);
        if (e.empty()) e = launch(gemm_kernel<DT>, d, 0, got.data(), x.data(), w, bp, T, N, K, row, kslice);
    } else if (T > 1) kind = "gemm", e = launch(gemm_kernel<DT>, d, 0, got.data(), x.data(), w, bp, T, N, K, row, kslice);
    else if constexpr (DT == DT_Q8_0 || DT == DT_Q4_0 || DT == DT_Q4_1)
        kind = "qgemv", e = launch(qgemv_kernel<DT>, d, 0, got.data(), x.data(), w, bp, N, K / 32, row);
    else if ((uintptr_t)w % 16 == 0 && row % 16 == 0 && K % vec16<DT>::n == 0)
        kind = "gemv vec", e = launch(gemv_kernel<DT, true>, d, 0, got.data(), x.data(), w, bp, N, K, row);
    else kind = "gemv", e = launch(gemv_kernel<DT, false>, d, 0, got.data(), x.data(), w, bp, N, K, row);
    k_matmul(ref.data(), x.data(), &W.t, bp, T, N, K);
    std::vector<double> scale(got.size());
    for (int t = 0; t < T; t++)
        for (int n = 0; n < N; n++) {
            double s = bias ? fabs(b[n]) : 0;
            for (int k = 0; k < K; k++) s += fabs((double)W.f32[(size_t)n * K + k] * x[(size_t)t * K + k]);
            scale[(size_t)t * N + n] = s;
        }
    char name[96];
    snprintf(name, sizeof name, "%s %s T=%d N=%d K=%d align %d%s", kind.c_str(), dtype_name((dtype)DT), T, N, K,
             align ? align : 16, bias ? " +b" : "");
    check(name, e, got, ref, scale);
}

template <int DT> static void matmuls(int K_gemv, int K_odd, int K_gemm) {
    int a = least_align((dtype)DT);
    matmul<DT>(1, 37, K_gemv, 0, true);   /* 16-byte aligned: the vector loads, where the dtype has them */
    if (K_odd) matmul<DT>(1, 37, K_odd, a, false);
    matmul<DT>(33, 37, K_gemm, a, true);  /* 2x2 tiles, the last ones partial */
}
/* Split-K on MI300X's 304 CUs: the 2x2 tiles of 33x37 split in 2 (K = 611:
 * slices of 320 and 291, the last not a whole tile deep) or 3 (K = 800). */
template <int DT> static void split_k(int K) { matmul<DT>(33, 37, K, least_align((dtype)DT), true, 304); }

/* One step's batch of sequences, each {pos0, n}: n new rows after pos0
 * cached tokens, in a paged cache of 16-slot blocks (layer 1 of 2) whose
 * tables are shuffled across the pool. The index arrays are built as
 * attention.hip's upload() does. */
struct seq_rows { int pos0, n; };
struct step {
    static const int BS = 16, layers = 2, l = 1;
    std::vector<std::vector<int>> blocks;
    std::vector<kv_seq> kseq;
    std::vector<const kv_seq *> kptr;
    std::vector<int> row0, row_seq, pos, tables, table_off, work;
    int rows = 1, T = 0, pool = 0, wgs = 0;
    kv_batch batch;
    std::string name;
    explicit step(const std::vector<seq_rows> &seqs) {
        int n_seqs = (int)seqs.size(), at = 0;
        blocks.resize(n_seqs), kseq.resize(n_seqs), kptr.resize(n_seqs), row0.resize(n_seqs + 1), table_off.resize(n_seqs);
        for (int i = 0; i < n_seqs; i++) pool += cdiv(seqs[i].pos0 + seqs[i].n, BS);
        std::vector<int> ids(pool);
        for (int b = 0; b < pool; b++) ids[b] = b;
        for (int b = pool - 1; b > 0; b--) std::swap(ids[b], ids[rnd() % (b + 1)]);
        for (auto &sq : seqs) rows = sq.n > 1 ? ATT_ROWS : rows;
        for (int i = 0; i < n_seqs; i++) {
            int nb = cdiv(seqs[i].pos0 + seqs[i].n, BS);
            blocks[i].assign(ids.begin() + at, ids.begin() + at + nb);   /* exactly the sequence's blocks */
            table_off[i] = at, at += nb;
            tables.insert(tables.end(), blocks[i].begin(), blocks[i].end());
            kseq[i] = { blocks[i].data(), nb, nb, seqs[i].pos0 + seqs[i].n, 0 };
            kptr[i] = &kseq[i];
            row0[i] = T;
            for (int i0 = 0; i0 < seqs[i].n; i0 += rows)
                work.insert(work.end(), { table_off[i], T, seqs[i].pos0, seqs[i].n, i0 });
            for (int r = 0; r < seqs[i].n; r++) row_seq.push_back(i), pos.push_back(seqs[i].pos0 + r), T++;
        }
        row0[n_seqs] = T;
        batch = { 1, n_seqs, T, kptr.data(), row0.data(), row_seq.data(), pos.data() };
        wgs = (int)work.size() / WORK_INTS;
        for (auto &sq : seqs) name += " [" + std::to_string(sq.pos0) + "+" + std::to_string(sq.n) + "]";
    }
    bool geometry() const {   /* the launcher's */
        if (att_rows(&batch) == rows && att_workgroups(&batch, rows) == wgs) return true;
        failed++, printf("FAIL attention geometry\n");
        return false;
    }
};

/* kv_append then attention on a step. */
static void attention(int n_heads, int n_kv, int head_dim, std::vector<seq_rows> seqs) {
    step st(seqs);
    const int BS = step::BS, l = step::l, kv_dim = n_kv * head_dim, T = st.T, pool = st.pool, rows = st.rows;
    if (!st.geometry()) return;
    size_t cache = (size_t)step::layers * pool * BS * kv_dim;
    vec K = rand_vec(cache), V = rand_vec(cache), K2 = K, V2 = V;   /* the twin's cache: the same bytes */
    kv_cache mine = { BS, pool, step::layers, kv_dim, K.data(), V.data(), 4 }, twin = mine;
    twin.k = K2.data(), twin.v = V2.data();
    vec k = rand_vec((size_t)T * kv_dim), v = rand_vec(k.size()), q = rand_vec((size_t)T * n_heads * head_dim);
    std::string name = "heads " + std::to_string(n_heads) + "/" + std::to_string(n_kv) + " head_dim " + std::to_string(head_dim) + st.name;

    std::string e = launch(kv_append_kernel, geo_kv_append(T), 0, mine.k, mine.v, st.tables.data(), st.table_off.data(),
                           st.row_seq.data(), st.pos.data(), l, k.data(), v.data(), pool, BS, kv_dim);
    k_kv_append(&twin, &st.batch, l, k.data(), v.data());
    vec got = K, ref = K2;
    got.insert(got.end(), V.begin(), V.end()), ref.insert(ref.end(), V2.begin(), V2.end());
    check("kv_append " + name, e, got, ref);

    got.assign(q.size(), 0), ref.assign(q.size(), 0);
    e = launch(attention_kernel, geo_attention(st.wgs, rows, n_heads, warpSize), 2 * (size_t)BS * head_dim * sizeof(float),
               got.data(), q.data(), mine.k, mine.v, st.tables.data(), st.work.data(), l, n_heads, n_heads / n_kv, head_dim,
               pool, BS, kv_dim, rows);
    k_attention(ref.data(), q.data(), &twin, &st.batch, l, n_heads, n_kv, head_dim);
    check(std::string(rows == 1 ? "attention decode " : "attention prefill ") + name, e, got, ref);
}

/* MLA's four kernels on a step (mla.hip's launches): kv_b_proj of dtype DT. */
template <int DT> static void mla(mla_dims d, std::vector<seq_rows> seqs) {
    step st(seqs);
    const int BS = step::BS, l = step::l, kv_dim = d.rank + d.rope, T = st.T, pool = st.pool, rows = st.rows, H = d.n_heads;
    if (!st.geometry()) return;
    weight W((dtype)DT, H * (d.nope + d.v_dim), d.rank, least_align((dtype)DT));
    size_t row = dtype_row_bytes((dtype)DT, d.rank);
    std::string name = std::string(dtype_name((dtype)DT)) + " heads " + std::to_string(H) + " rank " + std::to_string(d.rank) +
                       " rope " + std::to_string(d.rope) + st.name;
    vec q = rand_vec((size_t)T * H * (d.nope + d.rope)), got((size_t)T * H * d.rank), ref(got.size());
    vec gpe((size_t)T * H * d.rope), rpe(gpe.size());
    std::string e = launch(mla_absorb_kernel<DT>, geo_mla_heads(T, H), 0, got.data(), gpe.data(), q.data(), W.t.data, H, d.nope,
                           d.rope, d.v_dim, d.rank, row);
    k_mla_absorb(ref.data(), rpe.data(), q.data(), &W.t, T, d);
    got.insert(got.end(), gpe.begin(), gpe.end()), ref.insert(ref.end(), rpe.begin(), rpe.end());
    check("mla_absorb " + name, e, got, ref);

    size_t cache = (size_t)step::layers * pool * BS * kv_dim;
    vec K = rand_vec(cache), K2 = K;
    kv_cache mine = { BS, pool, step::layers, kv_dim, K.data(), nullptr, 4 }, twin = mine;
    twin.k = K2.data();
    vec c_kv = rand_vec((size_t)T * d.rank), k_pe = rand_vec((size_t)T * d.rope);
    e = launch(mla_kv_append_kernel, geo_kv_append(T), 0, mine.k, st.tables.data(), st.table_off.data(), st.row_seq.data(),
               st.pos.data(), l, c_kv.data(), k_pe.data(), pool, BS, d.rank, d.rope);
    k_mla_kv_append(&twin, &st.batch, l, c_kv.data(), k_pe.data(), d);
    check("mla_kv_append " + name, e, K, K2);

    vec q_lat = rand_vec((size_t)T * H * d.rank), q_pe = rand_vec((size_t)T * H * d.rope);
    got.assign(q_lat.size(), 0), ref.assign(q_lat.size(), 0);
    e = launch(mla_attention_kernel, geo_attention(st.wgs, rows, H, warpSize), (size_t)BS * kv_dim * sizeof(float), got.data(),
               q_lat.data(), q_pe.data(), mine.k, st.tables.data(), st.work.data(), l, H, d.rank, d.rope, d.scale, pool, BS, rows);
    k_mla_attention(ref.data(), q_lat.data(), q_pe.data(), &twin, &st.batch, l, d);
    check(std::string(rows == 1 ? "mla decode " : "mla prefill ") + name, e, got, ref);

    got.assign((size_t)T * H * d.v_dim, 0), ref.assign(got.size(), 0);
    e = launch(mla_up_v_kernel<DT>, geo_mla_heads(T, H), 0, got.data(), q_lat.data(), W.t.data, H, d.nope, d.v_dim, d.rank, row);
    k_mla_up_v(ref.data(), q_lat.data(), &W.t, T, d);
    check("mla_up_v " + name, e, got, ref);
}

/* A MoE router: ids (exact) and weights against k_moe_route. Random logits
 * spread wide (no ties within 1e-4 of each other but by chance). */
static void moe_topk(int T, int E, int k, int sigmoid, int n_group, int topk_group, bool bias) {
    vec logits = rand_vec((size_t)T * E), b = rand_vec(E);
    for (float &l : logits) l *= 4;
    moe_gate g = { E, k, sigmoid, 1, sigmoid ? 2.5f : 1.0f, n_group, topk_group, bias ? b.data() : NULL };
    std::vector<int> ids(T * k), ids2(T * k);
    vec w(T * k), w2(T * k);
    std::string e = launch(moe_topk_kernel, geo_moe_topk(T), 0, ids.data(), w.data(), logits.data(), g.bias, T, E, k,
                           g.sigmoid, g.norm_topk, g.scaling, g.n_group, g.topk_group);
    k_moe_route(ids2.data(), w2.data(), logits.data(), T, &g);
    vec got(w), ref(w2);
    for (int i = 0; i < T * k; i++) got.push_back((float)ids[i]), ref.push_back((float)ids2[i]);
    check("moe_topk E=" + std::to_string(E) + " k=" + std::to_string(k) + (sigmoid ? " sigmoid" : " softmax") +
          " groups " + std::to_string(topk_group) + "/" + std::to_string(n_group), e, got, ref);
}

/* The grouped matmul (both row modes) and the combine, against the twins:
 * T tokens routed to k of E experts of dtype DT, grouped as layer 4 does. */
template <int DT> static void moe_gemm(int T, int E, int k, int N, int K) {
    std::vector<weight *> W;
    std::vector<const tensor *> Wt;
    std::vector<const void *> Wd;
    for (int e = 0; e < E; e++) W.push_back(new weight((dtype)DT, N, K, least_align((dtype)DT)));
    for (weight *w : W) Wt.push_back(&w->t), Wd.push_back(w->t.data);
    vec logits = rand_vec((size_t)T * E), wts(T * k);
    std::vector<int> ids(T * k), start(E + 1, 0), slot(T * k), tile;
    moe_gate g = { E, k, 0, 1, 1.0f, 1, 1, NULL };
    k_moe_route(ids.data(), wts.data(), logits.data(), T, &g);
    for (int s = 0; s < T * k; s++) start[ids[s] + 1]++;
    for (int e = 0; e < E; e++) start[e + 1] += start[e];
    std::vector<int> next(start.begin(), start.end() - 1);
    for (int s = 0; s < T * k; s++) slot[next[ids[s]]++] = s;
    for (int e = 0; e < E; e++)
        for (int r0 = 0; r0 < start[e + 1] - start[e]; r0 += GEMM_TILE) tile.push_back(e), tile.push_back(r0);
    moe_groups grp = { E, k, T, start.data(), slot.data(), ids.data() };
    int tiles = (int)tile.size() / 2;
    std::string name = std::string(dtype_name((dtype)DT)) + " T=" + std::to_string(T) + " E=" + std::to_string(E) +
                       " k=" + std::to_string(k) + " N=" + std::to_string(N) + " K=" + std::to_string(K);
    for (int per_token : { 1, 0 }) {
        vec x = rand_vec((size_t)(per_token ? T : T * k) * K), got((size_t)T * k * N, 0), ref(got.size(), 0);
        std::string e = launch(moe_gemm_kernel<DT>, geo_moe_gemm(tiles, N), 0, got.data(), x.data(), Wd.data(), tile.data(),
                               start.data(), slot.data(), k, per_token, N, K, dtype_row_bytes((dtype)DT, K));
        k_moe_matmul(ref.data(), x.data(), Wt.data(), &grp, per_token, N, K);
        check(std::string("moe_gemm ") + (per_token ? "by token " : "by slot ") + name, e, got, ref);
    }
    vec y = rand_vec((size_t)T * k * N), got((size_t)T * N), ref(got.size());
    std::string e = launch(moe_combine_kernel, geo_elementwise(T * N), 0, got.data(), y.data(), wts.data(), T, k, N);
    k_moe_combine(ref.data(), y.data(), wts.data(), T, k, N);
    check("moe_combine T=" + std::to_string(T) + " k=" + std::to_string(k) + " n=" + std::to_string(N), e, got, ref);
    for (weight *w : W) delete w;
}

int main(void) {
    for (int wave : { 32, 64 }) {
        warpSize = wave;
        int before = passed + failed;
        struct timespec t0, t1;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        elementwise(1), elementwise(1000);
        embedding<DT_F32>(5, 320), embedding<DT_F16>(5, 320), embedding<DT_BF16>(5, 320);
        embedding<DT_Q8_0>(5, 320), embedding<DT_Q4_0>(5, 320), embedding<DT_Q4_1>(5, 320);
        rmsnorm(3, 64, false), rmsnorm(3, 1000, true);
        for (int hd : { 64, 128 }) rope(hd, 0, false), rope(hd, 1, false), rope(hd, 1, true);
        /* K: a multiple of every vector for the aligned GEMV; 99 fits none (2- or
         * 4-byte aligned rows); 11 blocks, which no wavefront's step divides. */
        matmuls<DT_F32>(352, 99, 99), matmuls<DT_F16>(352, 99, 99), matmuls<DT_BF16>(352, 99, 99);
        matmuls<DT_Q8_0>(352, 0, 160), matmuls<DT_Q4_0>(352, 0, 160), matmuls<DT_Q4_1>(352, 0, 160);
        matmul<DT_F32>(1, 5, 24, 4, false);             /* fewer columns than lanes */
        matmul<DT_F32>(2, 5, 40, 0, false);             /* one partial tile */
        split_k<DT_F32>(611), split_k<DT_BF16>(800), split_k<DT_Q4_1>(608);
        matmul<DT_F16>(2, 5, 1000, 2, false, 304);      /* one tile in 3 slices, no bias */
        attention(4, 2, 64, { { 37, 1 } });             /* decode, GQA, a partial last block */
        attention(2, 2, 128, { { 20, 1 } });            /* decode, one KV head per head */
        attention(4, 1, 128, { { 0, 7 } });             /* prefill, MQA, rows no workgroup divides */
        attention(4, 2, 64, { { 30, 5 } });             /* prefill after cached tokens, across blocks */
        attention(4, 2, 64, { { 37, 1 }, { 3, 1 }, { 16, 1 } });    /* a batch of decodes */
        attention(4, 2, 64, { { 20, 1 }, { 0, 9 }, { 31, 1 }, { 14, 6 } });   /* decodes and prefills in one step */
        /* MLA: DeepSeek-V3's latent of 512 + 64 over 3 heads (decode), odd
         * small shapes no lane count divides (prefills and decodes mixed) */
        mla<DT_BF16>({ 3, 512, 128, 64, 128, 0.0722f }, { { 37, 1 } });
        mla<DT_F32>({ 2, 40, 12, 8, 20, 0.2f }, { { 20, 1 }, { 0, 9 }, { 31, 1 }, { 14, 6 } });
        mla<DT_F16>({ 2, 64, 16, 16, 8, 0.2f }, { { 30, 5 } });
        mla<DT_Q8_0>({ 2, 64, 16, 8, 16, 0.2f }, { { 3, 1 } });
        mla<DT_Q4_0>({ 2, 64, 16, 8, 16, 0.2f }, { { 0, 7 } });
        mla<DT_Q4_1>({ 2, 64, 16, 8, 16, 0.2f }, { { 16, 1 } });
        moe_topk(37, 8, 3, 0, 1, 1, false);             /* qwen3_moe / mixtral: softmax */
        moe_topk(37, 16, 4, 1, 4, 2, true);             /* deepseek_v3: sigmoid, bias, the best 2 of 4 groups */
        moe_gemm<DT_F32>(13, 5, 2, 40, 99);             /* rows no tile divides, an expert maybe unused */
        moe_gemm<DT_BF16>(40, 3, 2, 33, 64);            /* an expert past one tile of rows */
        moe_gemm<DT_Q8_0>(7, 4, 3, 24, 96);
        clock_gettime(CLOCK_MONOTONIC, &t1);
        printf("wave %d: %d cases, %.1f s\n", wave, passed + failed - before,
               (t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) * 1e-9);
    }
    printf("%d passed, %d failed\n", passed, failed);
    return failed != 0;
}
