/*
 * weft/ll.cuh — the low-latency (LL) protocol: data and flag travel in one single-copy-atomic
 * store, so a receiver needs no separate signal and no fence; it polls until the flag equals the
 * call's epoch. Flags are epochs: buffers are never cleared (keep two, by epoch parity, when a
 * new call may start before every reader finished the last).
 *
 * Layout: 16-byte lines {data0, flag, data1, flag} written with st.volatile.v4 and read with
 * ld.volatile.v4 (8 data bytes per line: an LL buffer is twice its payload), and 8-byte words
 * {data, flag} for single values.
 */
#ifndef WEFT_LL_CUH
#define WEFT_LL_CUH

#include "weft/shmem.cuh"

static __device__ __forceinline__ void weft_ll_store8(weft_u64_t *dst, unsigned data, unsigned flag) {
  weft_u64_t w = ((weft_u64_t)flag << 32) | data;
  asm volatile("st.volatile.global.u64 [%0], %1;" ::"l"(dst), "l"(w) : "memory");
}

/* Waits for the word's flag to equal flag; returns its data. */
static __device__ __forceinline__ unsigned weft_ll_load8(const weft_u64_t *src, unsigned flag) {
  weft_u64_t w, start = 0;
  for (unsigned spins = 0;; spins++) {
    asm volatile("ld.volatile.global.u64 %0, [%1];" : "=l"(w) : "l"(src) : "memory");
    if ((unsigned)(w >> 32) == flag) return (unsigned)w;
    weft_spin_check(spins, &start, "ll_load8", -1, src, WEFT_CMP_EQ, flag, w >> 32);
  }
}

static __device__ __forceinline__ void weft_ll_store16(void *dst, unsigned d0, unsigned d1,
                                                       unsigned flag) {
  asm volatile("st.volatile.global.v4.u32 [%0], {%1, %2, %3, %4};" ::"l"(dst), "r"(d0), "r"(flag),
               "r"(d1), "r"(flag) : "memory");
}

/* Waits until both flags of the line equal flag; returns the 8 data bytes. */
static __device__ __forceinline__ weft_u64_t weft_ll_load16(const void *src, unsigned flag) {
  unsigned d0, f0, d1, f1;
  weft_u64_t start = 0;
  for (unsigned spins = 0;; spins++) {
    asm volatile("ld.volatile.global.v4.u32 {%0, %1, %2, %3}, [%4];"
                 : "=r"(d0), "=r"(f0), "=r"(d1), "=r"(f1) : "l"(src) : "memory");
    if (f0 == flag && f1 == flag) return ((weft_u64_t)d1 << 32) | d0;
    weft_spin_check(spins, &start, "ll_load16", -1, (const weft_u64_t *)src, WEFT_CMP_EQ, flag,
                    f0 != flag ? f0 : f1);
  }
}

/* Bytes of LL buffer that carry n payload bytes. */
#define WEFT_LL_BYTES(n) ((((n) + 7) / 8) * 16)

/* The block's threads pack n bytes (n % 8 == 0, src 8-byte aligned) into 16-byte LL lines at
 * dst_ll on pe, each tagged with flag. */
static __device__ __forceinline__ void weft_ll_push_block(void *dst_ll, const void *src,
                                                          weft_u64_t n, unsigned flag, int pe) {
  char *d = (char *)weft_remote_ptr(dst_ll, pe);
  const weft_u64_t *s = (const weft_u64_t *)src;
  unsigned tid = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
  unsigned nt = blockDim.x * blockDim.y * blockDim.z;
  for (weft_u64_t i = tid; i < n / 8; i += nt) {
    weft_u64_t v = s[i];
    weft_ll_store16(d + i * 16, (unsigned)v, (unsigned)(v >> 32), flag);
  }
}

/* The block's threads wait for and unpack n bytes of LL lines at src_ll (local) into dst. */
static __device__ __forceinline__ void weft_ll_recv_block(void *dst, const void *src_ll,
                                                          weft_u64_t n, unsigned flag) {
  weft_u64_t *d = (weft_u64_t *)dst;
  const char *s = (const char *)src_ll;
  unsigned tid = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
  unsigned nt = blockDim.x * blockDim.y * blockDim.z;
  for (weft_u64_t i = tid; i < n / 8; i += nt) d[i] = weft_ll_load16(s + i * 16, flag);
  __syncthreads();
}

#endif
