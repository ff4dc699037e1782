// gpu/device_numerics.h: the numerics contract (design.md §3) as device functions, bit for bit the
// CPU twin's (common/bf16.h, engine/cpu_backend.c): bf16 conversion with round-to-nearest-even
// and the CPU's quiet-NaN rule; one multiply-add step with two roundings (attention's sequential
// dot products); the top-2 order (value descending, then id ascending); glibc's expf and the
// SwiGLU built on it. (The GEMM is the one op with its own order on the device: gpu/gemm.cu.)
//
// Every product and sum is written with __fmul_rn / __fadd_rn, which the compiler never contracts
// into an FMA (the CPU side is built with -ffp-contract=off); gpu/ is also compiled with
// --fmad=false so no other expression is contracted either.
#ifndef SG_GPU_DEVICE_NUMERICS_H
#define SG_GPU_DEVICE_NUMERICS_H

#include <cuda_runtime.h>
#include <stdint.h>

__device__ __forceinline__ float d_bf16_to_f32(uint16_t h) {
    return __uint_as_float((uint32_t)h << 16);
}

__device__ __forceinline__ uint16_t d_f32_to_bf16(float f) {
    uint32_t u = __float_as_uint(f);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x0040u); // quiet NaN
    u += 0x7fffu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}

__device__ __forceinline__ float d_bf16_round(float f) { return d_bf16_to_f32(d_f32_to_bf16(f)); }

// One step of a lane: acc + a·b with two roundings.
__device__ __forceinline__ float d_mac(float acc, float a, float b) {
    return __fadd_rn(acc, __fmul_rn(a, b));
}

// ---- expf ----

// 2^(i/32) as doubles, minus i << 47 (glibc __exp2f_data.tab).
static __device__ const uint64_t d_exp2f_tab[32] = {
    0x3ff0000000000000ull, 0x3fefd9b0d3158574ull, 0x3fefb5586cf9890full, 0x3fef9301d0125b51ull,
    0x3fef72b83c7d517bull, 0x3fef54873168b9aaull, 0x3fef387a6e756238ull, 0x3fef1e9df51fdee1ull,
    0x3fef06fe0a31b715ull, 0x3feef1a7373aa9cbull, 0x3feedea64c123422ull, 0x3feece086061892dull,
    0x3feebfdad5362a27ull, 0x3feeb42b569d4f82ull, 0x3feeab07dd485429ull, 0x3feea47eb03a5585ull,
    0x3feea09e667f3bcdull, 0x3fee9f75e8ec5f74ull, 0x3feea11473eb0187ull, 0x3feea589994cce13ull,
    0x3feeace5422aa0dbull, 0x3feeb737b0cdc5e5ull, 0x3feec49182a3f090ull, 0x3feed503b23e255dull,
    0x3feee89f995ad3adull, 0x3feeff76f2fb5e47ull, 0x3fef199bdd85529cull, 0x3fef3720dcef9069ull,
    0x3fef5818dcfba487ull, 0x3fef7c97337b9b5full, 0x3fefa4afa2a490daull, 0x3fefd0765b6e4540ull};

// glibc's expf (sysdeps/ieee754/flt-32/e_expf.c, the ARM optimized-routines algorithm, as the
// x86-64 FMA build runs it: 2^(k/32) from a table times a cubic in double precision, rounded once
// to float), bit for bit, so the GPU's softmax and silu equal the CPU twin's. Checked against glibc
// 2.36's expf on all 2^32 inputs (0 mismatches; a build without the fused k·ln2 reduction differs
// at 2 inputs). Every operation is an explicit IEEE double operation or FMA.
__device__ __forceinline__ float d_expf(float x) {
    const double inv_ln2_n = 0x1.71547652b82fep+0 * 32, shift = 0x1.8p+52;
    const double c0 = 0x1.c6af84b912394p-5 / 32 / 32 / 32, c1 = 0x1.ebfce50fac4f3p-3 / 32 / 32,
                 c2 = 0x1.62e42ff0c52d6p-1 / 32;
    const uint32_t ux = __float_as_uint(x), abstop = (ux >> 20) & 0x7ffu;
    if (abstop >= 0x42bu) { // |x| >= 88, or NaN / Inf
        if (ux == 0xff800000u) return 0.0f;
        if (abstop >= 0x7f8u) return __fadd_rn(x, x);
        if (x > 0x1.62e42ep6f) return __uint_as_float(0x7f800000u);
        if (x < -0x1.9fe368p6f) return 0.0f;
    }
    const double xd = (double)x;
    double kd = __fma_rn(inv_ln2_n, xd, shift);
    const uint64_t ki = (uint64_t)__double_as_longlong(kd);
    kd = __dsub_rn(kd, shift);
    const double r = __fma_rn(inv_ln2_n, xd, -kd);
    const double s = __longlong_as_double((long long)(d_exp2f_tab[ki % 32] + (ki << 47)));
    const double z = __fma_rn(c0, r, c1);
    const double r2 = __dmul_rn(r, r);
    double y = __fma_rn(c2, r, 1.0);
    y = __fma_rn(z, r2, y);
    return __double2float_rn(__dmul_rn(y, s));
}

// bf16(bf16(silu(g)) · u) with silu(g) = g / (1.0f + expf(-g)) in fp32 (backend.h gemm_swiglu).
__device__ __forceinline__ uint16_t d_swiglu(uint16_t gate, uint16_t up) {
    const float g = d_bf16_to_f32(gate);
    const float s = d_bf16_round(__fdiv_rn(g, __fadd_rn(1.0f, d_expf(-g))));
    return d_f32_to_bf16(__fmul_rn(s, d_bf16_to_f32(up)));
}

// ---- top-2 ----

// A candidate of a top-2 selection; id -1 is "none". bad marks a NaN or Inf seen in the row.
struct d_cand2 {
    float v0, v1;
    int i0, i1;
    int bad;
};

__device__ __forceinline__ d_cand2 d_cand2_empty() {
    d_cand2 c;
    c.v0 = c.v1 = 0.f;
    c.i0 = c.i1 = -1;
    c.bad = 0;
    return c;
}

// a ranks before b: value descending, then id ascending (ids distinct, -1 ranks last).
__device__ __forceinline__ bool d_before(float va, int ia, float vb, int ib) {
    if (ia < 0) return false;
    if (ib < 0) return true;
    return va > vb || (va == vb && ia < ib);
}

// Offers value v at id i (finite values; a non-finite one marks the candidate bad).
__device__ __forceinline__ void d_cand2_push(d_cand2 &c, float v, int i) {
    if (!isfinite(v)) {
        c.bad = 1;
        return;
    }
    if (d_before(v, i, c.v0, c.i0)) {
        c.v1 = c.v0;
        c.i1 = c.i0;
        c.v0 = v;
        c.i0 = i;
    } else if (d_before(v, i, c.v1, c.i1)) {
        c.v1 = v;
        c.i1 = i;
    }
}

// The top-2 of the union of two disjoint candidates: exact, so any merge order gives the same.
__device__ __forceinline__ d_cand2 d_cand2_merge(d_cand2 a, const d_cand2 &b) {
    a.bad |= b.bad;
    if (b.i0 >= 0) {
        if (d_before(b.v0, b.i0, a.v0, a.i0)) {
            a.v1 = a.v0;
            a.i1 = a.i0;
            a.v0 = b.v0;
            a.i0 = b.i0;
        } else if (d_before(b.v0, b.i0, a.v1, a.i1)) {
            a.v1 = b.v0;
            a.i1 = b.i0;
        }
    }
    if (b.i1 >= 0 && d_before(b.v1, b.i1, a.v1, a.i1)) {
        // b.v1 ranks after b.v0, so it can only take the second place.
        a.v1 = b.v1;
        a.i1 = b.i1;
    }
    return a;
}

__device__ __forceinline__ d_cand2 d_cand2_shfl_xor(const d_cand2 &c, int m) {
    d_cand2 o;
    o.v0 = __shfl_xor_sync(0xffffffffu, c.v0, m);
    o.v1 = __shfl_xor_sync(0xffffffffu, c.v1, m);
    o.i0 = __shfl_xor_sync(0xffffffffu, c.i0, m);
    o.i1 = __shfl_xor_sync(0xffffffffu, c.i1, m);
    o.bad = __shfl_xor_sync(0xffffffffu, c.bad, m);
    return o;
}

// Block-wide merge (blockDim.x a multiple of 32, at most 1024); the result is valid in thread 0.
__device__ __forceinline__ d_cand2 d_cand2_block(d_cand2 c) {
    __shared__ d_cand2 warp_best[32];
    for (int m = 16; m >= 1; m >>= 1) c = d_cand2_merge(c, d_cand2_shfl_xor(c, m));
    int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    if (lane == 0) warp_best[warp] = c;
    __syncthreads();
    if (warp == 0) {
        int nw = blockDim.x >> 5;
        c = lane < nw ? warp_best[lane] : d_cand2_empty();
        for (int m = 16; m >= 1; m >>= 1) c = d_cand2_merge(c, d_cand2_shfl_xor(c, m));
    }
    __syncthreads(); // warp_best may be reused by a later call
    return c;
}

#endif
