/*
 * weft/reduce.cuh — element sums for the reducing kernels (kernels/reduce.cu, kernels/gemm_rs.cu):
 * fp16, bf16 and fp32 elements (dtype = weft_dtype_t's value) accumulated in fp32 in source order
 * and rounded once to the element type (round to nearest even), 16-byte vectors where every
 * pointer shares its alignment mod 16. NVRTC-clean, like the rest of the device library.
 */
#ifndef WEFT_REDUCE_CUH
#define WEFT_REDUCE_CUH

#include "weft/sync.cuh"

/* weft_dtype_t's values */
#define WEFT_RED_FP16 2
#define WEFT_RED_BF16 3
#define WEFT_RED_FP32 4

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

/* A 32-bit word holds one fp32 element or two 16-bit ones; acc[0..1] are its elements' sums. */
static __device__ __forceinline__ void weft_red_word_add(float *acc, unsigned w, int dtype, int first) {
  float a, b = 0.f;
  if (dtype == WEFT_RED_FP32) a = __uint_as_float(w);
  else if (dtype == WEFT_RED_BF16) a = __uint_as_float(w << 16), b = __uint_as_float(w & 0xffff0000u);
  else a = weft_red_h2f((unsigned short)w), b = weft_red_h2f((unsigned short)(w >> 16));
  if (first) acc[0] = a, acc[1] = b;
  else acc[0] += a, acc[1] += b;
}
static __device__ __forceinline__ unsigned weft_red_word_pack(const float *acc, int dtype) {
  if (dtype == WEFT_RED_FP32) return __float_as_uint(acc[0]);
  if (dtype == WEFT_RED_BF16) return (unsigned)weft_red_f2bf(acc[0]) | (unsigned)weft_red_f2bf(acc[1]) << 16;
  return (unsigned)weft_red_f2h(acc[0]) | (unsigned)weft_red_f2h(acc[1]) << 16;
}

static __device__ __forceinline__ float weft_red_elem_load(const char *p, int dtype) {
  if (dtype == WEFT_RED_FP32) return *(const float *)p;
  unsigned short h = *(const unsigned short *)p;
  return dtype == WEFT_RED_BF16 ? __uint_as_float((unsigned)h << 16) : weft_red_h2f(h);
}
static __device__ __forceinline__ void weft_red_elem_store(char *p, float v, int dtype) {
  if (dtype == WEFT_RED_FP32) *(float *)p = v;
  else *(unsigned short *)p = dtype == WEFT_RED_BF16 ? weft_red_f2bf(v) : weft_red_f2h(v);
}

/* Sources loaded at once per 16-byte vector (loads from all of them are in flight together), and
 * vectors per thread in flight at once (more where few SMs must hide NVLink's load latency: a
 * kernel may define both before including this file). */
#ifndef WEFT_RED_BATCH
#define WEFT_RED_BATCH 8
#endif
#ifndef WEFT_RED_UNROLL
#define WEFT_RED_UNROLL 1
#endif

/* dst[d][i] = sum over s in rank order of src[s][i], for i in [0, n) elements, d < ndst; the
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
  for (weft_u64_t v0 = t; v0 < nv; v0 += nt * WEFT_RED_UNROLL) {
    float acc[WEFT_RED_UNROLL][8] = {{0.f}};
    for (int s0 = 0; s0 < nsrc; s0 += WEFT_RED_BATCH) {
      uint4 x[WEFT_RED_UNROLL][WEFT_RED_BATCH];
#pragma unroll
      for (int u = 0; u < WEFT_RED_UNROLL; u++)
#pragma unroll
        for (int j = 0; j < WEFT_RED_BATCH; j++)
          if (s0 + j < nsrc && v0 + u * nt < nv) x[u][j] = ((const uint4 *)(src[s0 + j] + hb))[v0 + u * nt];
#pragma unroll
      for (int u = 0; u < WEFT_RED_UNROLL; u++)
#pragma unroll
        for (int j = 0; j < WEFT_RED_BATCH; j++)
          if (s0 + j < nsrc && v0 + u * nt < nv) {
            int first = s0 + j == 0;
            weft_red_word_add(acc[u] + 0, x[u][j].x, dtype, first);
            weft_red_word_add(acc[u] + 2, x[u][j].y, dtype, first);
            weft_red_word_add(acc[u] + 4, x[u][j].z, dtype, first);
            weft_red_word_add(acc[u] + 6, x[u][j].w, dtype, first);
          }
    }
#pragma unroll
    for (int u = 0; u < WEFT_RED_UNROLL; u++)
      if (v0 + u * nt < nv) {
        uint4 o = make_uint4(weft_red_word_pack(acc[u] + 0, dtype), weft_red_word_pack(acc[u] + 2, dtype),
                             weft_red_word_pack(acc[u] + 4, dtype), weft_red_word_pack(acc[u] + 6, dtype));
        for (int d = 0; d < ndst; d++) ((uint4 *)(dst[d] + hb))[v0 + u * nt] = o;
      }
  }
  /* the head, the tail, or everything when unaligned */
  for (weft_u64_t k = t; k < head + (n - tail); k += nt) {
    weft_u64_t i = k < head ? k : tail + (k - head), b = i * es;
    float acc = weft_red_elem_load(src[0] + b, dtype);
    for (int s = 1; s < nsrc; s++) acc += weft_red_elem_load(src[s] + b, dtype);
    for (int d = 0; d < ndst; d++) weft_red_elem_store(dst[d] + b, acc, dtype);
  }
}

#endif
