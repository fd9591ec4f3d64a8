/*
 * weft/reduce.cuh — element reductions for the reducing kernels (kernels/reduce.cu, gemm_rs.cu,
 * gemm_ar.cu): fp16, bf16 and fp32 elements (dtype = weft_dtype_t's value) combined in fp32 in
 * source order and rounded once to the element type (round to nearest even), 16-byte vectors
 * where every pointer shares its alignment mod 16. The operator is the module's WEFT_RED_OP
 * (weft_red_op_t's value, -D at compile time; sum where undefined, as the GEMMs' reductions), so
 * the loops below are written once: "sum" in their names means that combination. NVRTC-clean,
 * like the rest of the device library.
 */
#ifndef WEFT_REDUCE_CUH
#define WEFT_REDUCE_CUH

#include "weft/sync.cuh"

/* weft_dtype_t's values */
#define WEFT_RED_FP16 2
#define WEFT_RED_BF16 3
#define WEFT_RED_FP32 4

/* weft_red_op_t's values */
#define WEFT_RED_SUM 0
#define WEFT_RED_PROD 1
#define WEFT_RED_MAX 2
#define WEFT_RED_MIN 3
#define WEFT_RED_AVG 4
#ifndef WEFT_RED_OP
#define WEFT_RED_OP WEFT_RED_SUM
#endif

/* acc combined with the next source's x (AVG sums; its scaling is weft_red_final's). */
static __device__ __forceinline__ float weft_red_combine(float acc, float x) {
#if WEFT_RED_OP == WEFT_RED_PROD
  return acc * x;
#elif WEFT_RED_OP == WEFT_RED_MAX
  return fmaxf(acc, x);
#elif WEFT_RED_OP == WEFT_RED_MIN
  return fminf(acc, x);
#else
  return acc + x;
#endif
}

/* What is stored of a finished combination: AVG's sum over the node's ranks times 1 / world (one
 * fp32 multiply by the reciprocal the runtime rounded, then the one rounding to the element type;
 * a divide here would call a slow path that spills). */
static __device__ __forceinline__ float weft_red_final(float acc) {
#if WEFT_RED_OP == WEFT_RED_AVG
  return acc * weft_state.inv_local_world;
#else
  return acc;
#endif
}

/* ---- element conversions and sums ---------------------------------------------------------- */

static __device__ __forceinline__ float weft_red_h2f(unsigned short h) {
  float f;
  asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h));
  return f;
}
static __device__ __forceinline__ unsigned short weft_red_f2h(float f) {
  unsigned short h;
  asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(f));
  return h;
}
static __device__ __forceinline__ unsigned short weft_red_f2bf(float f) {
  unsigned short h;
  asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(h) : "f"(f));
  return h;
}

/* A 32-bit word holds one fp32 element or two 16-bit ones; acc[0..1] are its elements'
 * combinations so far; word_pack stores finished ones. */
static __device__ __forceinline__ void weft_red_word_add(float *acc, unsigned w, int dtype, int first) {
  float a, b = 0.f;
  if (dtype == WEFT_RED_FP32) a = __uint_as_float(w);
  else if (dtype == WEFT_RED_BF16) a = __uint_as_float(w << 16), b = __uint_as_float(w & 0xffff0000u);
  else a = weft_red_h2f((unsigned short)w), b = weft_red_h2f((unsigned short)(w >> 16));
  if (first) acc[0] = a, acc[1] = b;
  else acc[0] = weft_red_combine(acc[0], a), acc[1] = weft_red_combine(acc[1], b);
}
static __device__ __forceinline__ unsigned weft_red_word_pack(const float *acc, int dtype) {
  float a = weft_red_final(acc[0]), b = weft_red_final(acc[1]);
  if (dtype == WEFT_RED_FP32) return __float_as_uint(a);
  if (dtype == WEFT_RED_BF16) return (unsigned)weft_red_f2bf(a) | (unsigned)weft_red_f2bf(b) << 16;
  return (unsigned)weft_red_f2h(a) | (unsigned)weft_red_f2h(b) << 16;
}

static __device__ __forceinline__ float weft_red_elem_load(const char *p, int dtype) {
  if (dtype == WEFT_RED_FP32) return *(const float *)p;
  unsigned short h = *(const unsigned short *)p;
  return dtype == WEFT_RED_BF16 ? __uint_as_float((unsigned)h << 16) : weft_red_h2f(h);
}
/* a finished combination v */
static __device__ __forceinline__ void weft_red_elem_store(char *p, float v, int dtype) {
  v = weft_red_final(v);
  if (dtype == WEFT_RED_FP32) *(float *)p = v;
  else *(unsigned short *)p = dtype == WEFT_RED_BF16 ? weft_red_f2bf(v) : weft_red_f2h(v);
}

/* Sources loaded at once per 16-byte vector (loads from all of them are in flight together; where
 * the sources and the destinations each fit in one batch, the loop below double-buffers), and
 * vectors per thread in flight at once (more where few SMs must hide the loads' latency). A kernel
 * may define both before including this file, or its launcher pass them as -D (src/ops/gemm_ar.c). */
#ifndef WEFT_RED_BATCH
#define WEFT_RED_BATCH 8
#endif
#ifndef WEFT_RED_UNROLL
#define WEFT_RED_UNROLL 1
#endif

static __device__ __forceinline__ void weft_red_vec_add(float *acc, uint4 x, int dtype, int first) {
  weft_red_word_add(acc + 0, x.x, dtype, first);
  weft_red_word_add(acc + 2, x.y, dtype, first);
  weft_red_word_add(acc + 4, x.z, dtype, first);
  weft_red_word_add(acc + 6, x.w, dtype, first);
}

/* The 16-byte vectors [0, nv) after hb bytes of weft_red_sum_range, for one dtype (a constant
 * where each call inlines it: no branches in the conversions). Where one batch holds every source
 * and every destination, the pointers live in registers and the loads are double-buffered: the
 * next vectors' loads go out before this vectors' sums and stores, so that an iteration costs the
 * larger of a load's latency and its own work, not their sum; and no load waits for a pointer
 * read from shared memory behind the stores (with a few blocks that is what the speed is:
 * dev/overlap/red_sm.cu). */
static __device__ __forceinline__ void weft_red_sum_vectors(const char *const *src, int nsrc,
                                                            char *const *dst, int ndst, weft_u64_t hb,
                                                            weft_u64_t nv, int dtype, weft_u64_t t,
                                                            weft_u64_t nt) {
  uint4 x[WEFT_RED_UNROLL][WEFT_RED_BATCH];
#define WEFT_RED_ADD(s0)                                                                          \
  _Pragma("unroll") for (int u = 0; u < WEFT_RED_UNROLL; u++)                                     \
  _Pragma("unroll") for (int j = 0; j < WEFT_RED_BATCH; j++)                                      \
    if ((s0) + j < nsrc && v0 + u * nt < nv) weft_red_vec_add(acc[u], x[u][j], dtype, (s0) + j == 0)
#define WEFT_RED_PACK(u)                                                                          \
  make_uint4(weft_red_word_pack(acc[u] + 0, dtype), weft_red_word_pack(acc[u] + 2, dtype),         \
             weft_red_word_pack(acc[u] + 4, dtype), weft_red_word_pack(acc[u] + 6, dtype))
  if (nsrc <= WEFT_RED_BATCH && ndst <= WEFT_RED_BATCH) {
    const uint4 *sp[WEFT_RED_BATCH];
    uint4 *dp[WEFT_RED_BATCH];
#pragma unroll
    for (int j = 0; j < WEFT_RED_BATCH; j++) {
      sp[j] = (const uint4 *)(src[j < nsrc ? j : 0] + hb);
      dp[j] = (uint4 *)(dst[j < ndst ? j : 0] + hb);
    }
#define WEFT_RED_LOAD(to, v)                                                                      \
  _Pragma("unroll") for (int u = 0; u < WEFT_RED_UNROLL; u++)                                     \
  _Pragma("unroll") for (int j = 0; j < WEFT_RED_BATCH; j++)                                      \
    if (j < nsrc && (v) + u * nt < nv) to[u][j] = sp[j][(v) + u * nt]
    WEFT_RED_LOAD(x, t);
    for (weft_u64_t v0 = t; v0 < nv; v0 += nt * WEFT_RED_UNROLL) {
      uint4 next[WEFT_RED_UNROLL][WEFT_RED_BATCH];
      float acc[WEFT_RED_UNROLL][8];
      WEFT_RED_LOAD(next, v0 + nt * WEFT_RED_UNROLL);
      WEFT_RED_ADD(0);
#pragma unroll
      for (int u = 0; u < WEFT_RED_UNROLL; u++)
        if (v0 + u * nt < nv) {
          uint4 o = WEFT_RED_PACK(u);
#pragma unroll
          for (int d = 0; d < WEFT_RED_BATCH; d++)
            if (d < ndst) dp[d][v0 + u * nt] = o;
        }
#pragma unroll
      for (int u = 0; u < WEFT_RED_UNROLL; u++)
#pragma unroll
        for (int j = 0; j < WEFT_RED_BATCH; j++) x[u][j] = next[u][j];
    }
#undef WEFT_RED_LOAD
  } else {
    for (weft_u64_t v0 = t; v0 < nv; v0 += nt * WEFT_RED_UNROLL) {
      float acc[WEFT_RED_UNROLL][8];
      for (int s0 = 0; s0 < nsrc; s0 += WEFT_RED_BATCH) {
#pragma unroll
        for (int u = 0; u < WEFT_RED_UNROLL; u++)
#pragma unroll
          for (int j = 0; j < WEFT_RED_BATCH; j++)
            if (s0 + j < nsrc && v0 + u * nt < nv) x[u][j] = ((const uint4 *)(src[s0 + j] + hb))[v0 + u * nt];
        WEFT_RED_ADD(s0);
      }
#pragma unroll
      for (int u = 0; u < WEFT_RED_UNROLL; u++)
        if (v0 + u * nt < nv) {
          uint4 o = WEFT_RED_PACK(u);
          for (int d = 0; d < ndst; d++) ((uint4 *)(dst[d] + hb))[v0 + u * nt] = o;
        }
    }
  }
#undef WEFT_RED_ADD
#undef WEFT_RED_PACK
}

/* One function a dtype: three calls of weft_red_sum_vectors that differed only in the constant
 * were merged back into one call with the dtype a variable (the branches came back); calls of
 * three distinct functions are not. */
#define WEFT_RED_SUM_VECTORS_AS(name, dtype)                                                      \
  static __device__ __forceinline__ void name(const char *const *src, int nsrc, char *const *dst,  \
                                              int ndst, weft_u64_t hb, weft_u64_t nv, weft_u64_t t, \
                                              weft_u64_t nt) {                                      \
    weft_red_sum_vectors(src, nsrc, dst, ndst, hb, nv, dtype, t, nt);                              \
  }
WEFT_RED_SUM_VECTORS_AS(weft_red_sum_vectors_bf16, WEFT_RED_BF16)
WEFT_RED_SUM_VECTORS_AS(weft_red_sum_vectors_fp16, WEFT_RED_FP16)
WEFT_RED_SUM_VECTORS_AS(weft_red_sum_vectors_fp32, WEFT_RED_FP32)
#undef WEFT_RED_SUM_VECTORS_AS

/* dst[d][i] = WEFT_RED_OP over s in rank order of src[s][i], for i in [0, n) elements, d < ndst; the
 * grid's threads t of nt share the work. src and dst live in shared memory (every thread reads
 * the same pointers). 16-byte vectors when every pointer has the same alignment mod 16 (elements
 * up to the first boundary and the tail one by one), elements one by one otherwise. Each element
 * is loaded from every source before it is stored, by the same thread, so a destination may be a
 * source (in place). */
static __device__ void weft_red_sum_range(const char *const *src, int nsrc, char *const *dst, int ndst,
                                     weft_u64_t n, int dtype, weft_u64_t t, weft_u64_t nt) {
  weft_u64_t es = dtype == WEFT_RED_FP32 ? 4 : 2, a0 = (weft_u64_t)src[0] & 15, head = n, nv = 0;
  int aligned = 1;
  for (int s = 1; s < nsrc; s++) aligned &= ((weft_u64_t)src[s] & 15) == a0;
  for (int d = 0; d < ndst; d++) aligned &= ((weft_u64_t)dst[d] & 15) == a0;
  if (aligned) {
    head = ((16 - a0) & 15) / es;
    if (head > n) head = n;
    nv = (n - head) * es / 16;
  }
  weft_u64_t hb = head * es, tail = head + nv * 16 / es;
  if (dtype == WEFT_RED_BF16) weft_red_sum_vectors_bf16(src, nsrc, dst, ndst, hb, nv, t, nt);
  else if (dtype == WEFT_RED_FP16) weft_red_sum_vectors_fp16(src, nsrc, dst, ndst, hb, nv, t, nt);
  else weft_red_sum_vectors_fp32(src, nsrc, dst, ndst, hb, nv, t, nt);
  /* the head, the tail, or everything when unaligned */
  for (weft_u64_t k = t; k < head + (n - tail); k += nt) {
    weft_u64_t i = k < head ? k : tail + (k - head), b = i * es;
    float acc = weft_red_elem_load(src[0] + b, dtype);
    for (int s = 1; s < nsrc; s++) acc = weft_red_combine(acc, weft_red_elem_load(src[s] + b, dtype));
    for (int d = 0; d < ndst; d++) weft_red_elem_store(dst[d] + b, acc, dtype);
  }
}

#endif
