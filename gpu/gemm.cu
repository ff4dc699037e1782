// gpu/gemm.cu: the batch-invariant GEMM, y[M, N] = x[M, K] · w[N, K]ᵀ (backend.h gemm), on bf16
// tensor cores (mma.sync m16n8k16, fp32 accumulation; sm_80 and later).
//
// Reduction order (the contract; it depends on K alone, never on M, N, the element's place or the
// kernel that ran it, so the CUDA backend is batch invariant; it is NOT the CPU twin's 8-lane
// order, so CUDA and CPU agree within a tolerance, design.md §3):
//   - K is cut into segments of KSEG = 256 (the last one shorter), a segment into chunks of 32,
//     a chunk into two mma k-steps of 16. Lane q (0..3) of an mma quad loads the 8 consecutive k
//     at chunk + 8q of its row; step 0 takes k chunk + 8q + {0,1,2,3}, step 1 k chunk + 8q +
//     {4,5,6,7} (both operands use the same map, so each step is a true 16-term dot product).
//   - a segment's value is the mma chain over its chunks in ascending k (step 0, then step 1),
//     starting from +0; chunks wholly past K are not issued; k past K within a chunk is zero;
//   - the element is the left fold in fp32 of its segments: v = seg0; v = v + seg_s (s ascending).
// Each element's mma chain sees only its own row of x and column of w: the tensor core computes the
// 16 × 8 outputs of one step independently of each other, so the row's place in a tile and the
// other rows cannot change its bits (the bring-up tool checks every prefix M of a 2048-row product
// and each row alone, bitwise).
// Measured on the H200 (bench/README.md, sixth 2026-12-01 session): wgmma.mma_async (sm_90a), also
// with a step's 16 products at other positions within the step (four placements tried), and
// mma.sync with its operands swapped give the same bits as this file's mma.sync chains, so those
// instructions may compute this order.
//
// Five kernels compute that order; the choice (by M, N, alignment, the shared memory a block may
// have and the device) is speed only:
//   gemm_wgmma (past 64 rows where its 128 × 128 tiles give half the SMs one, wgmma_over_tiled,
//     or where a K split over blocks suits the product, wgmma_parts; sm_90a builds on a device
//     that runs them, cu_gemm_wgmma_setting; K % 256 == 0, N % 128 == 0, 16-byte aligned): the
//     warpgroup MMA, the weights from registers and x, permuted once per product by
//     gemm_permute_x, from shared memory (its section below says why); with the K split, block p
//     of P per tile computes the segments s ≡ p (mod P) and parks them like gemm_tiled's split,
//     and gemm_park_fold folds them in s order.
//   gemm_band (9 to 32 rows of products with a band per SM, band_over_split; K % 8 == 0, 16-byte
//     aligned): a block per 64 columns of y and all its rows, x and w staged through a ring of
//     shared-memory stages (cp.async), each of its 4 warps 16 columns of every row, so x is read
//     once per 64 columns; the block folds the segments in s order in registers.
//   gemm_split (up to 32 rows, SG_CUDA_GEMM_SPLIT_MAX_M to lower or 0 to turn off; K % 8 == 0,
//     16-byte aligned): a block per 8 columns of y (16 from 9 rows: launch_split_any; of one
//     product of a gemm_group; several tiles of 8 for short K: split_tiles_per_block), its W
//     warps (split_warps: a model of waves and segments per warp) taking the segments s ≡ warp
//     (mod W) from global memory into registers (up to 8 rows: into a two-stage shared-memory
//     ring per warp, split_ring), the next segment's in flight while one is computed; the block
//     folds the segments in s order. Several blocks share an SM, so one's fold overlaps the
//     others' loads. No persistent state.
//   gemm_tiled (past 32 rows where gemm_wgmma does not take them, from 17 for wide products
//     that gemm_band does not take:
//     tiled_over_split; and where gemm_split is off; K % 8 == 0, 16-byte aligned): a block per
//     64 × 64 tile of y, x and w staged through rings of shared-memory stages (cp.async) so each
//     is read once per block, each warp a 32 × 32 tile; with two K groups (launch_tiled_any: few
//     tiles) group g computes the segments s ≡ g (mod 2) and group 0 folds them in s order, in
//     registers; for one row tile of fewer tiles than SMs, a K split over P blocks per tile
//     instead: block p computes the segments s ≡ p (mod P) and parks each one's values in global
//     memory (cuda_gemm_park), and gemm_park_fold, launched after it, folds them in s order. The
//     row tiles of a column tile are adjacent blocks, so w comes from DRAM about once.
//   gemm_fold (unaligned x or w, or K % 8 != 0): a warp owns a tile and walks every segment
//     itself, folding in registers.
// All are launched as programmatic dependents (pdl.h): their blocks may start while the kernel
// before them finishes, gemm_band's, gemm_split's and gemm_tiled's warps issue their first weight
// loads (weights are immutable) and only then wait for that kernel's output. A decode step's GEMMs
// are 5–50 MB each, read in microseconds, so hiding each one's launch and first-load latency is a
// large share of its time.
//
// cu_gemm_from_end (cuda_internal.h; every product with SG_CUDA_GEMM_FROM_END=1, a test switch)
// is cu_gemm with the blocks of gemm_split, gemm_band and gemm_tiled taking the column tiles from
// the last one down (gemm_fold keeps its order): the same bits (a column's reduction does not
// depend on which block computes it, or when), only the order the weights are read in. Of two
// products over the same weights in opposite orders, the second finds in L2 what the first read
// last (the Markov steps' w2, 78 MB against the H200's 60 MB L2: markov.cu).
//
// gemm_swiglu (backend.h) is gate and up through gemm_split with the SwiGLU in the fold (a block
// takes the same columns of both products) up to 16 rows (8 where gemm_band takes the pair), or,
// past that or where gemm_split does not suit the shape, the two products by the kernels above and
// the SwiGLU kernel (elementwise.cu): the same bits either way.

#include "async_copy.h"
#include "cuda_internal.h"
#include "device_numerics.h"
#include "pdl.h"

namespace {

constexpr int KSEG = 256;  // segment length (the fold's unit)
constexpr int KCHUNK = 32; // one 16-byte load per lane per row, two mma k-steps

// 8 bf16 of row `row` (of R rows, length K) at k .. k+7, zero outside. vec: 16-byte loads allowed.
// STREAM: read-once data (weights), not kept in L1, and a miss fetches the 256 bytes around it into
// L2 (the row's next chunks; measured on the H200: plain decode 293 -> 301 tok/s).
template <bool STREAM>
__device__ __forceinline__ uint4 load8(const uint16_t *__restrict__ a, int row, int R, int K, int k,
                                       int vec) {
    uint4 r = make_uint4(0u, 0u, 0u, 0u);
    if (row >= R || k >= K) return r;
    const uint16_t *p = a + (size_t)row * K + k;
    if (vec) {
        if (STREAM)
            asm volatile("ld.global.nc.L1::no_allocate.L2::256B.v4.u32 {%0, %1, %2, %3}, [%4];"
                         : "=r"(r.x), "=r"(r.y), "=r"(r.z), "=r"(r.w)
                         : "l"(p));
        else
            r = __ldg(reinterpret_cast<const uint4 *>(p));
        return r;
    }
    uint32_t h[8];
#pragma unroll
    for (int j = 0; j < 8; j++) h[j] = k + j < K ? p[j] : 0u;
    r.x = h[0] | (h[1] << 16);
    r.y = h[2] | (h[3] << 16);
    r.z = h[4] | (h[5] << 16);
    r.w = h[6] | (h[7] << 16);
    return r;
}

// d += a · b over one k-step: a 16 × 16 (rows g, g+8), b 16 × 8, fp32 accumulate.
__device__ __forceinline__ void mma_step(float d[4], uint32_t a0, uint32_t a1, uint32_t a2,
                                         uint32_t a3, uint32_t b0, uint32_t b1) {
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, "
                 "{%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
}

// The weights of one batch of CH chunks from k0 (the warp's columns n0 .. n0 + 8·NT - 1).
template <int NT, int CH>
__device__ __forceinline__ void load_w_batch(const uint16_t *__restrict__ w, int N, int K, int n0,
                                             int k0, int vec, uint4 b[CH][NT]) {
    const int lane = threadIdx.x & 31, g = lane >> 2, q = lane & 3;
#pragma unroll
    for (int c = 0; c < CH; c++)
#pragma unroll
        for (int j = 0; j < NT; j++)
            b[c][j] = load8<true>(w, n0 + 8 * j + g, N, K, k0 + c * KCHUNK + 8 * q, vec);
}

// Every fragment value of acc [A][B][4] set to +0 (a segment's mma chain starts there).
template <int A, int B>
__device__ __forceinline__ void zero_frags(float (&acc)[A][B][4]) {
#pragma unroll
    for (int i = 0; i < A; i++)
#pragma unroll
        for (int j = 0; j < B; j++)
#pragma unroll
            for (int e = 0; e < 4; e++) acc[i][j][e] = 0.f;
}

// One segment of a warp's 16·MT × 8·NT tile (rows m0.., columns n0..) into acc, from +0.
// acc[i][j] is the m16n8 fragment of rows m0 + 16i, columns n0 + 8j: [0], [1] at row g, columns
// 2q, 2q+1; [2], [3] at row g + 8. The weights come in batches of CH chunks, all in flight before
// they are consumed; b holds the segment's first batch on entry (loaded by the caller, possibly
// before pdl_wait_primary) and is reused for the later ones.
template <int MT, int NT, int CH>
__device__ __forceinline__ void segment_mma(const uint16_t *__restrict__ x, int M, int K,
                                            const uint16_t *__restrict__ w, int N, int m0, int n0,
                                            int k_seg, int vec, uint4 b[CH][NT],
                                            float (&acc)[MT][NT][4]) {
    const int lane = threadIdx.x & 31, g = lane >> 2, q = lane & 3;
    zero_frags(acc);
    const int k_end = min(K, k_seg + KSEG);
#pragma unroll 1
    for (int k0 = k_seg; k0 < k_end; k0 += CH * KCHUNK) {
        if (k0 != k_seg) load_w_batch<NT, CH>(w, N, K, n0, k0, vec, b);
        uint4 a[CH][MT][2];
#pragma unroll
        for (int c = 0; c < CH; c++)
#pragma unroll
            for (int i = 0; i < MT; i++) {
                const int k = k0 + c * KCHUNK + 8 * q;
                a[c][i][0] = load8<false>(x, m0 + 16 * i + g, M, K, k, vec);
                a[c][i][1] = load8<false>(x, m0 + 16 * i + 8 + g, M, K, k, vec);
            }
#pragma unroll
        for (int c = 0; c < CH; c++) {
            if (k0 + c * KCHUNK >= k_end) break; // chunks wholly past K are not issued
#pragma unroll
            for (int i = 0; i < MT; i++)
#pragma unroll
                for (int j = 0; j < NT; j++) {
                    const uint4 &lo = a[c][i][0], &hi = a[c][i][1], &bb = b[c][j];
                    mma_step(acc[i][j], lo.x, hi.x, lo.y, hi.y, bb.x, bb.y); // k +0,1 | +2,3
                    mma_step(acc[i][j], lo.z, hi.z, lo.w, hi.w, bb.z, bb.w); // k +4,5 | +6,7
                }
        }
    }
}

// Row and column of fragment value e (0..3) of tile (i, j), relative to the warp tile.
__device__ __forceinline__ int frag_row(int i, int e) {
    return 16 * i + ((threadIdx.x & 31) >> 2) + (e >= 2 ? 8 : 0);
}
__device__ __forceinline__ int frag_col(int j, int e) { return 8 * j + 2 * (threadIdx.x & 3) + (e & 1); }

__device__ __forceinline__ void store_out(void *y, int out_f32, int N, int m, int n, float v) {
    size_t at = (size_t)m * N + n;
    if (out_f32)
        static_cast<float *>(y)[at] = v;
    else
        static_cast<uint16_t *>(y)[at] = d_f32_to_bf16(v);
}

// The values val(i, j, e) of a warp's 16·MT × 8·NT tile of fragments into y at rows m0 + frag_row,
// columns n0 + frag_col (those inside M × N).
template <int MT, int NT, typename V>
__device__ __forceinline__ void store_frags(void *y, int out_f32, int M, int N, int m0, int n0,
                                            V val) {
#pragma unroll
    for (int j = 0; j < NT; j++)
#pragma unroll
        for (int i = 0; i < MT; i++)
#pragma unroll
            for (int e = 0; e < 4; e++) {
                const int m = m0 + frag_row(i, e), n = n0 + frag_col(j, e);
                if (m < M && n < N) store_out(y, out_f32, N, m, n, val(i, j, e));
            }
}

// One step of the left fold in s order, fragment by fragment: tot = acc for the first segment,
// else tot + acc.
template <int A, int B>
__device__ __forceinline__ void fold_frags(float (&tot)[A][B][4], const float (&acc)[A][B][4],
                                           bool first) {
    float *t = &tot[0][0][0];
    const float *v = &acc[0][0][0];
#pragma unroll
    for (int f = 0; f < A * B * 4; f++) t[f] = first ? v[f] : __fadd_rn(t[f], v[f]);
}

// A fragments of chunks c0 .. c0 + AB - 1 of segment k_seg, rows m0 + 16i + g and + 8 (HALF:
// those are past M and zero, not loaded); zero past M or K. All loads in flight together.
template <int AB, int MT, bool HALF>
__device__ __forceinline__ void load_a_batch(const uint16_t *__restrict__ x, int M, int K, int m0,
                                             int k_seg, int c0, uint4 a[AB][MT][2]) {
    const int g = (threadIdx.x & 31) >> 2, q = threadIdx.x & 3;
#pragma unroll
    for (int c = 0; c < AB; c++)
#pragma unroll
        for (int i = 0; i < MT; i++) {
            const int k = k_seg + (c0 + c) * KCHUNK + 8 * q;
            a[c][i][0] = load8<false>(x, m0 + 16 * i + g, M, K, k, 1);
            a[c][i][1] = HALF ? make_uint4(0u, 0u, 0u, 0u)
                              : load8<false>(x, m0 + 16 * i + 8 + g, M, K, k, 1);
        }
}

// One chunk of the mma chain: acc[i] += the chunk's two k-steps of a[i] (rows) · bb (columns).
template <int MT>
__device__ __forceinline__ void mma_chunk(float acc[MT][4], const uint4 a[MT][2], const uint4 &bb) {
#pragma unroll
    for (int i = 0; i < MT; i++) {
        const uint4 &lo = a[i][0], &hi = a[i][1];
        mma_step(acc[i], lo.x, hi.x, lo.y, hi.y, bb.x, bb.y); // k +0,1 | +2,3
        mma_step(acc[i], lo.z, hi.z, lo.w, hi.w, bb.z, bb.w); // k +4,5 | +6,7
    }
}

// ---- gemm_split: a block per column tile, its warps split K, weights straight into registers ----

constexpr int SPLIT_MAX_WARPS = 8;
constexpr int SPLIT_MIN_WARPS = 4; // split_warps' floor

// A warp's registers, per tile shape (measured on the H200 with ops perf, bench/README.md):
// whether its weights are double-buffered (the next item's in flight during an mma chain:
// gemm_split's WB2, chosen by launch_split), and how many chunks' A fragments (x) are loaded
// together (the ring's tiles, split_ring, load a segment's at once).
template <int MT, int NT>
__host__ __device__ constexpr int split_a_batch() {
    return MT == 1 ? 2 : MT == 2 ? (NT == 2 ? 1 : 4) : 2;
}

// The weights of segment s of columns n0 .. n0 + 8·NT - 1: lane (g, q) holds rows n0 + 8j + g
// (b[j]) at k = 256s + 32c + 8q .. + 7 for chunks c = 0 .. 7, zero past N or K (K % 8 == 0).
template <int NT>
__device__ __forceinline__ void split_load(const uint16_t *__restrict__ w, int N, int K, int n0,
                                           int s, uint4 b[NT][KSEG / KCHUNK]) {
    const int lane = threadIdx.x & 31, g = lane >> 2, q = lane & 3;
#pragma unroll
    for (int j = 0; j < NT; j++)
#pragma unroll
        for (int c = 0; c < KSEG / KCHUNK; c++)
            b[j][c] = load8<true>(w, n0 + 8 * j + g, N, K, s * KSEG + c * KCHUNK + 8 * q, 1);
}

// Blocks of 8 columns and up to 8 rows (MT = 1, NT = 1: decode and small verifies)
// stream their weights through a ring of SPLIT_RING shared-memory stages per warp (cp.async)
// instead of registers: 46 registers instead of about 106, so more warps per SM with as many
// segments in flight per warp. Measured on the H200 (bench/README.md, 2026-12-01): plain decode
// 306 -> 327 tok/s, ops perf M = 1 o_proj 9.3 -> 7.7 us, lm_head 212 -> 194; deeper rings (3, 4
// stages: fewer warps per SM) and the 16-column tiles of 9-16 rows on rings were slower. A warp
// requests a segment's x (all 8 chunks: 58-60 registers) before it waits for the segment's
// weights, so the two latencies overlap (fourth 2026-12-01 session: plain decode 325.8 -> 329.9
// tok/s, 4 requests 1094.3 -> 1126.3; ops perf M = 8 lm_head 226.8 -> 207.3 us). Slower, same
// session: rings for the 8-column tiles of 9-16 and 17-32 rows, and weight rows brought by bulk
// copies (cp.async.bulk, one per row and segment, an mbarrier per stage).
constexpr int SPLIT_RING = 2;
template <int MT, int NT>
__host__ __device__ constexpr bool split_ring() {
    return MT == 1 && NT == 1;
}
// Ring stages per warp for V items over W warps: one where no warp has a second item (V <= W: a
// second stage would never be filled and would only take shared memory from other blocks; the
// one-segment blocks of markov_w2, K = 256: 8 resident blocks per SM instead of 6). Measured on the
// H200 (bench/README.md, twelfth 2026-12-01 session): ops perf markov_w2 at M = 8 26.4-26.9 ->
// 24.8-25.2 us, at M = 3 24.1 -> 23.8, at M = 1 unchanged (23.0-23.2 vs 23.2-23.5); the bench's
// Markov loop moved within its runs' spread.
__host__ __device__ constexpr int split_ring_stages(int V, int W) { return V > W ? SPLIT_RING : 1; }
template <int NT>
__host__ __device__ constexpr int split_ring_stage() { // 16-byte pieces per stage
    return NT * (KSEG / KCHUNK) * 32;
}

// Segment s of columns n0 .. n0 + 8·NT - 1 into a ring stage: lane (g, q)'s pieces are split_load's
// (column tile j, chunk c) at [j][c][lane], so a lane reads back only what it copied (its
// cp_async_wait suffices) and a warp's reads of one piece are 512 contiguous bytes (no bank
// conflicts). Zero past N or K (K % 8 == 0).
template <int NT>
__device__ __forceinline__ void split_issue(const uint16_t *__restrict__ w, int N, int K, int n0,
                                            int s, uint4 *stage) {
    const int lane = threadIdx.x & 31, g = lane >> 2, q = lane & 3;
#pragma unroll
    for (int j = 0; j < NT; j++)
#pragma unroll
        for (int c = 0; c < KSEG / KCHUNK; c++) {
            const int row = n0 + 8 * j + g, k = s * KSEG + c * KCHUNK + 8 * q;
            const bool in = row < N && k < K;
            cp_async16_stream(stage + (j * (KSEG / KCHUNK) + c) * 32 + lane,
                              in ? w + (size_t)row * K + k : w, in ? 16 : 0);
        }
}

// Chunks of segment s that hold some k < K (chunks wholly past K are not issued).
__device__ __forceinline__ int split_chunks(int K, int s) {
    return min(KSEG / KCHUNK, (K - s * KSEG + KCHUNK - 1) / KCHUNK);
}

// The mma chain of one segment of the block's tile (rows 0 .. 16·MT - 1, NT column tiles of 8)
// over its first n_chunks chunks, parked in park ([16·MT][8·NT]): the x fragments of chunks
// c0 .. c0 + AB - 1 come from xbatch(c0) (uint4 [AB][MT][2], as load_a_batch places them), the
// weights from wfrag(j, c) (lane (g, q)'s 8 values of column tile j, chunk c, as split_load places
// them). The fragment values and order of segment_mma; each A fragment serves the NT column tiles.
template <int MT, int NT, int AB, typename XB, typename WF>
__device__ __forceinline__ void split_chain(int n_chunks, XB xbatch, WF wfrag, float *park) {
    float acc[NT][MT][4];
    zero_frags(acc);
#pragma unroll
    for (int c0 = 0; c0 < KSEG / KCHUNK; c0 += AB) {
        const uint4(&a)[AB][MT][2] = xbatch(c0);
#pragma unroll
        for (int c = 0; c < AB; c++) {
            if (c0 + c >= n_chunks) break;
#pragma unroll
            for (int j = 0; j < NT; j++) mma_chunk<MT>(acc[j], a[c], wfrag(j, c0 + c));
        }
    }
    constexpr int TC = 8 * NT; // the tile's columns
#pragma unroll
    for (int j = 0; j < NT; j++)
#pragma unroll
        for (int i = 0; i < MT; i++)
#pragma unroll
            for (int e = 0; e < 4; e++)
                park[frag_row(i, e) * TC + frag_col(j, e)] = acc[j][i][e];
}

// split_chain over segment s with x loaded from global memory split_a_batch chunks at a time.
template <int MT, bool HALF, int NT, typename WF>
__device__ __forceinline__ void split_segment(const uint16_t *__restrict__ x, int M, int K, int s,
                                              WF wfrag, float *park) {
    constexpr int AB = split_a_batch<MT, NT>();
    uint4 a[AB][MT][2];
    split_chain<MT, NT, AB>(
        split_chunks(K, s),
        [&](int c0) -> const uint4(&)[AB][MT][2] {
            load_a_batch<AB, MT, HALF>(x, M, K, 0, s * KSEG, c0, a);
            return a;
        },
        wfrag, park);
}

// The products of one gemm_split launch (backend.h gemm_group; a plain gemm is a group of one):
// product p has weights w[p] [N[p], K] and output y[p] [M, N[p]]; its column tiles (8·NT columns
// each) are blocks tile_end[p - 1] .. tile_end[p] - 1 (tile_end[-1] = 0; launch_split fills it).
// from_end: the blocks take the column tiles from the last one down (cu_gemm_from_end).
struct split_group {
    const uint16_t *w[BE_GEMM_GROUP_MAX];
    void *y[BE_GEMM_GROUP_MAX];
    int N[BE_GEMM_GROUP_MAX];
    int tile_end[BE_GEMM_GROUP_MAX];
    int n;
    int from_end;
};

// The column tile (or band, or tile of tiles) that block index b of `count` takes: b, or counted
// from the end with G.from_end. Blocks start roughly in index order, so from_end reads the weights
// roughly from their end.
__device__ __forceinline__ int column_block(const split_group &G, unsigned b, unsigned count) {
    return (int)(G.from_end ? count - 1 - b : b);
}

// The product of group G whose column tiles include `tile`: w, y, N and its first tile, set on
// entry to product 0's (constant indices only: a dynamic one would copy G to local memory).
__device__ __forceinline__ void pick_product(const split_group &G, int tile,
                                             const uint16_t *__restrict__ &w, void *&y, int &N,
                                             int &first_tile) {
#pragma unroll
    for (int q = 1; q < BE_GEMM_GROUP_MAX; q++)
        if (q < G.n && tile >= G.tile_end[q - 1]) {
            w = G.w[q];
            y = G.y[q];
            N = G.N[q];
            first_tile = G.tile_end[q - 1];
        }
}

// Item v of a gemm_split block: segment v of w, or (SW: gemm_swiglu, v >= S) segment v - S of
// w_up.
template <bool SW>
__device__ __forceinline__ const uint16_t *item_w(const uint16_t *w, const uint16_t *w_up, int S,
                                                  int v) {
    return SW && v >= S ? w_up : w;
}
template <bool SW>
__device__ __forceinline__ int item_s(int S, int v) {
    return SW && v >= S ? v - S : v;
}

// Warp items v, v + W, ... of a gemm_split block (below) with their weights straight into
// registers: the next item's in flight during an mma chain (WB2: two register sets, alternating;
// else one), the first issued before pdl_wait_primary.
template <int MT, bool HALF, int NT, bool SW, bool WB2>
__device__ __forceinline__ void split_stream_registers(const uint16_t *__restrict__ x, int M, int K,
                                                       const uint16_t *__restrict__ w,
                                                       const uint16_t *__restrict__ w_up, int N,
                                                       int n0, int S, int V, int W, int v,
                                                       float *split_part) {
    constexpr int TE = 16 * MT * 8 * NT;
    uint4 b0[NT][KSEG / KCHUNK], b1[NT][KSEG / KCHUNK];
    if (v < V) split_load<NT>(item_w<SW>(w, w_up, S, v), N, K, n0, item_s<SW>(S, v), b0);
    pdl_wait_primary();
    if constexpr (!WB2) {
        // One register set: the next item's weights are requested after this one's mma chain.
        while (v < V) {
            split_segment<MT, HALF, NT>(x, M, K, item_s<SW>(S, v),
                                        [&](int j, int c) { return b0[j][c]; },
                                        split_part + (size_t)v * TE);
            v += W;
            if (v < V)
                split_load<NT>(item_w<SW>(w, w_up, S, v), N, K, n0, item_s<SW>(S, v), b0);
        }
    }
    // Two sets: item v's weights in cur, item v + W's requested into next before v's chain.
    const auto step = [&](uint4(&cur)[NT][KSEG / KCHUNK], uint4(&next)[NT][KSEG / KCHUNK]) {
        if (v + W < V)
            split_load<NT>(item_w<SW>(w, w_up, S, v + W), N, K, n0, item_s<SW>(S, v + W), next);
        split_segment<MT, HALF, NT>(x, M, K, item_s<SW>(S, v),
                                    [&](int j, int c) { return cur[j][c]; },
                                    split_part + (size_t)v * TE);
        v += W;
    };
    while (WB2 && v < V) {
        step(b0, b1);
        if (v >= V) break;
        step(b1, b0);
    }
}

// Block b computes 8·NT columns of all rows (M <= 16·MT) of one product of the group: warp w takes
// segments s = w, w + W, ..., holding the next one's weights in flight (its ring's stages for the
// tiles split_ring names, else split_stream_registers) while it computes one, the first ones
// issued before pdl_wait_primary (weights are immutable); the block then folds the segments
// in s order. Several blocks share an SM, so one block's fold overlaps the others' streaming.
// NT > 1 reads each A fragment (x) once for NT column tiles (taller M: x's loads outnumber the
// weights'). SW (gemm_swiglu): the group is gate and up of one N, block b takes the same columns of
// both (its items: gate's S segments, then up's), folds each, rounds them as gemm does and writes
// their SwiGLU to y[0]. tb > 1 (split_tiles_per_block; ring blocks of one product
// only): block b takes column tiles tb·b .. tb·b + tb - 1, its items being each tile's segments in
// turn (item v: tile v / S, segment v % S), folded per tile. WB2: two weight register sets
// (split_stream_registers; the ring's tiles ignore it). Needs K % 8 == 0 and 16-byte aligned x
// and w.
template <int MT, bool HALF, int NT, bool SW, bool WB2>
__global__ void __launch_bounds__(32 * SPLIT_MAX_WARPS)
    gemm_split(const uint16_t *__restrict__ x, int M, int K, const split_group G, int out_f32,
               int S, int tb) {
    constexpr int TC = 8 * NT, TE = 16 * MT * TC;
    // [V][16·MT][8·NT], V = tb·S (SW: 2S, gate's then up's); then (split_ring) the warps' rings,
    // [W][split_ring_stages(V, W)][split_ring_stage] 16-byte pieces (V·TE floats keep them 16-byte
    // aligned)
    extern __shared__ float split_part[];
    const int tile = tb * column_block(G, blockIdx.x, gridDim.x);
    // The block's product (SW: gate, with up beside it).
    const uint16_t *__restrict__ w = G.w[0];
    const uint16_t *__restrict__ w_up = SW ? G.w[1] : nullptr;
    void *y = G.y[0];
    int N = G.N[0], first_tile = 0;
    if (!SW) pick_product(G, tile, w, y, N, first_tile);
    const int n0 = TC * (tile - first_tile);
    const int W = blockDim.x >> 5, VT = SW ? 2 * S : S, V = VT * tb; // items: a tile's, all
    int v = threadIdx.x >> 5;
    pdl_allow_dependents();
    if constexpr (split_ring<MT, NT>()) {
        // Items v + r·W in stage r, all issued before pdl_wait_primary, then each stage refilled
        // with the item SPLIT_RING·W on once its segment is computed.
        constexpr int STAGE = split_ring_stage<NT>();
        const int lane = threadIdx.x & 31;
        uint4 *ring = reinterpret_cast<uint4 *>(split_part + (size_t)V * TE) +
                      (size_t)(threadIdx.x >> 5) * split_ring_stages(V, W) * STAGE;
        // Item u: tile u / VT of the block's, its item u % VT.
        const auto issue = [&](int u, uint4 *stage) {
            split_issue<NT>(item_w<SW>(w, w_up, S, u % VT), N, K, n0 + TC * (u / VT),
                            item_s<SW>(S, u % VT), stage);
        };
#pragma unroll
        for (int r = 0; r < SPLIT_RING; r++) {
            const int u = v + r * W;
            if (u < V) issue(u, ring + r * STAGE);
            cp_async_commit(); // a group per stage, empty past V: the wait below counts stages
        }
        pdl_wait_primary();
        for (int r = 0; v < V; v += W, r = r + 1 == SPLIT_RING ? 0 : r + 1) {
            // The segment's x is requested before the wait for its weights, all of it at once,
            // so its latency hides behind theirs.
            constexpr int CH = KSEG / KCHUNK;
            const int s = item_s<SW>(S, v % VT);
            uint4 xa[CH][MT][2];
            load_a_batch<CH, MT, HALF>(x, M, K, 0, s * KSEG, 0, xa);
            cp_async_wait<SPLIT_RING - 1>();
            const uint4 *stage = ring + r * STAGE;
            split_chain<MT, NT, CH>(
                split_chunks(K, s), [&](int) -> const uint4(&)[CH][MT][2] { return xa; },
                [&](int j, int c) { return stage[(j * (KSEG / KCHUNK) + c) * 32 + lane]; },
                split_part + (size_t)v * TE);
            const int u = v + SPLIT_RING * W;
            if (u < V) issue(u, ring + r * STAGE);
            cp_async_commit();
        }
    } else {
        split_stream_registers<MT, HALF, NT, SW, WB2>(x, M, K, w, w_up, N, n0, S, V, W, v,
                                                      split_part);
    }
    __syncthreads();
    for (int f = threadIdx.x; f < tb * TE; f += blockDim.x) {
        const int e = f % TE, m = e / TC, n = n0 + TC * (f / TE) + e % TC;
        if (m >= M || n >= N) continue;
        const float *part = split_part + (size_t)(f / TE) * VT * TE; // the tile's items
        float val = part[e];
        for (int ss = 1; ss < S; ss++) val = __fadd_rn(val, part[ss * TE + e]);
        if (!SW) {
            store_out(y, out_f32, N, m, n, val);
            continue;
        }
        float up = part[S * TE + e];
        for (int ss = 1; ss < S; ss++) up = __fadd_rn(up, part[(S + ss) * TE + e]);
        static_cast<uint16_t *>(y)[(size_t)m * N + n] =
            d_swiglu(d_f32_to_bf16(val), d_f32_to_bf16(up));
    }
}

// ---- gemm_tiled: block tiles of x and w staged together in shared memory (many rows) ----

constexpr int TL_CH = 2;     // chunks per pipeline stage (64 k)
constexpr int TL_SEG_STAGES = KSEG / (TL_CH * KCHUNK); // stages per segment
constexpr int TL_STAGES = 4; // stages in a ring: TL_STAGES - 1 in flight ahead of the one used
constexpr int TL_WM = 2, TL_WN = 2; // a K group's warps: TL_WM (rows) × TL_WN (columns)

// A gemm_tiled block: KG groups of TL_WM × TL_WN warps; a group's warp computes a 32 × 32 tile of
// y (so a group covers BM × BN), group g the segments s ≡ g (mod KG). Shared memory: a ring per
// group of TL_STAGES stages, a stage being per chunk the BM x rows then the BN w rows, 64 bytes
// each (the 8 rows × 4 lanes of a quarter-warp's 16-byte fragment reads fall in distinct banks);
// then the parked segment values of groups 1 .. KG - 1 (32 per thread).
template <int KG>
struct tiled_cfg {
    static constexpr int BM = 32 * TL_WM, BN = 32 * TL_WN;
    static constexpr int GT = 32 * TL_WM * TL_WN, THREADS = GT * KG; // threads per group, block
    static constexpr int STAGE = TL_CH * (BM + BN) * KCHUNK;  // elements
    static constexpr int RING = TL_STAGES * STAGE;             // elements
    static constexpr size_t SMEM = (size_t)KG * RING * 2 + (size_t)(KG - 1) * GT * 32 * 4;
};

// One thread's share of the copies of ROWS rows (from r0, of a [R, K] matrix) of a stage of CH
// chunks: the 16-byte piece tid % 4 of rows tid / 4 + i·GT/4 of each chunk (the row pointers
// computed once).
template <int ROWS, int GT, int CH = TL_CH>
struct tiled_copy {
    static constexpr int PER = ROWS * 4 / GT; // rows per thread
    static_assert(ROWS * 4 % GT == 0, "a stage's pieces divide among the group's threads");
    const uint16_t *src[PER];
    bool in[PER];
    int kp, dst0;
    __device__ __forceinline__ tiled_copy(const uint16_t *a, int R, int K, int r0, int tid) {
        kp = 8 * (tid % 4);
        dst0 = tid / 4 * KCHUNK + kp;
#pragma unroll
        for (int i = 0; i < PER; i++) {
            const int r = r0 + tid / 4 + i * (GT / 4);
            in[i] = r < R;
            src[i] = a + (size_t)(in[i] ? r : 0) * K + kp;
        }
    }
    // Stage t (k = 32·CH·t ..) into dst [CH][ROWS][KCHUNK], zero past R or K (K % 8 == 0).
    __device__ __forceinline__ void issue(int K, int t, uint16_t *dst) const {
#pragma unroll
        for (int c = 0; c < CH; c++) {
            const int k = t * CH * KCHUNK + c * KCHUNK;
#pragma unroll
            for (int i = 0; i < PER; i++) {
                const bool ok = in[i] && k + kp < K;
                cp_async16(dst + c * ROWS * KCHUNK + i * (GT / 4) * KCHUNK + dst0,
                           ok ? src[i] + k : src[i], ok ? 16 : 0);
            }
        }
    }
};

// A warp's 32 × 32 tile of fragment values acc[NT][MT][4] into a row-major tile of `ld` columns at
// rows wm + frag_row (those below `rows`), columns wn + frag_col (adjacent values as pairs).
template <int MT, int NT>
__device__ __forceinline__ void park_tile_frags(float *__restrict__ tile, int ld, int rows, int wm,
                                                int wn, const float (&acc)[NT][MT][4]) {
#pragma unroll
    for (int j = 0; j < NT; j++)
#pragma unroll
        for (int i = 0; i < MT; i++)
#pragma unroll
            for (int e = 0; e < 4; e += 2) {
                const int r = wm + frag_row(i, e);
                if (r < rows)
                    *reinterpret_cast<float2 *>(tile + (size_t)r * ld + wn + frag_col(j, e)) =
                        make_float2(acc[j][i][e], acc[j][i][e + 1]);
            }
}

// Block (r, b) computes rows BM·r .. and columns BN·b .. (of its product of the group: launch_tiled
// lays the products' column tiles end to end) of y; with KS (a K split over blocks, one K group)
// block (r, b, p) computes the segments s ≡ p (mod P = gridDim.z) of that tile and parks each
// segment's values, rows below M, in kpark [tile b · row tiles + r][S][BM][BN], for
// gemm_park_fold to fold. Each element's segment values are
// segment_mma's mma chains (the same fragment values and order, read from shared memory); group g
// computes segments s ≡ g (mod KG) of the whole tile, round after round (segments KG·r ..
// KG·r + KG - 1 together), and group 0 folds them in s order (its own, then the others' parked
// ones) into registers. Each group streams its x and w through its ring (cp.async; the first
// stages' weights issued before pdl_wait_primary), so x and w are read from memory once per block
// and the row tiles of a column tile are adjacent blocks (blockIdx.x fastest): the weights come
// from DRAM about once. Needs K % 8 == 0 and 16-byte aligned x and w.
template <int KG, bool KS>
__global__ void __launch_bounds__(tiled_cfg<KG>::THREADS)
    gemm_tiled(const uint16_t *__restrict__ x, int M, int K, const split_group G, int out_f32,
               float *__restrict__ kpark) {
    using C = tiled_cfg<KG>;
    static_assert(!KS || KG == 1, "a K split over blocks takes one K group per block");
    constexpr int MT = 2, NT = 4, FRAGS = NT * MT * 4;
    extern __shared__ __align__(16) uint16_t tl_smem[];
    const int g = threadIdx.x / C::GT, tid = threadIdx.x % C::GT;
    const int warp = tid >> 5, lane = threadIdx.x & 31, fg = lane >> 2, fq = lane & 3;
    const int wm = 32 * (warp % TL_WM), wn = 32 * (warp / TL_WM);
    const uint16_t *__restrict__ w = G.w[0];
    void *y = G.y[0];
    int N = G.N[0], first_tile = 0;
    const int col = column_block(G, blockIdx.y, gridDim.y);
    pick_product(G, col, w, y, N, first_tile);
    const int m0 = C::BM * (int)blockIdx.x, n0 = C::BN * (col - first_tile);
    uint16_t *ring = tl_smem + g * C::RING;
    float *park = reinterpret_cast<float *>(tl_smem + KG * C::RING); // [KG - 1][FRAGS][GT]
    const int T = (K + TL_CH * KCHUNK - 1) / (TL_CH * KCHUNK), S = (K + KSEG - 1) / KSEG;
    // The group's segments: s_first, s_first + s_step, ...; its stages u = 0, 1, ...: stage
    // u % TL_SEG_STAGES of its segment u / TL_SEG_STAGES.
    const int s_first = g + (KS ? (int)blockIdx.z : 0), s_step = KS ? (int)gridDim.z : KG;
    auto stage_of = [&](int u) {
        return (s_first + s_step * (u / TL_SEG_STAGES)) * TL_SEG_STAGES + u % TL_SEG_STAGES;
    };
    const tiled_copy<C::BM, C::GT> xc(x, M, K, m0, tid);
    const tiled_copy<C::BN, C::GT> wc(w, N, K, n0, tid);
    pdl_allow_dependents();
    for (int u = 0; u < TL_STAGES - 1 && stage_of(u) < T; u++)
        wc.issue(K, stage_of(u), ring + u * C::STAGE + TL_CH * C::BM * KCHUNK);
    pdl_wait_primary();
    for (int u = 0; u < TL_STAGES - 1; u++) {
        if (stage_of(u) < T) xc.issue(K, stage_of(u), ring + u * C::STAGE);
        cp_async_commit(); // empty groups keep the count: group u is stage u
    }
    float acc[NT][MT][4], tot[NT][MT][4];
    zero_frags(acc);
    int u = 0;
    for (int s0 = s_first - g; s0 < S; s0 += s_step) {
        const int s = s0 + g, n_st = s < S ? min(TL_SEG_STAGES, T - s * TL_SEG_STAGES) : 0;
        for (int i = 0; i < n_st; i++, u++) {
            cp_async_wait<TL_STAGES - 2>(); // stage u has landed (this thread's copies)
            if (KG == 1) // everyone's; and stage u - 1 is no longer read
                __syncthreads();
            else
                asm volatile("bar.sync %0, %1;" ::"r"(g + 1), "n"(C::GT) : "memory");
            const int un = u + TL_STAGES - 1;
            if (stage_of(un) < T) {
                uint16_t *st = ring + (un % TL_STAGES) * C::STAGE;
                xc.issue(K, stage_of(un), st);
                wc.issue(K, stage_of(un), st + TL_CH * C::BM * KCHUNK);
            }
            cp_async_commit();
            const uint16_t *xs = ring + (u % TL_STAGES) * C::STAGE;
            const uint16_t *ws = xs + TL_CH * C::BM * KCHUNK;
            const int k0 = (s * TL_SEG_STAGES + i) * TL_CH * KCHUNK;
#pragma unroll
            for (int c = 0; c < TL_CH; c++) {
                if (k0 + c * KCHUNK >= K) break; // chunks wholly past K are not issued
                uint4 a[MT][2], b[NT];
#pragma unroll
                for (int mi = 0; mi < MT; mi++)
#pragma unroll
                    for (int h = 0; h < 2; h++)
                        a[mi][h] = *reinterpret_cast<const uint4 *>(
                            xs + (c * C::BM + wm + 16 * mi + 8 * h + fg) * KCHUNK + 8 * fq);
#pragma unroll
                for (int j = 0; j < NT; j++)
                    b[j] = *reinterpret_cast<const uint4 *>(
                        ws + (c * C::BN + wn + 8 * j + fg) * KCHUNK + 8 * fq);
#pragma unroll
                for (int j = 0; j < NT; j++) mma_chunk<MT>(acc[j], a, b[j]);
            }
        }
        if (KS) { // segment s is done: parked for gemm_park_fold
            const size_t at = ((size_t)(col * gridDim.x + blockIdx.x) * S + s) * C::BM * C::BN;
            park_tile_frags(kpark + at, C::BN, M - m0, wm, wn, acc);
            zero_frags(acc);
            continue;
        }
        // Segments s0 .. s0 + KG - 1 are done: group 0 folds them in s order.
        if (g > 0 && s < S)
#pragma unroll
            for (int f = 0; f < FRAGS; f++)
                park[((size_t)(g - 1) * FRAGS + f) * C::GT + tid] =
                    acc[f / (MT * 4)][f / 4 % MT][f % 4];
        if (KG > 1) __syncthreads();
        if (g == 0) {
#pragma unroll
            for (int f = 0; f < FRAGS; f++) {
                float &v = tot[f / (MT * 4)][f / 4 % MT][f % 4];
                const float a0 = acc[f / (MT * 4)][f / 4 % MT][f % 4];
                v = s0 == 0 ? a0 : __fadd_rn(v, a0);
                for (int gg = 1; gg < KG && s0 + gg < S; gg++)
                    v = __fadd_rn(v, park[((size_t)(gg - 1) * FRAGS + f) * C::GT + tid]);
            }
        }
        zero_frags(acc);
        if (KG > 1) __syncthreads(); // the parked values are rewritten in the next round
    }
    if (KS || g != 0) return;
    store_frags<MT, NT>(y, out_f32, M, N, m0 + wm, n0 + wn,
                        [&](int i, int j, int e) { return tot[j][i][e]; });
}

constexpr int PF_THREADS = 256, PF_SLICES = 4; // gemm_park_fold: a block per quarter of a tile

// y from gemm_tiled's parked segment values (KS): block (r, b, q) takes quarter q of tile (r, b)
// (launch_tiled's grid), each thread 4 adjacent columns of one row, and folds that element's S
// segment values in s order (v = seg0; v = v + seg_s), as gemm_tiled's own fold does.
__global__ void __launch_bounds__(PF_THREADS)
    gemm_park_fold(const float *__restrict__ kpark, int M, int S, const split_group G,
                   int out_f32) {
    constexpr int BM = tiled_cfg<1>::BM, BN = tiled_cfg<1>::BN, TE = BM * BN;
    static_assert(TE == PF_SLICES * PF_THREADS * 4, "a slice is 4 values per thread");
    const uint16_t *__restrict__ w = G.w[0];
    void *y = G.y[0];
    int N = G.N[0], first_tile = 0;
    pick_product(G, (int)blockIdx.y, w, y, N, first_tile);
    const int e = 4 * (PF_THREADS * (int)blockIdx.z + (int)threadIdx.x), r = e / BN;
    const int m = BM * (int)blockIdx.x + r, n = BN * ((int)blockIdx.y - first_tile) + e % BN;
    pdl_allow_dependents();
    pdl_wait_primary();
    if (m >= M) return;
    const float *src = kpark + (size_t)(blockIdx.y * gridDim.x + blockIdx.x) * S * TE + e;
    float4 v = *reinterpret_cast<const float4 *>(src);
#pragma unroll 4
    for (int s = 1; s < S; s++) {
        const float4 a = *reinterpret_cast<const float4 *>(src + (size_t)s * TE);
        v = make_float4(__fadd_rn(v.x, a.x), __fadd_rn(v.y, a.y), __fadd_rn(v.z, a.z),
                        __fadd_rn(v.w, a.w));
    }
    const float out[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
    for (int i = 0; i < 4; i++)
        if (n + i < N) store_out(y, out_f32, N, m, n + i, out[i]);
}

// ---- gemm_band: all rows (9 to 32) of a band of 64 columns, x shared by the block's warps ----

constexpr int BAND_WARPS = 4;                      // a block's warps, 8·BAND_NT columns each
constexpr int BAND_NT = 2;                         // column tiles of 8 per warp
constexpr int BAND_BN = 8 * BAND_NT * BAND_WARPS;  // a band's columns
constexpr int BAND_CH = 4;                         // chunks per pipeline stage (128 k)
constexpr int BAND_SEG_STAGES = KSEG / (BAND_CH * KCHUNK); // stages per segment
constexpr int BAND_STAGES = 3;   // ring stages: BAND_STAGES - 1 in flight ahead of the one used

// A gemm_band block: 16·MT rows, its ring of BAND_STAGES stages, a stage being per chunk the
// 16·MT x rows then the BAND_BN w rows (tiled_copy's layout: conflict-free fragment reads).
template <int MT>
struct band_cfg {
    static constexpr int BM = 16 * MT, THREADS = 32 * BAND_WARPS;
    static constexpr int XT = BM * 4 < THREADS ? BM * 4 : THREADS; // threads copying x
    static constexpr int STAGE = BAND_CH * (BM + BAND_BN) * KCHUNK; // elements
    static constexpr size_t SMEM = (size_t)BAND_STAGES * STAGE * 2;
};

// Block b computes all rows (M <= 16·MT) of band b: BAND_BN columns of its product of the group
// (launch_band lays the products' bands end to end). The block streams x and w through its ring
// one stage of BAND_CH chunks at a time (the first stages' weights issued before
// pdl_wait_primary), all its warps on the same stage, so x is read once per block for BAND_BN
// columns (gemm_split's 16-column tiles read it once per 16); warp v computes columns
// 8·BAND_NT·v .. of every row: segment_mma's fragment values and order, read from shared memory,
// and the segments folded in s order in registers. Needs K % 8 == 0 and 16-byte aligned x and w.
template <int MT>
__global__ void __launch_bounds__(32 * BAND_WARPS)
    gemm_band(const uint16_t *__restrict__ x, int M, int K, const split_group G, int out_f32) {
    using C = band_cfg<MT>;
    constexpr int NT = BAND_NT;
    extern __shared__ __align__(16) uint16_t band_smem[];
    const int wn = 8 * NT * (threadIdx.x >> 5), fg = (threadIdx.x & 31) >> 2, fq = threadIdx.x & 3;
    const uint16_t *__restrict__ w = G.w[0];
    void *y = G.y[0];
    int N = G.N[0], first_tile = 0;
    const int band = column_block(G, blockIdx.x, gridDim.x);
    pick_product(G, band, w, y, N, first_tile);
    const int n0 = BAND_BN * (band - first_tile);
    const int U = (K + BAND_CH * KCHUNK - 1) / (BAND_CH * KCHUNK); // stages; segment u / SEG_STAGES
    const tiled_copy<C::BM, C::XT, BAND_CH> xc(x, M, K, 0, threadIdx.x % C::XT);
    const bool x_copier = threadIdx.x < C::XT;
    const tiled_copy<BAND_BN, C::THREADS, BAND_CH> wc(w, N, K, n0, threadIdx.x);
    uint16_t *ring = band_smem;
    pdl_allow_dependents();
    for (int u = 0; u < BAND_STAGES - 1; u++) {
        if (u < U) wc.issue(K, u, ring + u * C::STAGE + BAND_CH * C::BM * KCHUNK);
        cp_async_commit();
    }
    pdl_wait_primary();
    for (int u = 0; u < BAND_STAGES - 1; u++) {
        if (u < U && x_copier) xc.issue(K, u, ring + u * C::STAGE);
        cp_async_commit(); // empty groups keep the count: stage u has landed after the wait below
    }
    float acc[NT][MT][4], tot[NT][MT][4];
    zero_frags(acc);
    for (int u = 0; u < U; u++) {
        cp_async_wait<BAND_STAGES - 2>(); // stage u has landed (this thread's copies)
        __syncthreads();                  // everyone's; and stage u - 1 is no longer read
        const int un = u + BAND_STAGES - 1;
        if (un < U) {
            uint16_t *st = ring + (un % BAND_STAGES) * C::STAGE;
            if (x_copier) xc.issue(K, un, st);
            wc.issue(K, un, st + BAND_CH * C::BM * KCHUNK);
        }
        cp_async_commit();
        const uint16_t *xs = ring + (u % BAND_STAGES) * C::STAGE;
        const uint16_t *ws = xs + BAND_CH * C::BM * KCHUNK;
#pragma unroll
        for (int c = 0; c < BAND_CH; c++) {
            if ((u * BAND_CH + c) * KCHUNK >= K) break; // chunks wholly past K are not issued
            uint4 a[MT][2], b[NT];
#pragma unroll
            for (int i = 0; i < MT; i++)
#pragma unroll
                for (int h = 0; h < 2; h++)
                    a[i][h] = *reinterpret_cast<const uint4 *>(
                        xs + (c * C::BM + 16 * i + 8 * h + fg) * KCHUNK + 8 * fq);
#pragma unroll
            for (int j = 0; j < NT; j++)
                b[j] = *reinterpret_cast<const uint4 *>(
                    ws + (c * BAND_BN + wn + 8 * j + fg) * KCHUNK + 8 * fq);
#pragma unroll
            for (int j = 0; j < NT; j++) mma_chunk<MT>(acc[j], a, b[j]);
        }
        // The segment's last stage (or K's): fold it, s ascending.
        if (u % BAND_SEG_STAGES != BAND_SEG_STAGES - 1 && u != U - 1) continue;
        fold_frags(tot, acc, u / BAND_SEG_STAGES == 0); // segment u / BAND_SEG_STAGES
        zero_frags(acc);
    }
    store_frags<MT, NT>(y, out_f32, M, N, 0, n0 + wn,
                        [&](int i, int j, int e) { return tot[j][i][e]; });
}

constexpr int FOLD_WARPS_M = 2, FOLD_WARPS_N = 2; // a block of 2 × 2 warp tiles shares x and w in L1

template <int MT, int NT, int CH>
__global__ void __launch_bounds__(32 * FOLD_WARPS_M * FOLD_WARPS_N)
    gemm_fold(const uint16_t *__restrict__ x, int M, int K, const uint16_t *__restrict__ w, int N,
              void *__restrict__ y, int out_f32, int vec, int S) {
    const int warp = threadIdx.x >> 5;
    const int m0 = (blockIdx.y * FOLD_WARPS_M + warp / FOLD_WARPS_N) * 16 * MT;
    const int n0 = (blockIdx.x * FOLD_WARPS_N + warp % FOLD_WARPS_N) * 8 * NT;
    pdl_allow_dependents();
    pdl_wait_primary();
    float tot[MT][NT][4];
    for (int s = 0; s < S; s++) {
        float acc[MT][NT][4];
        uint4 b[CH][NT];
        load_w_batch<NT, CH>(w, N, K, n0, s * KSEG, vec, b);
        segment_mma<MT, NT, CH>(x, M, K, w, N, m0, n0, s * KSEG, vec, b, acc);
        fold_frags(tot, acc, s == 0);
    }
    store_frags<MT, NT>(y, out_f32, M, N, m0, n0,
                        [&](int i, int j, int e) { return tot[i][j][e]; });
}

// ---- gemm_wgmma: 128 × 128 tiles on the warpgroup MMA (sm_90a), the contract's order ----
//
// wgmma reads a k-step of a shared-memory operand as 16 consecutive logical k, and the contract's
// steps are k ≡ 0..3 and k ≡ 4..7 (mod 8) of a 32-k chunk. So the operands trade roles:
//   - the weights are A, from registers: each warp reads its 16 rows' fragments from a stage by
//     16-byte loads, lane q at chunk + 8q, as the mma.sync kernels do (step 0 the first 8 bytes,
//     step 1 the second);
//   - x is B, from shared memory: gemm_permute_x first rewrites it (x' [M][K], once per product)
//     with each chunk's k where the weights' registers put them: pair d (two bf16) of a permuted
//     chunk is pair 4q + 2·sub + hi of the natural one, d = 8·sub + 4·hi + q (sub: the step, hi
//     the fragment half, q the lane in its quad).
// Each wgmma k-step then sums the contract's 16 products, at other positions within the step than
// mma.sync's, which leaves the bits unchanged (bench/README.md: wgmma_bits, wgmma_rs_gemm); the
// segment's steps chain from +0 and the segments are folded in s order (the accumulators are
// drained at each segment's end). A block: 128 weight rows (two warpgroups of m64n128k16) × 128
// rows of x; stages of 64 k in a ring of WG_RING filled by cp.async WG_AHEAD ahead; one wgmma
// group in flight within a segment. Needs K % 256 == 0 and 16-byte aligned x and w; launched for
// whole column tiles only (launch_wgmma), rows past M are zero.

constexpr int WG_TILE = 128, WG_KT = 64, WG_THREADS = 256;
// Measured on the H200 (bench/README.md, fourth 2026-12-02 session): 6 stages, 4 ahead, 3-7 %
// slower here at 512-2048 rows (though 3-5 % faster in the standalone record wgmma_rs_gemm).
constexpr int WG_RING = 4, WG_AHEAD = 2;
constexpr int WG_OPERAND = WG_TILE * WG_KT * 2; // one operand's stage: 16 KB
constexpr int WG_STAGE = 2 * WG_OPERAND;        // x' then w
constexpr size_t WG_SMEM = (size_t)WG_RING * WG_STAGE;
static_assert(WG_AHEAD <= WG_RING - 2, "a refill must not hit the stage a wgmma group may read");
static_assert(KSEG % WG_KT == 0, "a segment is whole stages");

// x' [M][K] from x (K % 32 == 0): a thread per 32-k chunk.
__global__ void __launch_bounds__(256)
    gemm_permute_x(const uint16_t *__restrict__ x, uint16_t *__restrict__ xp, size_t chunks) {
    pdl_allow_dependents();
    pdl_wait_primary();
    const size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    if (i >= chunks) return;
    const uint4 *src = reinterpret_cast<const uint4 *>(x) + 4 * i;
    uint32_t in[16];
#pragma unroll
    for (int v = 0; v < 4; v++) {
        const uint4 u = src[v];
        in[4 * v] = u.x, in[4 * v + 1] = u.y, in[4 * v + 2] = u.z, in[4 * v + 3] = u.w;
    }
    uint4 *dst = reinterpret_cast<uint4 *>(xp) + 4 * i;
    auto pair = [&](int d) { return in[4 * (d & 3) + 2 * (d >> 3) + ((d >> 2) & 1)]; };
#pragma unroll
    for (int v = 0; v < 4; v++)
        dst[v] = make_uint4(pair(4 * v), pair(4 * v + 1), pair(4 * v + 2), pair(4 * v + 3));
}

#if defined(__CUDA_ARCH_FEAT_SM90_ALL) // the device code of gemm_wgmma (sm_90a)
// A stage's operands (rows of 64 k = 128 bytes; 16-byte piece p of row r): x' with the 128-byte
// swizzle wgmma reads (piece p at p ^ (r % 8)); w at p ^ 4·(r % 2), so a quarter-warp's fragment
// reads (rows g and g + 1, the same pieces) fall in distinct banks.
__device__ __forceinline__ int wg_x_piece(int r, int p) { return r * 128 + ((p ^ (r & 7)) << 4); }
__device__ __forceinline__ int wg_w_piece(int r, int p) {
    return r * 128 + ((p ^ ((r & 1) << 2)) << 4);
}

// The 64 k from k0 of rows row0 .. row0 + 127 of a [R][K] operand into its place of a stage (rows
// past R zero). Warp task T (4 a warp): row group T / 2, pieces 4·(T % 2) .. + 3; lane l takes row
// l % 8 of the group and piece l / 8 of the four.
template <bool X>
__device__ __forceinline__ void wg_load_stage(const uint16_t *__restrict__ a, int R, int K,
                                              int row0, int k0, unsigned char *dst) {
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
#pragma unroll
    for (int u = 0; u < 4; u++) {
        const int T = warp * 4 + u, p = 4 * (T & 1) + (lane >> 3), r = 8 * (T >> 1) + (lane & 7);
        const int row = row0 + r < R ? row0 + r : 0, bytes = row0 + r < R ? 16 : 0;
        const uint16_t *src = a + (size_t)row * K + k0 + 8 * p;
        if (X)
            cp_async16(dst + wg_x_piece(r, p), src, bytes);
        else
            cp_async16_stream(dst + wg_w_piece(r, p), src, bytes);
    }
}

// A shared-memory matrix descriptor of the 128-byte swizzle (K-major rows of 128 bytes, 8-row
// atoms 1024 bytes apart).
__device__ __forceinline__ uint64_t wg_desc_sw128(const void *p) {
    const uint64_t a = (uint32_t)__cvta_generic_to_shared(p);
    return ((a >> 4) & 0x3fff) | (1ull << 16) | ((uint64_t)(1024 >> 4) << 32) | (1ull << 62);
}

// d [64] = A (64 × 16, registers) · B (16 × 128, shared memory) + (accumulate ? d : +0).
__device__ __forceinline__ void wg_m64n128_rs(float d[64], uint4 lo, uint4 hi, int step,
                                              uint64_t db, int accumulate) {
    const uint32_t a0 = step ? lo.z : lo.x, a1 = step ? hi.z : hi.x;
    const uint32_t a2 = step ? lo.w : lo.y, a3 = step ? hi.w : hi.y;
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, %69, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 "
        "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
        "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "
        "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "
        "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, "
        "{%64, %65, %66, %67}, %68, p, 1, 1, 0;\n}\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]),
          "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]),
          "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]),
          "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]),
          "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),
          "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]),
          "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]),
          "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]),
          "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
          "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]),
          "+f"(d[62]), "+f"(d[63])
        : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "l"(db), "r"(accumulate));
}

// Keeps the compiler from moving or copying the accumulators across a wgmma group (a copy of a
// register a group in flight defines makes ptxas wait for the group).
__device__ __forceinline__ void wg_fence_acc(float d[64]) {
#pragma unroll
    for (int i = 0; i < 64; i++) asm volatile("" : "+f"(d[i])::"memory");
}
#endif

// Block (r, b): rows 128·r .. of x' and column tile b of group G (launch_wgmma; the row tiles of a
// column tile are adjacent blocks, so w comes from DRAM about once). The weights' first stages are
// issued before pdl_wait_primary (gemm_permute_x's x'); stage t: its copies waited for, a barrier,
// stage t + WG_AHEAD issued, the warps' fragments of its two chunks (rows wr, wr + 8), four
// k-steps in one group; at a segment's end the group is waited for and folded. With KS (a K
// split over blocks, gridDim.z = P per tile) block z computes the segments s ≡ z (mod P) and,
// instead of folding them, parks each one's values in gemm_tiled's park layout (64 × 64 tiles,
// S segments a tile, kpark), for gemm_park_fold.
template <bool KS>
__global__ void __launch_bounds__(WG_THREADS, 1)
    gemm_wgmma(const uint16_t *__restrict__ xp, int M, int K, const split_group G, int out_f32,
               float *__restrict__ kpark) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    extern __shared__ __align__(1024) unsigned char wg_smem[];
    const uint16_t *__restrict__ w = G.w[0];
    void *y = G.y[0];
    int N = G.N[0], first_tile = 0;
    const int col = column_block(G, blockIdx.y, gridDim.y);
    pick_product(G, col, w, y, N, first_tile);
    const int row0 = WG_TILE * (int)blockIdx.x, n0 = WG_TILE * (col - first_tile);
    const int lane = threadIdx.x & 31, q = lane & 3;
    const int wr = 16 * (threadIdx.x >> 5) + (lane >> 2); // the lane's weight rows wr, wr + 8
    // The block's segments p, p + P, ...; its stages u = 0, 1, ... (k0 of stage u: stage_k).
    constexpr int SEG_STAGES = KSEG / WG_KT;
    const int S = K / KSEG, P = KS ? (int)gridDim.z : 1, p = KS ? (int)blockIdx.z : 0;
    const int segs = (S - p + P - 1) / P, stages = segs * SEG_STAGES;
    auto stage_k = [&](int u) {
        return ((p + P * (u / SEG_STAGES)) * SEG_STAGES + u % SEG_STAGES) * WG_KT;
    };
    pdl_allow_dependents();
    for (int t = 0; t < WG_AHEAD && t < stages; t++)
        wg_load_stage<false>(w, N, K, n0, stage_k(t), wg_smem + t * WG_STAGE + WG_OPERAND);
    pdl_wait_primary();
    for (int t = 0; t < WG_AHEAD; t++) {
        if (t < stages) wg_load_stage<true>(xp, M, K, row0, stage_k(t), wg_smem + t * WG_STAGE);
        cp_async_commit(); // group t is stage t (and group 0 the first stages' weights)
    }
    float acc[64], total[64];
    for (int i = 0; i < segs; i++) {
        const int seg = p + P * i;
#pragma unroll
        for (int in_seg = 0; in_seg < SEG_STAGES; in_seg++) { // unrolled: no branch on the stage
            const int t = i * SEG_STAGES + in_seg, tn = t + WG_AHEAD;
            cp_async_wait<WG_AHEAD - 1>();
            asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
            __syncthreads(); // stage t landed for everyone; stage t - 2's group is done everywhere
            if (tn < stages) {
                unsigned char *st = wg_smem + (tn % WG_RING) * WG_STAGE;
                wg_load_stage<true>(xp, M, K, row0, stage_k(tn), st);
                wg_load_stage<false>(w, N, K, n0, stage_k(tn), st + WG_OPERAND);
            }
            cp_async_commit();
            const unsigned char *st = wg_smem + (t % WG_RING) * WG_STAGE;
            uint4 a[2][2]; // [chunk][rows wr, wr + 8]
#pragma unroll
            for (int c = 0; c < 2; c++)
#pragma unroll
                for (int h = 0; h < 2; h++)
                    a[c][h] = *reinterpret_cast<const uint4 *>(st + WG_OPERAND +
                                                               wg_w_piece(wr + 8 * h, 4 * c + q));
            wg_fence_acc(acc);
            asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
#pragma unroll
            for (int j = 0; j < WG_KT / 16; j++) // step j: chunk j / 2, its step j % 2
                wg_m64n128_rs(acc, a[j / 2][0], a[j / 2][1], j % 2, wg_desc_sw128(st + 32 * j),
                              in_seg != 0 || j != 0); // a segment's first step from +0
            asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
            wg_fence_acc(acc);
            if (in_seg < SEG_STAGES - 1) {
                asm volatile("wgmma.wait_group.sync.aligned 1;" ::: "memory");
            } else if (KS) { // the segment is complete: park it (64 × 64 tiles, gemm_park_fold)
                asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");
                // The lane's columns wr, wr + 8 lie in 64-column tile 2·col + wg; its rows
                // 8j + 2q (+1) in row tile row0 / 64 + j / 8.
                const size_t tile_step = (size_t)S * 4096;
                float *pk = kpark + ((size_t)(2 * col + (wr >> 6)) * ((M + 63) / 64) + row0 / 64) *
                                        tile_step + (size_t)seg * 4096 + 2 * q * 64 + (wr & 63);
#pragma unroll
                for (int j = 0; j < WG_TILE / 8; j++) {
                    float *r = pk + (j >> 3) * tile_step + ((8 * j) & 63) * 64;
                    const int m = row0 + 8 * j + 2 * q;
                    if (m < M) r[0] = acc[4 * j], r[8] = acc[4 * j + 2];
                    if (m + 1 < M) r[64] = acc[4 * j + 1], r[72] = acc[4 * j + 3];
                }
            } else { // the segment is complete: wait for it and fold it
                asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");
#pragma unroll
                for (int v = 0; v < 64; v++)
                    total[v] = i == 0 ? acc[v] : __fadd_rn(total[v], acc[v]);
            }
        }
    }
    // total[4j .. 4j + 3]: weight rows wr (0, 1) and wr + 8 (2, 3), x rows 8j + 2q and + 1.
    if constexpr (!KS) {
#pragma unroll
        for (int j = 0; j < WG_TILE / 8; j++)
#pragma unroll
            for (int e = 0; e < 4; e++) {
                const int m = row0 + 8 * j + 2 * q + (e & 1), n = n0 + wr + (e >= 2 ? 8 : 0);
                if (m < M && n < N) store_out(y, out_f32, N, m, n, total[4 * j + e]);
            }
    }
#else
    __trap(); // launched only where gemm_wgmma_probe found sm_90a code (cu_gemm_wgmma_setting)
#endif
}

// Writes 1 when this build's code for the device has gemm_wgmma (sm_90a), else 0.
__global__ void gemm_wgmma_probe(int *built) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    *built = 1;
#else
    *built = 0;
#endif
}

// The most shared memory a block may opt in to on the current device (read once).
int smem_optin(void) {
    static int bytes = -1;
    if (bytes < 0) {
        int d;
        CUDA_CHECK(cudaGetDevice(&d));
        CUDA_CHECK(cudaDeviceGetAttribute(&bytes, cudaDevAttrMaxSharedMemoryPerBlockOptin, d));
    }
    return bytes;
}

// The column tiles of `width` columns of the first n products of group G, laid end to end:
// G.tile_end filled (clamped to INT32_MAX), their count returned.
long long group_tiles(split_group &G, int n, int width) {
    long long tiles = 0;
    for (int p = 0; p < n; p++) {
        tiles += (G.N[p] + width - 1) / width;
        G.tile_end[p] = (int)(tiles < INT32_MAX ? tiles : INT32_MAX);
    }
    return tiles;
}

// Lets kernel k have `bytes` of dynamic shared memory (above 48 KB: an opt-in), once per flag.
template <typename F>
void allow_smem_once(F *k, int bytes, int &done) {
    if (done) return;
    CUDA_CHECK(cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes));
    done = 1;
}

// Launches gemm_tiled for group G (w, y, N and n set; the column tiles are filled here) when x
// and w allow 16-byte copies; false otherwise. P > 1: a K split over P blocks per tile (one K
// group), then gemm_park_fold.
template <int KG>
bool launch_tiled(cuda_ctx *c, const bf16 *x, int M, int K, split_group G, int out_f32, int vec,
                  int P) {
    using C = tiled_cfg<KG>;
    static int smem_set = 0, smem_set_ks = 0; // once per instantiation
    const long long tiles = group_tiles(G, G.n, C::BN);
    if (!vec || tiles > 65535 || C::SMEM > (size_t)smem_optin()) return false;
    const int row_tiles = (M + C::BM - 1) / C::BM, S = (K + KSEG - 1) / KSEG;
    const dim3 grid((unsigned)row_tiles, (unsigned)tiles, (unsigned)P);
    if (P == 1) {
        allow_smem_once(gemm_tiled<KG, false>, (int)C::SMEM, smem_set);
        launch_dependent(c, gemm_tiled<KG, false>, grid, C::THREADS, C::SMEM, x, M, K, G, out_f32,
                         (float *)nullptr);
        return true;
    }
    if constexpr (KG == 1) {
        float *park = static_cast<float *>(
            cuda_gemm_park(c, (size_t)tiles * row_tiles * S * C::BM * C::BN * sizeof(float)));
        allow_smem_once(gemm_tiled<1, true>, (int)C::SMEM, smem_set_ks);
        launch_dependent(c, gemm_tiled<1, true>, grid, C::THREADS, C::SMEM, x, M, K, G, out_f32,
                         park);
        launch_dependent(c, gemm_park_fold, dim3(grid.x, grid.y, PF_SLICES), PF_THREADS, 0,
                         (const float *)park, M, S, G, out_f32);
        return true;
    }
    return false;
}

// Tiles of 64 × 64 for M rows of N columns.
long long tiled_tiles(int M, long long N) {
    return (long long)((M + 63) / 64) * ((N + 63) / 64);
}

// Whether gemm_tiled is faster than gemm_split for M rows of N columns: past 32 rows always (for
// the products with fewer tiles than SMs through its K split over blocks, launch_tiled_any), from
// 17 for products wide enough to give every SM four tiles (the head, the Markov bias); below
// that gemm_split's K split within a block fills the device with less traffic than tiles.
// Measured on the H200 with ops perf (bench/README.md; 32 rows: lm_head 406 -> 250 us, gate_proj
// 33.7 vs 37.5; first 2026-12-02 session: q_proj, o_proj, down_proj and fc slower as split
// tiles at 24 and 32 rows, faster from 33: down_proj 42.0 -> 30.8 us at 33 rows, 60.5 -> 41.4 at
// 64, q_proj 21.0 -> 13.3 and 23.9 -> 16.4; decode: hedge1 at 4 requests, about 60 rows a
// verify, 970 -> 1102 tok/s).
bool tiled_over_split(const cuda_ctx *c, int M, int N) {
    return M > 32 || (M > 16 && tiled_tiles(M, N) >= 4LL * c->sm_count);
}

// Blocks per tile of gemm_tiled's K split over blocks for `tiles` tiles of S segments: as many as
// fill every SM with resident blocks once (the occupancy calculator's count for gemm_tiled<1,
// true>), at most half the segments (two a block at least); 1: no split. Measured on the H200
// (first 2026-12-02 session, ops perf at 64 rows, us for P = 2 / 4 / 8 / this rule): o_proj
// 38.9 / 20.9 / 16.6 / 16.6, down_proj 76.3 / 47.4 / 42.9 / 41.4, q_proj 23.3 / 20.5 / 16.4 /
// 16.4.
int tiled_parts(const cuda_ctx *c, long long tiles, int S) {
    using C = tiled_cfg<1>;
    static int per_sm = -1, smem_set = 0;
    if (per_sm < 0) { // the calculator counts 0 blocks until the kernel may have the memory
        allow_smem_once(gemm_tiled<1, true>, (int)C::SMEM, smem_set);
        CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, gemm_tiled<1, true>,
                                                                 C::THREADS, C::SMEM));
    }
    const long long fill = (long long)per_sm * c->sm_count / tiles, most = (S + 1) / 2;
    return (int)(fill < 1 ? 1 : fill < most ? fill : most);
}

// gemm_tiled for M rows of group G: one K group per block where the tiles give every SM two
// blocks (a block's smaller shared memory lets three share an SM); for one row tile (M <= 64) of
// fewer tiles than SMs a K split over blocks (tiled_parts, gemm_park_fold after it); otherwise
// two K groups per block (their K split doubles the warps). Measured on the H200 (bench/README.md;
// ops perf at 128 rows: q_proj 36.0 -> 20.6 us, down_proj 94.0 -> 67.2 with two groups; gate_proj
// (304 tiles) 59.4 -> 45.1 with one; at 512 rows one group is faster for every shape; the K split
// over blocks at 96-128 rows was slower than two groups for q_proj, o_proj, down_proj and fc:
// its parked values grow with the row tiles, first 2026-12-02 session).
bool launch_tiled_any(cuda_ctx *c, const bf16 *x, int M, int K, const split_group &G,
                      int out_f32, int vec) {
    long long tiles = 0;
    for (int p = 0; p < G.n; p++) tiles += tiled_tiles(M, G.N[p]);
    if (tiles >= 2LL * c->sm_count) return launch_tiled<1>(c, x, M, K, G, out_f32, vec, 1);
    const int S = (K + KSEG - 1) / KSEG;
    const int P = M <= 64 && tiles < c->sm_count ? tiled_parts(c, tiles, S) : 1;
    if (P > 1) return launch_tiled<1>(c, x, M, K, G, out_f32, vec, P);
    return launch_tiled<2>(c, x, M, K, G, out_f32, vec, 1);
}

// The most rows gemm_split takes (SG_CUDA_GEMM_SPLIT_MAX_M lowers it, 0 turns it off).
int split_max_m(void) {
    static const int max_m = cu_env_switch("SG_CUDA_GEMM_SPLIT_MAX_M", 32, 0, 32);
    return max_m;
}

// Forced warps per gemm_split block (SG_CUDA_GEMM_SPLIT_WARPS; 0 or unset: split_warps' model).
int split_forced_warps(void) {
    static const int w = cu_env_switch("SG_CUDA_GEMM_SPLIT_WARPS", 0, 0, SPLIT_MAX_WARPS);
    return w;
}

// Shared memory of a gemm_split block of W warps over V items: the parked segments (`park` bytes)
// and, for the one-row-tile blocks (split_ring), each warp's ring.
template <int MT, int NT>
size_t split_smem(size_t park, int W, int V) {
    const size_t ring = (size_t)W * split_ring_stages(V, W) * split_ring_stage<NT>() * 16;
    return park + (split_ring<MT, NT>() ? ring : 0);
}

// Warps per gemm_split block for `tiles` blocks over S segments. A warp streams ceil(S / W)
// segments after a first load's latency (worth about two segments), and a launch takes
// ceil(tiles / resident blocks) rounds of blocks, so W minimizes rounds · (2 + ceil(S / W))
// (ties: more warps), with resident blocks per SM from the occupancy calculator (registers and
// shared memory at W warps). At least SPLIT_MIN_WARPS (or S): the model favours 2 or 3 warps for
// the many-wave launches (gate/up, q/k/v, the head), which measured slower in a decode than 4-5
// (likely: a tile's rows requested in more, smaller pieces over time). Measured on the H200
// against fixed W and without the floor (bench/README.md). 0: no W's shared memory fits.
template <int MT, bool HALF, int NT, bool SW, bool WB2>
int split_warps(const cuda_ctx *c, int tiles, int S, size_t park) {
    if (split_forced_warps()) return split_forced_warps() < S ? split_forced_warps() : S;
    // Resident blocks per SM by warps (index W) for each shared-memory size asked for (one per K
    // in practice: a decode alternates a few), queried once each.
    constexpr int CACHED = 16;
    static int per_sm_of[CACHED][SPLIT_MAX_WARPS + 1];
    static size_t smem_of[CACHED];
    static int n_cached = 0, next_slot = 0;
    int at = 0;
    while (at < n_cached && smem_of[at] != park) at++;
    if (at == n_cached) {
        at = n_cached < CACHED ? n_cached++ : (next_slot++ % CACHED);
        smem_of[at] = park;
        for (int W = 1; W <= SPLIT_MAX_WARPS; W++) {
            const size_t smem = split_smem<MT, NT>(park, W, S);
            per_sm_of[at][W] = 0;
            if (smem <= (size_t)smem_optin())
                CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(
                    &per_sm_of[at][W], gemm_split<MT, HALF, NT, SW, WB2>, 32 * W, smem));
        }
    }
    const int *per_sm = per_sm_of[at];
    int best = 0;
    long long best_cost = -1;
    for (int W = S < SPLIT_MIN_WARPS ? 1 : SPLIT_MIN_WARPS; W <= SPLIT_MAX_WARPS && W <= S; W++) {
        if (per_sm[W] == 0) continue;
        const long long resident = (long long)per_sm[W] * c->sm_count;
        const long long cost = (tiles + resident - 1) / resident * (2 + (S + W - 1) / W);
        if (best_cost < 0 || cost <= best_cost) {
            best = W;
            best_cost = cost;
        }
    }
    return best;
}

// Column tiles per gemm_split block: one, except for the ring's blocks (split_ring) of a single
// product with fewer segments than split_warps' floor (short K: markov_w2, K = 256, one segment),
// which take as many tiles as give SPLIT_MIN_WARPS items, so a launch has a few blocks of several
// warps instead of many one-warp blocks. Measured on the H200 (bench/README.md, seventh
// 2026-12-01 session): ops perf markov_w2 M = 1 26.6 -> 23.3 us with 4 tiles (24.5 with 8, 25.5
// with 16), M = 8 unchanged; hedge3 at 4 requests 826 -> 838 tok/s (8 tiles).
// SG_CUDA_GEMM_SPLIT_TB forces a count (1: one tile per block).
template <int MT, int NT, bool SW>
int split_tiles_per_block(int n_products, int S) {
    static const int forced = cu_env_switch("SG_CUDA_GEMM_SPLIT_TB", 0, 0, 64);
    if (!split_ring<MT, NT>() || SW || n_products != 1) return 1;
    if (forced) return forced;
    return S < SPLIT_MIN_WARPS ? (SPLIT_MIN_WARPS + S - 1) / S : 1;
}

// launch_split's launch of gemm_split with WB2 weight register sets, over `tiles` column tiles
// (G's filled) of tb per block.
template <int MT, bool HALF, int NT, bool SW, bool WB2>
bool launch_split_sets(const cuda_ctx *c, const bf16 *x, int M, int K, const split_group &G,
                       int out_f32, int S, int tiles, int tb, size_t park) {
    static int smem_set = 0; // once per instantiation
    allow_smem_once(gemm_split<MT, HALF, NT, SW, WB2>, smem_optin(), smem_set);
    const int V = (SW ? 2 * S : S) * tb, blocks = (tiles + tb - 1) / tb;
    const int W = split_warps<MT, HALF, NT, SW, WB2>(c, blocks, V, park);
    const size_t smem = split_smem<MT, NT>(park, W, V);
    if (W == 0 || smem > (size_t)smem_optin()) return false;
    launch_dependent(c, gemm_split<MT, HALF, NT, SW, WB2>, dim3((unsigned)blocks), 32 * W, smem,
                     x, M, K, G, out_f32, S, tb);
    return true;
}

// Launches gemm_split for group G (w, y, N and n set; the column tiles are filled here) when x
// and w allow 16-byte loads and its shared memory fits; false otherwise. SW: G is gate and up of
// one N (gemm_swiglu), a tile covers both, its block has 2S items.
// Weight register sets (WB2; the second holds 64 registers a thread): 8-column tiles keep two for
// one row tile and give it up for the 32 × 8 tiles (long K, 17-32 rows) for more of x in flight,
// which their time is bound by (M = 32 down 33.4 -> 30.6 us). 16-column tiles keep two only where
// the launch has fewer tiles than the device has SMs or, for the 16 × 16 tile, K > 4096 (more
// than 16 segments a tile): with a tile per SM and more, two sets (222-254 registers, two blocks of 4 warps per SM) leave a launch short
// of warps rather than of weights in flight, and short-K warps have too few items for the second
// set to overlap much. Measured on the H200 (fifteenth 2026-12-01 session, bench/README.md): ops
// perf at 32 rows o_proj 16.4 -> 12.7 us, q_proj 12.8 -> 11.6; at 15 rows o_proj 10.6 -> 10.2,
// q_proj 9.2 -> 9.5, down_proj with one set 22.2 -> 23.8 (why long K keeps two); k_proj alone
// (64 tiles) with one set 5.9 -> 8.1; decode (bench, three alternating pairs, tok/s) spec at 4
// requests 1432.6 -> 1477.8, hedge1 at 1 649.5 -> 662.3, hedge3 at 1 536.2 -> 557.1.
template <int MT, bool HALF, int NT, bool SW>
bool launch_split(const cuda_ctx *c, const bf16 *x, int M, int K, split_group G, int out_f32,
                  int vec, int S) {
    const int tb = split_tiles_per_block<MT, NT, SW>(G.n, S);
    const size_t park = (size_t)(SW ? 2 * S : S) * tb * 16 * MT * 8 * NT * sizeof(float);
    if (!vec || M > split_max_m() || park > (size_t)smem_optin()) return false;
    const int tiles = (int)group_tiles(G, SW ? 1 : G.n, 8 * NT);
    if constexpr (NT == 1) { // 8 columns: two sets for one row tile, one for taller tiles
        return launch_split_sets<MT, HALF, NT, SW, MT == 1>(c, x, M, K, G, out_f32, S, tiles, tb,
                                                             park);
    } else {
        if (tiles >= c->sm_count && (MT == 2 || S <= 16))
            return launch_split_sets<MT, HALF, NT, SW, false>(c, x, M, K, G, out_f32, S, tiles, tb,
                                                              park);
        return launch_split_sets<MT, HALF, NT, SW, true>(c, x, M, K, G, out_f32, S, tiles, tb,
                                                         park);
    }
}

// gemm_split for the group at its M, up to 32 rows (false: M or the alignment does not suit it;
// past 32 rows gemm_tiled takes every product, tiled_over_split). From 9 rows a block takes 16
// columns, so x's loads, which grow with M, serve twice the weights, unless the parked segments
// would take more than 32 KB of shared memory per block (17-32 rows, long K: fewer resident
// blocks cost more than x's loads save); at 17-32 rows 16-row tiles were slower (q_proj M = 32
// 12.9 -> 16.3). All limits measured on the H200 per Qwen3-4B shape (bench/README.md).
// SW (gemm_swiglu): up to 16 rows only; past that its block's 2S parked segments would force
// 8-column tiles at 17-32 rows (measured: spec at 4 requests 1 % slower than gemm_group + the
// SwiGLU kernel).
template <bool SW>
bool launch_split_any(const cuda_ctx *c, const bf16 *x, int M, int K, const split_group &G,
                      int out_f32, int vec, int S) {
    if (M <= 8) return launch_split<1, true, 1, SW>(c, x, M, K, G, out_f32, vec, S);
    if (M <= 16) return launch_split<1, false, 2, SW>(c, x, M, K, G, out_f32, vec, S);
    if (SW) return false;
    if (M > 32) return false;
    return (size_t)S * 32 * 16 * sizeof(float) <= (32 << 10)
               ? launch_split<2, false, 2, false>(c, x, M, K, G, out_f32, vec, S)
               : launch_split<2, false, 1, false>(c, x, M, K, G, out_f32, vec, S);
}

// Launches gemm_band for group G (w, y, N and n set; the bands are filled here) when x and w allow
// 16-byte copies; false otherwise.
template <int MT>
bool launch_band(const cuda_ctx *c, const bf16 *x, int M, int K, split_group G, int out_f32,
                 int vec) {
    using C = band_cfg<MT>;
    static int smem_set = 0; // once per instantiation
    const long long bands = group_tiles(G, G.n, BAND_BN);
    if (!vec || bands > INT32_MAX || C::SMEM > (size_t)smem_optin()) return false;
    allow_smem_once(gemm_band<MT>, (int)C::SMEM, smem_set);
    launch_dependent(c, gemm_band<MT>, dim3((unsigned)bands), C::THREADS, C::SMEM, x, M, K, G,
                     out_f32);
    return true;
}

// Whether gemm_band takes M rows of a group of `cols` columns: 9 to 32 rows of products wide
// enough for a band per SM. Measured on the H200 (bench/README.md, 2026-12-01, fifth session):
// ops perf at 32 rows gate_proj 33.4 -> 27.2 us, lm_head 252 -> 228, markov_w2 42.9 -> 39.5; at
// 16 rows lm_head 263 -> 213, gate_proj 23.1 -> 21.4; narrower products were slower even with K
// split over block clusters (q_proj at 32 rows 12.9 -> 16.5, down_proj 30.7 -> 37.5), and so were
// 64-row bands (lm_head 281 -> 333). The context's gemm_band (SG_CUDA_GEMM_BAND: 0 off, 2 every
// product: a test switch) changes it.
bool band_over_split(const cuda_ctx *c, int M, long long cols) {
    if (c->gemm_band == 0 || M < 9 || M > 32) return false;
    return c->gemm_band == 2 || (cols + BAND_BN - 1) / BAND_BN >= c->sm_count;
}

// gemm_band for the group where band_over_split says so (false: not, or x and w unaligned).
bool launch_band_any(const cuda_ctx *c, const bf16 *x, int M, int K, const split_group &G,
                     int out_f32, int vec) {
    long long cols = 0;
    for (int p = 0; p < G.n; p++) cols += G.N[p];
    if (!band_over_split(c, M, cols)) return false;
    if (M <= 16) return launch_band<1>(c, x, M, K, G, out_f32, vec);
    return launch_band<2>(c, x, M, K, G, out_f32, vec);
}

// Whether gemm_wgmma takes M rows of `tiles` 128 × 128 tiles (context setting 1; 2: every
// product it can take): past 64 rows, where the tiles give at least half the SMs one. Measured on
// the H200 (bench/README.md, fourth 2026-12-02 session).
bool wgmma_over_tiled(const cuda_ctx *c, int M, long long tiles) {
    return c->gemm_wgmma == 2 || (M > 64 && 2 * tiles >= c->sm_count);
}

// Blocks per tile of gemm_wgmma's K split for M rows of `tiles` 128 × 128 tiles (row tiles
// included) of S segments (context setting 1, SG_CUDA_GEMM_WGMMA_KS not 0): past 64 rows, for
// products of at least 16 segments (K >= 4096) or of at most an eighth as many tiles as SMs, as
// many as fill the SMs once, at most half the segments; 1: no split. Its parked values move
// 2 · 4 · M · N · S bytes, M / 64 times the weights' bytes, so it pays only where one block a
// tile leaves most SMs idle for long. Measured on the H200 (c42, fifth 2026-12-02 session, ops
// perf, us without / with): down_proj 128 rows 67.2 / 60.6, 256 rows 135.2 / 100.3; o_proj 256
// rows 58.5 / 48.2; fc 256 rows 175.7 / 132.8; k_proj 128 rows (8 tiles) 19.2 / 14.6; but
// q_proj 128 rows (32 tiles, 10 segments) 20.6 / 24.8 and k_proj 512 rows 19.8 / 27.9.
int wgmma_parts(const cuda_ctx *c, int M, long long tiles, int S) {
    static const int on = cu_env_switch("SG_CUDA_GEMM_WGMMA_KS", 1, 0, 1);
    if (!on || c->gemm_wgmma != 1 || M <= 64 || (S < 16 && 8 * tiles > c->sm_count)) return 1;
    const long long fill = c->sm_count / tiles, most = (S + 1) / 2;
    return (int)(fill < 1 ? 1 : fill < most ? fill : most);
}

// Launches gemm_permute_x and gemm_wgmma for group G (w, y, N and n set; the column tiles are
// filled here) where the context allows it and the shape suits it (K % 256 == 0, every N a
// multiple of 128, x and w 16-byte aligned); false otherwise. With a K split (wgmma_parts), then
// gemm_park_fold. Whole column tiles only: every Qwen3-4B product has them, and no bring-up case
// has K % 256 == 0 with a partial one, so gemm_wgmma's column edge would run untested.
bool launch_wgmma(cuda_ctx *c, const bf16 *x, int M, int K, split_group G, int out_f32, int vec) {
    static int smem_set = 0, smem_set_ks = 0;
    if (c->gemm_wgmma == 0 || !vec || K % KSEG != 0 || WG_SMEM > (size_t)smem_optin())
        return false;
    for (int p = 0; p < G.n; p++)
        if (G.N[p] % WG_TILE != 0) return false;
    const long long tiles = group_tiles(G, G.n, WG_TILE), row_tiles = (M + WG_TILE - 1) / WG_TILE;
    if (tiles > 65535) return false;
    const int S = K / KSEG, P = wgmma_parts(c, M, tiles * row_tiles, S);
    if (P == 1 && !wgmma_over_tiled(c, M, tiles * row_tiles)) return false;
    uint16_t *xp = static_cast<uint16_t *>(cuda_gemm_xperm(c, (size_t)M * K * sizeof(uint16_t)));
    const size_t chunks = (size_t)M * K / 32;
    launch_dependent(c, gemm_permute_x, dim3((unsigned)((chunks + 255) / 256)), 256, 0, x, xp,
                     chunks);
    const dim3 grid((unsigned)row_tiles, (unsigned)tiles, (unsigned)P);
    if (P == 1) {
        allow_smem_once(gemm_wgmma<false>, (int)WG_SMEM, smem_set);
        launch_dependent(c, gemm_wgmma<false>, grid, WG_THREADS, WG_SMEM, (const uint16_t *)xp,
                         M, K, G, out_f32, (float *)nullptr);
        return true;
    }
    // The park and its fold in gemm_tiled's 64 × 64 tiles: two a column tile, two a row tile.
    const int row_tiles64 = (M + 63) / 64;
    float *park = static_cast<float *>(
        cuda_gemm_park(c, (size_t)2 * tiles * row_tiles64 * S * 64 * 64 * sizeof(float)));
    allow_smem_once(gemm_wgmma<true>, (int)WG_SMEM, smem_set_ks);
    launch_dependent(c, gemm_wgmma<true>, grid, WG_THREADS, WG_SMEM, (const uint16_t *)xp, M, K,
                     G, out_f32, park);
    group_tiles(G, G.n, 64);
    launch_dependent(c, gemm_park_fold, dim3((unsigned)row_tiles64, (unsigned)(2 * tiles),
                                             PF_SLICES),
                     PF_THREADS, 0, (const float *)park, M, S, G, out_f32);
    return true;
}

template <int MT, int NT, int CH>
void launch_fold(const cuda_ctx *c, const bf16 *x, int M, int K, const bf16 *w, int N, void *y,
                 int out_f32, int vec, int S) {
    const int BM = 16 * MT * FOLD_WARPS_M, BN = 8 * NT * FOLD_WARPS_N;
    dim3 grid((unsigned)((N + BN - 1) / BN), (unsigned)((M + BM - 1) / BM));
    launch_dependent(c, gemm_fold<MT, NT, CH>, grid, 32 * FOLD_WARPS_M * FOLD_WARPS_N, 0, x, M, K,
                     w, N, y, out_f32, vec, S);
}

} // namespace

void cu_gemm_from_end(cuda_ctx *c, const bf16 *x, int M, int K, const bf16 *w, int N, void *y,
                      int out_f32, int from_end) {
    SG_CHECK(M >= 1 && K >= 1 && N >= 1, "gemm shape M %d K %d N %d", M, K, N);
    SG_CHECK((M + 15) / 16 <= 65535, "gemm M %d beyond the grid", M);
    const int vec = K % 8 == 0 && (uintptr_t)x % 16 == 0 && (uintptr_t)w % 16 == 0;
    const int S = (K + KSEG - 1) / KSEG;
    // Every path computes identical bits (see the top of this file); the choice is speed.
    // Many rows on sm_90a: the warpgroup MMA. Few rows: each weight is loaded once, straight into
    // registers, split over K.
    const split_group G = {{w}, {y}, {N}, {0}, 1, from_end};
    if (launch_wgmma(c, x, M, K, G, out_f32, vec)) return;
    if (launch_band_any(c, x, M, K, G, out_f32, vec)) return;
    if (!tiled_over_split(c, M, N) && launch_split_any<false>(c, x, M, K, G, out_f32, vec, S))
        return;
    // More rows: x and w staged in shared memory by block tiles.
    if (launch_tiled_any(c, x, M, K, G, out_f32, vec)) return;
    // Unaligned x or w, or K % 8 != 0.
    launch_fold<4, 2, 1>(c, x, M, K, w, N, y, out_f32, vec, S);
}

void cu_gemm(void *ctx, const bf16 *x, int M, int K, const bf16 *w, int N, void *y, int out_f32) {
    cuda_ctx *c = static_cast<cuda_ctx *>(ctx);
    cu_gemm_from_end(c, x, M, K, w, N, y, out_f32, c->gemm_from_end);
}

void cu_gemm_group(void *ctx, const bf16 *x, int M, int K, int n, const bf16 *const *w,
                   const int *N, bf16 *const *y) {
    cuda_ctx *c = static_cast<cuda_ctx *>(ctx);
    SG_CHECK(n >= 1 && n <= BE_GEMM_GROUP_MAX, "gemm group of %d products", n);
    SG_CHECK(M >= 1 && K >= 1, "gemm group shape M %d K %d", M, K);
    split_group G = {};
    int vec = K % 8 == 0 && (uintptr_t)x % 16 == 0;
    for (int p = 0; p < n; p++) {
        SG_CHECK(N[p] >= 1, "gemm group product %d: N %d", p, N[p]);
        vec = vec && (uintptr_t)w[p] % 16 == 0;
        G.w[p] = w[p];
        G.y[p] = y[p];
        G.N[p] = N[p];
    }
    G.n = n;
    G.from_end = c->gemm_from_end;
    // One launch of gemm_wgmma, gemm_band, gemm_split or gemm_tiled as cu_gemm would choose;
    // otherwise (unaligned) the products one by one (the same bits either way: every kernel
    // computes the order at the top of this file).
    if (launch_wgmma(c, x, M, K, G, 0, vec)) return;
    if (launch_band_any(c, x, M, K, G, 0, vec)) return;
    bool tiled = false;
    for (int p = 0; p < n; p++) tiled = tiled || tiled_over_split(c, M, N[p]);
    if (!tiled && launch_split_any<false>(c, x, M, K, G, 0, vec, (K + KSEG - 1) / KSEG)) return;
    if (launch_tiled_any(c, x, M, K, G, 0, vec)) return;
    for (int p = 0; p < n; p++) cu_gemm(ctx, x, M, K, w[p], N[p], y[p], 0);
}

void cu_gemm_swiglu(void *ctx, const bf16 *x, int M, int K, const bf16 *w_gate, const bf16 *w_up,
                    int N, bf16 *out) {
    cuda_ctx *c = static_cast<cuda_ctx *>(ctx);
    SG_CHECK(M >= 1 && K >= 1 && N >= 1, "gemm_swiglu shape M %d K %d N %d", M, K, N);
    const int vec = K % 8 == 0 && (uintptr_t)x % 16 == 0 && (uintptr_t)w_gate % 16 == 0 &&
                    (uintptr_t)w_up % 16 == 0;
    // One launch where gemm_split suits the shape and gemm_band does not take it (the SwiGLU in
    // gemm_split's fold); otherwise the two products into scratch, then the SwiGLU kernel: the
    // same bits either way.
    const split_group G = {{w_gate, w_up}, {out, nullptr}, {N, N}, {0}, 2, c->gemm_from_end};
    if (!band_over_split(c, M, 2LL * N) &&
        launch_split_any<true>(c, x, M, K, G, 0, vec, (K + KSEG - 1) / KSEG))
        return;
    const size_t n = (size_t)M * N;
    bf16 *gate = static_cast<bf16 *>(cuda_scratch(c, 2 * n * sizeof(bf16))), *up = gate + n;
    const bf16 *const w[] = {w_gate, w_up};
    const int Ns[] = {N, N};
    bf16 *const y[] = {gate, up};
    cu_gemm_group(ctx, x, M, K, 2, w, Ns, y);
    cu_swiglu(ctx, gate, up, n, out);
}

// A new context's gemm_band: SG_CUDA_GEMM_BAND (0, 1 or 2; band_over_split), 1 when unset.
int cu_gemm_band_setting(void) { return cu_env_switch("SG_CUDA_GEMM_BAND", 1, 0, 2); }

// A new context's gemm_from_end: SG_CUDA_GEMM_FROM_END (1: every product's column tiles from the
// last one down, a test switch: the same bits), 0 when unset.
int cu_gemm_from_end_setting(void) { return cu_env_switch("SG_CUDA_GEMM_FROM_END", 0, 0, 1); }

// A new context's gemm_wgmma: SG_CUDA_GEMM_WGMMA (0 off, 1 where faster, 2 every product it can
// take: a test switch), 1 when unset; 0 where the library's code for the device has no gemm_wgmma
// (built without sm_90a, CMAKE_CUDA_ARCHITECTURES, or another GPU).
int cu_gemm_wgmma_setting(void) {
    const int setting = cu_env_switch("SG_CUDA_GEMM_WGMMA", 1, 0, 2);
    if (setting == 0) return 0;
    int *d, built = 0;
    CUDA_CHECK(cudaMalloc(&d, sizeof built));
    gemm_wgmma_probe<<<1, 1>>>(d);
    CUDA_CHECK(cudaGetLastError());
    CUDA_CHECK(cudaMemcpy(&built, d, sizeof built, cudaMemcpyDeviceToHost));
    CUDA_CHECK(cudaFree(d));
    return built ? setting : 0;
}
