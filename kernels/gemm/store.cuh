/*
 * kernels/gemm/store.cuh — the stores of C that weft's GEMM (kernels/gemm/gemm.cu) makes from
 * registers: two fp32 accumulators as one 32-bit pair of C's 16-bit type (WEFT_GEMM_OUT), which
 * the TMA-store, LL and AllReduce epilogues use too; the direct-store epilogue's store of one
 * accumulator column group into C of any N and row stride (with WEFT_GEMM_C_T, the transposed
 * product's, whose lanes trade rows first); and a split's partial tile into the fp32 workspace
 * with its arrival on the tile's counter, which makes the last split sum them (WEFT_GEMM_SPLITK's
 * workspace reduction and WEFT_GEMM_TAIL's split tail); COMBINE's routing weights and its
 * additions of staged C into the token-order output.
 *
 * Expects nothing before it: includes kernels/gemm/config.cuh (the defines) and
 * kernels/gemm/ptx.cuh.
 */
#ifndef WEFT_KERNELS_GEMM_STORE_CUH
#define WEFT_KERNELS_GEMM_STORE_CUH

#include "kernels/gemm/config.cuh"
#include "kernels/gemm/ptx.cuh"

__device__ __forceinline__ u32 weft_gemm_pack(float lo, float hi) {
  u32 r;
#if WEFT_GEMM_OUT == 1
  asm("cvt.rn.f16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
#else
  asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
#endif
  return r;
}

/* lo, hi into C (row stride ldc) at element `at` and at + 1 (hi only where `second`, at + 1 inside
 * C): one vector store where both are and ldc is even (an even `at` then aligns the pair), else
 * element by element. */
__device__ __forceinline__ void weft_gemm_store2(void *c, u64 ldc, u64 at, int second, float lo,
                                                 float hi) {
  const int pair = second && !(ldc & 1);
#if WEFT_GEMM_OUT == 2
  float *o = (float *)c + at;
  if (pair) {
    asm volatile("st.global.v2.f32 [%0], {%1, %2};" ::"l"(o), "f"(lo), "f"(hi) : "memory");
  } else {
    o[0] = lo;
    if (second) o[1] = hi;
  }
#else
  unsigned short *o = (unsigned short *)c + at;
  const u32 v = weft_gemm_pack(lo, hi);
  if (pair) {
    *(u32 *)o = v;
  } else {
    o[0] = (unsigned short)v;
    if (second) o[1] = (unsigned short)(v >> 16);
  }
#endif
}

#if WEFT_GEMM_C_T
/* weft_gemm_store_group of the transposed product (WEFT_GEMM_C_T): fragment (row, col) is
 * C[col][row]. Rows r and r + 1 of a column lie in lanes l and l ^ 4, so the pair trades halves
 * and each lane stores two consecutive elements of one row of C: the even row's lane C[col][r,
 * r + 1], the odd row's C[col + 1][r, r + 1]. Every lane of the warp must call it (the
 * shuffle). */
__device__ __forceinline__ void weft_gemm_store_group(void *c, int M, int N, u64 ldc, int row,
                                                      int col, float f0, float f1, float f2,
                                                      float f3) {
  const int odd = (threadIdx.x >> 2) & 1; /* row is odd: rows are tile base + 16 w + lane / 4 */
#pragma unroll
  for (int h = 0; h < 2; h++) {
    const float s0 = h ? f2 : f0, s1 = h ? f3 : f1;
    const float got = __shfl_xor_sync(0xffffffffu, odd ? s0 : s1, 4);
    const int r = row + 8 * h - odd, cr = col + odd; /* C[cr][r], C[cr][r + 1] */
    if (cr < N && r < M)
      weft_gemm_store2(c, ldc, (u64)cr * ldc + r, r + 1 < M, odd ? got : s0, odd ? s1 : got);
  }
}
#else
/* The direct (split-K kernel) epilogue's store of one accumulator column group: f0, f1 at
 * (row, col), (row, col + 1) and f2, f3 at row + 8, as the m64nNk16 fragment holds them. col is
 * even, so the pair is one aligned vector store whenever ldc is even and col + 1 < N; otherwise
 * (odd N or row stride: C that TMA cannot store) element by element. */
__device__ __forceinline__ void weft_gemm_store_group(void *c, int M, int N, u64 ldc, int row,
                                                      int col, float f0, float f1, float f2,
                                                      float f3) {
  if (col >= N) return;
#pragma unroll
  for (int h = 0; h < 2; h++)
    if (row + 8 * h < M)
      weft_gemm_store2(c, ldc, (u64)(row + 8 * h) * ldc + col, col + 1 < N, h ? f2 : f0,
                       h ? f3 : f1);
}
#endif

#if WEFT_GEMM_COMBINE
/* COMBINE: entry e's routing weight (weights of type WEFT_GEMM_COMBINE_W: bf16, fp16, fp32) */
__device__ __forceinline__ float weft_gemm_combine_weight(const void *weights, int e) {
#if WEFT_GEMM_COMBINE_W == 2
  return ((const float *)weights)[e];
#else
  const unsigned short h = ((const unsigned short *)weights)[e];
#if WEFT_GEMM_COMBINE_W == 1
  float f;
  asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h));
  return f;
#else
  return __uint_as_float((u32)h << 16);
#endif
#endif
}

/* COMBINE: the 16 bytes of C's type at shared address src added into global dst (16-byte
 * aligned) by one vector reduction */
__device__ __forceinline__ void weft_gemm_combine_add16(void *dst, u32 src) {
  u32 v0, v1, v2, v3;
  asm volatile("ld.shared.v4.u32 {%0, %1, %2, %3}, [%4];"
               : "=r"(v0), "=r"(v1), "=r"(v2), "=r"(v3)
               : "r"(src)
               : "memory");
#if WEFT_GEMM_OUT == 2
  asm volatile("red.global.add.v4.f32 [%0], {%1, %2, %3, %4};" ::"l"(dst), "f"(__uint_as_float(v0)),
               "f"(__uint_as_float(v1)), "f"(__uint_as_float(v2)), "f"(__uint_as_float(v3))
               : "memory");
#elif WEFT_GEMM_OUT == 1
  asm volatile("red.global.add.noftz.v4.f16x2 [%0], {%1, %2, %3, %4};" ::"l"(dst), "r"(v0),
               "r"(v1), "r"(v2), "r"(v3)
               : "memory");
#else
  asm volatile("red.global.add.noftz.v4.bf16x2 [%0], {%1, %2, %3, %4};" ::"l"(dst), "r"(v0),
               "r"(v1), "r"(v2), "r"(v3)
               : "memory");
#endif
}
#endif

/* A split's partial tile (split-K, or a split tail): both consumer warpgroups (256 threads,
 * named barrier 4) store their accumulators at `mine` (float4 [v][wtid] of the warpgroup's
 * slice), then one thread adds 1 to the tile's counter (acq_rel: the partials before it, the
 * others' after it). Returns whether this CTA is the tile's last split, and so sums the
 * partials; it zeroes the counter for the next launch. `flag`: a shared word for the answer. */
__device__ __forceinline__ int weft_gemm_partial_arrive(const float *d, float4 *mine, u32 *counter,
                                                        int splits, volatile int *flag, int tid) {
#pragma unroll
  for (int v = 0; v < WEFT_GEMM_NV; v++)
    asm volatile("st.global.v4.f32 [%0], {%1, %2, %3, %4};" ::"l"(mine + v * 128), "f"(d[4 * v]),
                 "f"(d[4 * v + 1]), "f"(d[4 * v + 2]), "f"(d[4 * v + 3])
                 : "memory");
  __threadfence();
  weft_gemm_named_sync(4, 256);
  if (tid == 128) {
    u32 old;
    asm volatile("atom.acq_rel.gpu.global.add.u32 %0, [%1], 1;" : "=r"(old) : "l"(counter) : "memory");
    const int is_last = old == (u32)(splits - 1);
    if (is_last) *counter = 0;
    *flag = is_last;
  }
  weft_gemm_named_sync(4, 256);
  return *flag;
}

#endif
