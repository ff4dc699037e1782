// gpu/attention.cu: paged attention (backend.h), with the CPU twin's order.
//
// Attention: one block per query row and `teams` query heads of one KV head (att_teams: 1 to 4,
// by the rows), a team of ATT_THREADS threads per head, the teams sharing the block's K and V
// tiles (each tile is read once for the block's heads). Per head, in fp32, exactly cpu_backend.c's
// sequence:
//   s[j] = (Σ_d q[d]·k[j][d], d ascending, one thread per key) · scale,
//   mx = max_j s[j] (exact in any order),
//   sum = Σ_j expf(s[j] − mx), j ascending, in one thread,
//   p[j] = expf(s[j] − mx) / sum (IEEE division),
//   out[d] = bf16(Σ_j p[j]·v[j][d]), j ascending, one thread per d (a thread owns two).
// Keys and values are visited in tiles of ATT_TILE positions staged in shared memory by
// asynchronous copies (a tile's all in flight at once), through two buffers: the next tile's
// copies are in flight while one is used, so a row pays about one memory round trip per tile and
// pass. The scores of the first `stored` keys (att_stored: by default at most ATT_STORED_KEYS and
// the sequence span, and in launches of many blocks as many as leave room for two blocks on an
// SM) stay in shared memory from the first pass to the last, so K is read once and V once; past
// that a key's score is recomputed from its K tile in the later passes (the same arithmetic gives
// the same bits), so no scratch sized by the context length is needed. Every number depends only
// on the row's own query, its sequence's K/V at positions 0 .. n_keys-1 and the head geometry: the
// same for a row alone, in a prefill chunk, a decode, a verify span or a chain span (path
// invariance, design.md §3). expf is glibc's (device_numerics.h d_expf), so the output equals the
// CPU twin's bit for bit. A missing page traps.
// Launched as a programmatic dependent (pdl.h) of the kernel before it (qk_norm_rope_store, which
// writes q and the new K/V): before pdl_wait_primary it reads only host uploads (row_table, n_keys,
// the page tables; no kernel writes them) to look up the first tile's pool offsets. It lets its own
// dependent (the o projection) start once its first K tile has landed, so the GEMM's blocks
// request their first weights while the latency-bound passes run on the few SMs attention takes
// at a few rows (its own first loads go first). Measured on the H200 (bench/README.md, seventh
// 2026-12-01 session): the o projection's early start took plain decode at 1 request from 329.8
// to 341-347 tok/s and at 4 requests from 1127 to 1170-1191 (with the GEMMs of 2026-11-30 it had
// measured slower: 303.6 against 309.6); the lookups before the wait 334.5 / 337.5 -> 336.7 /
// 341.9 and 1161 / 1174 -> 1174 / 1194.
#include <stdlib.h>

#include "async_copy.h"
#include "cuda_internal.h"
#include "device_numerics.h"
#include "kv_paging.h"
#include "pdl.h"

namespace {

constexpr int ATT_THREADS = 128; // a head's team
constexpr int ATT_MAX_TEAMS = 4;  // heads per block
constexpr int ATT_WIDE_ROWS = 32; // from this many rows, ATT_MAX_TEAMS heads per block (att_teams)
constexpr int ATT_TILE = 128; // keys per tile: one per team thread in the score passes
constexpr int ATT_MAX_HD = 256;
constexpr int ATT_STORED_KEYS = 8192; // the most scores kept per row by default (32 KB a team)
// Tile buffers: ATT_BUFS - 1 loads in flight while one tile is used. Measured on the H200
// (bench/README.md, 2026-12-01): 3 buffers cost a block per SM where many rows attend (spec at 4
// requests 1211 -> 1048 tok/s).
constexpr int ATT_BUFS = 2;

// Elements per staged key row: head_dim and a pad that spreads the rows over the banks (thread j
// reads row j). A head_dim of whole 16-byte pieces is staged and read 16 bytes at a time (row
// stride 16 bytes past the row: the 8 threads of a 128-bit access phase hit distinct banks);
// another even head_dim 4 bytes at a time (row stride 4 bytes past the row: an odd word count).
// Value tiles use the same stride (thread d reads element d of one row: no conflicts either way).
__host__ __device__ __forceinline__ int att_stride(int hd) {
    return hd % 8 == 0 ? hd + 8 : hd + 2;
}

// Dynamic shared memory: ATT_BUFS tile buffers [ATT_TILE][att_stride(hd)] bf16, then per team
// qs [hd], the stored scores sc [stored] and one tile's recomputed ones pt [ATT_TILE], fp32.
__host__ __device__ __forceinline__ size_t att_team_floats(int hd, int stored) {
    return (size_t)hd + stored + ATT_TILE;
}
size_t attention_smem(int hd, int stored, int teams) {
    return (size_t)ATT_BUFS * ATT_TILE * att_stride(hd) * 2 +
           (size_t)teams * att_team_floats(hd, stored) * 4;
}

// Heads per block: the largest divisor of the query heads per KV head (group) up to `setting`
// (SG_CUDA_ATT_TEAMS) or, where that is 0, up to 2 below ATT_WIDE_ROWS rows and ATT_MAX_TEAMS from
// there. Measured on the H200 (bench/README.md, 2026-12-01, third session; teams 1 / 2 / 4): 4
// heads per block make fewer, longer blocks, which pays where many rows fill the GPU (spec at 16
// requests 2093 / 2178 / 2468 tok/s) and loses where few rows or rows of very different lengths
// leave SMs idle (plain at 4 requests 1067 / 1073 / 1003; ops perf, 24 rows of 1 .. 1600 keys:
// 157.6 / 106.0 / 173.6 us); 2 was never slower than 1.
int att_teams(int group, int rows, int setting) {
    int teams = setting > 0 ? setting : rows >= ATT_WIDE_ROWS ? ATT_MAX_TEAMS : 2;
    while (group % teams != 0) teams--;
    return teams;
}

// Copies the rows at pool offsets rowoff[0 .. cnt) of one head (hd elements each) into tile
// [ATT_TILE][att_stride(hd)], 16 bytes a piece (vec: head_dim % 8 == 0 and 16-byte aligned pools)
// or 4, consecutive threads of the block taking consecutive pieces of a row; committed as one
// group.
__device__ __forceinline__ void copy_tile(const uint16_t *pool, int hd, bool vec, int cnt,
                                          const size_t *rowoff, uint16_t *tile) {
    const int stride = att_stride(hd), E = vec ? 8 : 2, pieces = hd / E, n = cnt * pieces;
    for (int e = threadIdx.x; e < n; e += blockDim.x) {
        const int r = e / pieces, d = E * (e % pieces);
        if (vec)
            cp_async16(tile + r * stride + d, pool + rowoff[r] + d, 16);
        else
            cp_async4(tile + r * stride + d, pool + rowoff[r] + d);
    }
    cp_async_commit();
}

// Score of key row kr of the staged tile: (q · k) · scale, d ascending (16-byte reads when
// head_dim % 8 == 0).
__device__ __forceinline__ float score(const float *qs, const uint16_t *kr, int hd, float scale) {
    float dot = 0.f;
    if (hd % 8 == 0) {
#pragma unroll 2 // the shared-memory reads of 16 steps in flight ahead of the chain
        for (int d = 0; d < hd; d += 8) {
            const uint4 p = *reinterpret_cast<const uint4 *>(kr + d);
            const uint32_t w4[4] = {p.x, p.y, p.z, p.w};
#pragma unroll
            for (int j = 0; j < 8; j++)
                dot = d_mac(dot, qs[d + j], d_bf16_to_f32((uint16_t)(w4[j / 2] >> (16 * (j % 2)))));
        }
    } else {
#pragma unroll 8 // the shared-memory reads of 8 steps in flight ahead of the chain
        for (int d = 0; d < hd; d++) dot = d_mac(dot, qs[d], d_bf16_to_f32(kr[d]));
    }
    return __fmul_rn(dot, scale);
}

// The row's loads, in order (T tiles, the first Tc with stored scores, R = T - Tc without):
// pass 1 the K tiles 0 .. T-1; pass 2 the K tiles Tc .. T-1 (their exponentials recomputed);
// pass 3 per tile t the V tile, preceded by the K tile when t >= Tc (its probabilities recomputed).
struct att_load {
    int tile;
    bool v;
};
__device__ __forceinline__ att_load load_of(int u, int T, int Tc) {
    const int R = T - Tc;
    if (u < T) return {u, false};
    u -= T;
    if (u < R) return {Tc + u, false};
    u -= R;
    if (u < Tc) return {u, true};
    u -= Tc;
    return {Tc + u / 2, (u & 1) != 0};
}

__global__ void __launch_bounds__(ATT_THREADS * ATT_MAX_TEAMS)
    attention_k(be_paging pg, const uint16_t *__restrict__ k_pages,
                const uint16_t *__restrict__ v_pages, const int32_t *__restrict__ row_table,
                const int32_t *__restrict__ n_keys, const uint16_t *__restrict__ q, int n_heads,
                float scale, int stored, uint16_t *__restrict__ out) {
    extern __shared__ __align__(16) unsigned char att_smem[];
    const int hd = pg.head_dim, stride = att_stride(hd);
    uint16_t *tiles = reinterpret_cast<uint16_t *>(att_smem); // [ATT_BUFS][ATT_TILE][stride]
    const int team = threadIdx.x / ATT_THREADS, t = threadIdx.x % ATT_THREADS;
    float *qs = reinterpret_cast<float *>(att_smem + (size_t)ATT_BUFS * ATT_TILE * stride * 2) +
                team * att_team_floats(hd, stored);
    float *sc = qs + hd;      // [stored]: scores, then exponentials, then probabilities
    float *pt = sc + stored;  // [ATT_TILE]: one recomputed tile's
    __shared__ float red[ATT_MAX_TEAMS][ATT_THREADS / 32];
    __shared__ size_t rowoff[ATT_BUFS][ATT_TILE];
    __shared__ float mx_sh[ATT_MAX_TEAMS], sum_sh[ATT_MAX_TEAMS];

    const int h = blockIdx.x * (blockDim.x / ATT_THREADS) + team, i = blockIdx.y;
    const int group = n_heads / pg.n_kv_heads; // the block's heads share h / group
    const size_t off = (size_t)(h / group) * hd;
    const size_t qd = (size_t)n_heads * hd;
    const int s = row_table[i], nk = n_keys[i];
    if (nk < 1) __trap();
    const bool vec = hd % 8 == 0 && ((uintptr_t)k_pages | (uintptr_t)v_pages) % 16 == 0;
    const int T = (nk + ATT_TILE - 1) / ATT_TILE, Tc = min(T, stored / ATT_TILE);
    const int R = T - Tc, n_stored = min(nk, Tc * ATT_TILE), n_loads = 2 * T + 2 * R;
    // Load u into buffer u % ATT_BUFS: its rows' pool offsets looked up, then the copies issued
    // (past the last load an empty group, so a wait counts loads). The barrier publishes the
    // offsets and retires load u - ATT_BUFS, the buffer's last use.
    auto issue = [&](int u) {
        if (u >= n_loads) {
            cp_async_commit();
            return;
        }
        const att_load l = load_of(u, T, Tc);
        const int j0 = l.tile * ATT_TILE, cnt = min(ATT_TILE, nk - j0);
        size_t *ro = rowoff[u % ATT_BUFS];
        if (threadIdx.x < cnt) ro[threadIdx.x] = kv_row(pg, s, j0 + threadIdx.x) + off;
        __syncthreads();
        copy_tile(l.v ? v_pages : k_pages, hd, vec, cnt, ro,
                  tiles + (size_t)(u % ATT_BUFS) * ATT_TILE * stride);
    };
    // Load 0 (K tile 0) has its offsets looked up before the wait for the kernel before (the page
    // tables, row_table and n_keys are the host's uploads), its copies issued after it.
    static_assert(ATT_BUFS == 2, "one load ahead: load 0 before the loop");
    const int cnt0 = min(ATT_TILE, nk);
    if (threadIdx.x < cnt0) rowoff[0][threadIdx.x] = kv_row(pg, s, threadIdx.x) + off;
    pdl_wait_primary();
    // The query's loads are issued first; the first tile's copies follow the barrier that publishes
    // qs, so they start after the query has landed (copies issued first measured no faster at one
    // row: bench/README.md, tenth and thirteenth 2026-12-01 sessions).
    static_assert(2 * ATT_THREADS >= ATT_MAX_HD, "two query elements per thread");
    const uint16_t *qh = q + (size_t)i * qd + (size_t)h * hd;
    const uint16_t q0 = t < hd ? qh[t] : 0, q1 = t + ATT_THREADS < hd ? qh[t + ATT_THREADS] : 0;
    if (t < hd) qs[t] = d_bf16_to_f32(q0);
    if (t + ATT_THREADS < hd) qs[t + ATT_THREADS] = d_bf16_to_f32(q1);
    __syncthreads();
    copy_tile(k_pages, hd, vec, cnt0, rowoff[0], tiles);

    float mx = -INFINITY, sum = 0.f;
    // Pass 3: thread t of a team owns out[d0] and out[d0 + 1], d0 = 2t (head_dim is even), read as
    // one 4-byte pair per key (fewer shared-memory reads than a dimension per thread).
    float acc0 = 0.f, acc1 = 0.f;
    const int d0 = 2 * t;
    for (int u = 0; u < n_loads; u++) {
        issue(u + ATT_BUFS - 1);
        if (u == T) { // pass 2: the maximum, the stored keys' exponentials, their sum in thread 0
            for (int m = 16; m >= 1; m >>= 1) {
                const float o = __shfl_xor_sync(0xffffffffu, mx, m);
                if (o > mx) mx = o;
            }
            if ((t & 31) == 0) red[team][t >> 5] = mx;
            __syncthreads();
            if (t == 0) {
                float m = red[team][0];
                for (int w = 1; w < ATT_THREADS / 32; w++)
                    if (red[team][w] > m) m = red[team][w];
                mx_sh[team] = m;
            }
            __syncthreads();
            mx = mx_sh[team];
            for (int j = t; j < n_stored; j += ATT_THREADS) sc[j] = d_expf(__fsub_rn(sc[j], mx));
            __syncthreads();
            if (t == 0)
                for (int j = 0; j < n_stored; j++) sum = __fadd_rn(sum, sc[j]);
        }
        if (u == T + R) { // pass 3: the sum to every thread, the stored keys' probabilities
            if (t == 0) sum_sh[team] = sum;
            __syncthreads();
            sum = sum_sh[team];
            for (int j = t; j < n_stored; j += ATT_THREADS) sc[j] = __fdiv_rn(sc[j], sum);
        }
        cp_async_wait<ATT_BUFS - 1>();
        __syncthreads(); // load u has landed (everyone's copies); pass 3 sees sc and pt
        if (u == 0) pdl_allow_dependents();
        const att_load l = load_of(u, T, Tc);
        const int j0 = l.tile * ATT_TILE, cnt = min(ATT_TILE, nk - j0);
        const uint16_t *tile = tiles + (size_t)(u % ATT_BUFS) * ATT_TILE * stride;
        if (u < T) { // pass 1: scores and their maximum
            if (t < cnt) {
                const float sv = score(qs, tile + t * stride, hd, scale);
                if (sv > mx) mx = sv;
                if (l.tile < Tc) sc[j0 + t] = sv;
            }
        } else if (u < T + R) { // pass 2, a tile past the stored keys: its exponentials summed
            if (t < cnt) pt[t] = d_expf(__fsub_rn(score(qs, tile + t * stride, hd, scale), mx));
            __syncthreads();
            if (t == 0)
                for (int j = 0; j < cnt; j++) sum = __fadd_rn(sum, pt[j]);
        } else if (!l.v) { // pass 3, a K tile past the stored keys: its probabilities
            if (t < cnt)
                pt[t] = __fdiv_rn(d_expf(__fsub_rn(score(qs, tile + t * stride, hd, scale), mx)),
                                  sum);
        } else if (d0 < hd) { // pass 3: P·V over the tile, ascending position
            const float *p = l.tile < Tc ? sc + j0 : pt;
#pragma unroll 4
            for (int j = 0; j < cnt; j++) {
                const uint32_t v2 = *reinterpret_cast<const uint32_t *>(tile + j * stride + d0);
                acc0 = d_mac(acc0, p[j], d_bf16_to_f32((uint16_t)v2));
                acc1 = d_mac(acc1, p[j], d_bf16_to_f32((uint16_t)(v2 >> 16)));
            }
        }
    }
    uint16_t *o = out + (size_t)i * qd + (size_t)h * hd;
    if (d0 < hd) {
        o[d0] = d_f32_to_bf16(acc0);
        o[d0 + 1] = d_f32_to_bf16(acc1);
    }
}

// The most dynamic shared memory a block of attention_k may have, and the most that leaves room
// for two blocks on an SM (cu_attention_init).
int att_smem_max = 0, att_smem_two = 0;

// Scores kept per row and head for a launch of `blocks` blocks of `teams` heads: whole tiles, no
// more than a sequence can hold (span keys) and the shared memory fits. A setting >= 0
// (SG_CUDA_ATT_STORED_KEYS) caps them; by default (-1) at most ATT_STORED_KEYS and, where the
// launch at one block an SM would take more than two waves and two blocks of two tiles fit an SM,
// as many as leave room for the second block. Measured on the H200 (bench/README.md, fifth and
// sixth 2026-12-02 sessions, c46 to c50): the page tables span Qwen3-4B's 40960 positions, so 8192
// scores a team left one block an SM; two blocks (2432 scores a team with 4 teams, 5120 with 2, at
// head_dim 128) took spec at 64 requests from 3982 to 4290 tok/s and hedge3 at 4, 16 and 64 from
// 928 to 976, 1317 to 1433 and 1471 to 1655 (medians of three), but at 4 requests, launches of
// one or two waves, they cost plain and spec 2.6 % (1216 -> 1184, 1499 -> 1460): the verify's
// attention of 256 blocks took 38.7 us against 32.3 (c49's timeline). With the waves condition
// (c50) those two are back (1215, 1496) and the gains above held (4310, 990, 1434, 1649).
long long att_stored(int hd, long long span, int teams, long long blocks, int sm_count,
                     int setting) {
    long long stored = (span + ATT_TILE - 1) / ATT_TILE * ATT_TILE;
    const long long cap = setting >= 0 ? setting : ATT_STORED_KEYS;
    if (stored > cap) stored = cap / ATT_TILE * ATT_TILE;
    const long long base = (long long)attention_smem(hd, 0, teams);
    const long long two = ((long long)att_smem_two - base) / (4 * teams) / ATT_TILE * ATT_TILE;
    if (setting < 0 && blocks > 2LL * sm_count && two >= ATT_TILE && stored > two) stored = two;
    SG_CHECK(att_smem_max >= base, "attention head_dim %d: two tiles exceed the device's %d bytes "
             "of shared memory per block", hd, att_smem_max);
    const long long most = (att_smem_max - base) / (4 * teams) / ATT_TILE * ATT_TILE;
    return stored < most ? stored : most;
}

} // namespace

void cu_attention(void *ctx, const be_paging *pg, const bf16 *k_pages, const bf16 *v_pages,
                  const int32_t *row_table, const int32_t *n_keys, const bf16 *q, int rows,
                  int n_heads, bf16 *out) {
    cuda_ctx *c = static_cast<cuda_ctx *>(ctx);
    SG_CHECK(pg->n_kv_heads >= 1 && n_heads % pg->n_kv_heads == 0, "attention heads %d kv heads %d",
             n_heads, pg->n_kv_heads);
    SG_CHECK(pg->head_dim >= 2 && pg->head_dim % 2 == 0 && pg->head_dim <= ATT_MAX_HD,
             "attention head_dim %d (even, at most %d on CUDA)", pg->head_dim, ATT_MAX_HD);
    SG_CHECK(rows <= 65535, "attention rows %d beyond the grid", rows);
    if (rows <= 0) return;
    static_assert(2 * ATT_THREADS >= ATT_MAX_HD, "two output dimensions per team thread");
    float scale = 1.0f / sqrtf((float)pg->head_dim); // the CPU twin's expression, on the host
    const int teams = att_teams(n_heads / pg->n_kv_heads, rows, c->att_teams);
    dim3 grid((unsigned)(n_heads / teams), (unsigned)rows);
    const long long stored = att_stored(pg->head_dim, (long long)pg->table_stride * pg->page_size,
                                        teams, (long long)grid.x * grid.y, c->sm_count,
                                        c->att_stored_keys);
    const size_t smem = attention_smem(pg->head_dim, (int)stored, teams);
    launch_dependent(c, attention_k, grid, ATT_THREADS * teams, smem, *pg, k_pages, v_pages,
                     row_table, n_keys, q, n_heads, scale, (int)stored, out);
    CUDA_CHECK_LAUNCH();
}

// Scores a new backend keeps in shared memory per row and head at most: SG_CUDA_ATT_STORED_KEYS
// (a measurement and test switch: 0 recomputes every score in the later passes) or -1 (att_stored's
// choice).
int cu_attention_stored_keys(void) {
    return cu_env_switch("SG_CUDA_ATT_STORED_KEYS", -1, -1, 1 << 20);
}

// Heads per attention block a new backend uses at most: SG_CUDA_ATT_TEAMS (a measurement and test
// switch, 1 .. ATT_MAX_TEAMS) or 0 (att_teams' choice by rows).
int cu_attention_teams(void) {
    return cu_env_switch("SG_CUDA_ATT_TEAMS", 0, 0, ATT_MAX_TEAMS);
}

// Lets attention_k have all the shared memory the device allows a block (once per process).
void cu_attention_init(void) {
    int d;
    CUDA_CHECK(cudaGetDevice(&d));
    CUDA_CHECK(cudaDeviceGetAttribute(&att_smem_max, cudaDevAttrMaxSharedMemoryPerBlockOptin, d));
    cudaFuncAttributes attr;
    CUDA_CHECK(cudaFuncGetAttributes(&attr, attention_k));
    att_smem_max -= (int)attr.sharedSizeBytes; // the static part counts against the same limit
    int per_sm, reserved;
    CUDA_CHECK(cudaDeviceGetAttribute(&per_sm, cudaDevAttrMaxSharedMemoryPerMultiprocessor, d));
    CUDA_CHECK(cudaDeviceGetAttribute(&reserved, cudaDevAttrReservedSharedMemoryPerBlock, d));
    att_smem_two = per_sm / 2 - reserved - (int)attr.sharedSizeBytes;
    CUDA_CHECK(cudaFuncSetAttribute(attention_k, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                    att_smem_max));
}
