/*
 * weft/ll.cuh — the low-latency (LL) protocol: data and flag travel in one single-copy-atomic
 * store, so a receiver needs no separate signal and no fence; it polls its own buffer until the
 * flag equals the call's epoch.
 *
 * Layouts:
 * - 8-byte word {data32, flag32} (low half data, high half flag): weft_ll_pack8 / _data8 /
 *   _flag8, weft_ll_store8 / weft_ll_load8 — single values.
 * - 16-byte line {data0, flag, data1, flag}: weft_ll_store16 / weft_ll_load16, and the buffer
 *   movers weft_ll_push[_warp|_block] / weft_ll_recv[_warp|_block]. A line carries 8 payload
 *   bytes, so an LL buffer is twice its payload (WEFT_LL_BYTES).
 *
 * Ordering rules (why this works without fences):
 * - An aligned 8-byte store is single-copy atomic, also over NVLink (docs/architecture.md,
 *   "Memory-model rules the device code relies on"): a reader that sees the flag half of a word
 *   sees the data half of the same store. A 16-byte line is two such halves, each with its own
 *   copy of the flag, so the reader checks both flags.
 * - Stores are st.volatile (relaxed.sys) and polls ld.volatile: no acquire/release is needed for
 *   the LL payload itself. Data that is NOT inside the LL lines is not ordered by them: use a
 *   signal (release/acquire) for that.
 * - Flags are epochs: a buffer is never cleared. The flag of a call must be nonzero (weft_malloc
 *   zero-fills, so 0 would match at once) and differ from the flag of the buffer's previous use;
 *   keep two buffers, by epoch parity, when a sender may start call e+1 before every reader
 *   finished reading call e.
 * - Every poll is bounded by weft_state.timeout_ns and the abort flag (weft_spin_check).
 */
#ifndef WEFT_LL_CUH
#define WEFT_LL_CUH

#include "weft/ll_layout.h"
#include "weft/shmem.cuh"

static __device__ __forceinline__ weft_u64_t weft_ll_pack8(unsigned data, unsigned flag) {
  return ((weft_u64_t)flag << 32) | data;
}
static __device__ __forceinline__ unsigned weft_ll_data8(weft_u64_t w) { return (unsigned)w; }
static __device__ __forceinline__ unsigned weft_ll_flag8(weft_u64_t w) { return (unsigned)(w >> 32); }

/* dst: an 8-byte aligned word (local, or a peer's through weft_remote_ptr). */
static __device__ __forceinline__ void weft_ll_store8(weft_u64_t *dst, unsigned data, unsigned flag) {
  asm volatile("st.volatile.global.u64 [%0], %1;" ::"l"(dst), "l"(weft_ll_pack8(data, flag)) : "memory");
}

/* Waits for the word's flag to equal flag; returns its data. */
static __device__ __forceinline__ unsigned weft_ll_load8(const weft_u64_t *src, unsigned flag) {
  weft_u64_t w, start = 0;
  for (unsigned spins = 0;; spins++) {
    asm volatile("ld.volatile.global.u64 %0, [%1];" : "=l"(w) : "l"(src) : "memory");
    if (weft_ll_flag8(w) == flag) return weft_ll_data8(w);
    weft_spin_check(spins, &start, "ll_load8", -1, src, WEFT_CMP_EQ, flag, weft_ll_flag8(w));
  }
}

/* dst: a 16-byte aligned line. */
static __device__ __forceinline__ void weft_ll_store16(void *dst, unsigned d0, unsigned d1,
                                                       unsigned flag) {
  asm volatile("st.volatile.global.v4.u32 [%0], {%1, %2, %3, %4};" ::"l"(dst), "r"(d0), "r"(flag),
               "r"(d1), "r"(flag) : "memory");
}

/* Waits until both flags of the line equal flag; returns the 8 data bytes (d0 low, d1 high). op
 * and peer (the rank whose line it is; -1: unknown) name the wait in a timeout's report. */
static __device__ __forceinline__ weft_u64_t weft_ll_load16(const void *src, unsigned flag,
                                                          const char *op = "ll_load16",
                                                          int peer = -1) {
  unsigned d0, f0, d1, f1;
  weft_u64_t start = 0;
  for (unsigned spins = 0;; spins++) {
    asm volatile("ld.volatile.global.v4.u32 {%0, %1, %2, %3}, [%4];"
                 : "=r"(d0), "=r"(f0), "=r"(d1), "=r"(f1) : "l"(src) : "memory");
    if (f0 == flag && f1 == flag) return ((weft_u64_t)d1 << 32) | d0;
    weft_spin_check(spins, &start, op, peer, (const weft_u64_t *)src, WEFT_CMP_EQ, flag,
                    f0 != flag ? f0 : f1);
  }
}

/* weft_ll_load16 of n <= LINES lines (line i at src + i * stride, rank peer0 + i's where peer0 is
 * not -1) into v[i]: each spin loads every
 * line not yet complete, all in flight before any flag is checked, so a reader of several
 * ranks' lines waits about one round trip after the last arrives, not one a line. (Template
 * parameters here are named as no user's -D macro would be: a module built with -DN=... once
 * broke on `template <int N>`.) */
template <int LINES>
static __device__ __forceinline__ void weft_ll_load16_n(const void *src, weft_u64_t stride, int n,
                                                        unsigned flag, weft_u64_t v[LINES],
                                                        const char *op = "ll_load16",
                                                        int peer0 = -1) {
  if constexpr (LINES == 1) {
    v[0] = weft_ll_load16(src, flag, op, peer0);
  } else {
    unsigned pending = (1u << n) - 1;
    weft_u64_t start = 0;
    for (unsigned spins = 0;; spins++) {
      unsigned d0[LINES], f0[LINES], d1[LINES], f1[LINES];
#pragma unroll
      for (int i = 0; i < LINES; i++)
        if (pending >> i & 1)
          asm volatile("ld.volatile.global.v4.u32 {%0, %1, %2, %3}, [%4];"
                       : "=r"(d0[i]), "=r"(f0[i]), "=r"(d1[i]), "=r"(f1[i])
                       : "l"((const char *)src + i * stride)
                       : "memory");
      int first = -1;
      unsigned seen = 0;
#pragma unroll
      for (int i = 0; i < LINES; i++)
        if (pending >> i & 1) {
          if (f0[i] == flag && f1[i] == flag) {
            v[i] = ((weft_u64_t)d1[i] << 32) | d0[i];
            pending &= ~(1u << i);
          } else if (first < 0) {
            first = i, seen = f0[i] != flag ? f0[i] : f1[i];
          }
        }
      if (!pending) return;
      const weft_u64_t *line = (const weft_u64_t *)((const char *)src + first * stride);
      weft_spin_check(spins, &start, op, peer0 < 0 ? -1 : peer0 + first, line, WEFT_CMP_EQ, flag,
                      seen);
    }
  }
}

/* The 8 payload bytes of line i of an n-byte message at src (zero-padded past n). */
static __device__ __forceinline__ weft_u64_t weft_ll_line_payload_(const char *src, weft_u64_t n,
                                                                   weft_u64_t i, int aligned) {
  if (aligned && 8 * i + 8 <= n) return ((const weft_u64_t *)src)[i];
  weft_u64_t v = 0;
  for (int b = 0; b < 8 && 8 * i + b < n; b++)
    v |= (weft_u64_t)(unsigned char)src[8 * i + b] << (8 * b);
  return v;
}
static __device__ __forceinline__ void weft_ll_line_unpack_(char *dst, weft_u64_t n, weft_u64_t i,
                                                            weft_u64_t v, int aligned) {
  if (aligned && 8 * i + 8 <= n) {
    ((weft_u64_t *)dst)[i] = v;
    return;
  }
  for (int b = 0; b < 8 && 8 * i + b < n; b++) dst[8 * i + b] = (char)(v >> (8 * b));
}

/* The group's threads pack n bytes at src (any n, any alignment; 8-byte aligned src is fastest)
 * into 16-byte lines at dst_ll (symmetric, 16-byte aligned, WEFT_LL_BYTES(n) bytes) on pe, each
 * tagged with flag. No sync at the end: the receiver needs none. */
static __device__ __forceinline__ void weft_ll_push_group_(void *dst_ll, const void *src,
                                                           weft_u64_t n, unsigned flag, int pe,
                                                           int kind) {
  char *d = (char *)weft_remote_ptr(dst_ll, pe);
  const char *s = (const char *)src;
  int aligned = ((weft_u64_t)src & 7) == 0;
  unsigned t = weft_group_lane_(kind), nt = weft_group_size_(kind);
  for (weft_u64_t i = t; i < (n + 7) / 8; i += nt) {
    weft_u64_t v = weft_ll_line_payload_(s, n, i, aligned);
    weft_ll_store16(d + i * 16, (unsigned)v, (unsigned)(v >> 32), flag);
  }
}

/* The group's threads wait for the n-byte message tagged flag in the local LL buffer src_ll and
 * unpack it into dst; the group is synced at the end, so every thread may read all of dst. */
static __device__ __forceinline__ void weft_ll_recv_group_(void *dst, const void *src_ll,
                                                           weft_u64_t n, unsigned flag, int kind) {
  char *d = (char *)dst;
  const char *s = (const char *)src_ll;
  int aligned = ((weft_u64_t)dst & 7) == 0;
  unsigned t = weft_group_lane_(kind), nt = weft_group_size_(kind);
  for (weft_u64_t i = t; i < (n + 7) / 8; i += nt)
    weft_ll_line_unpack_(d, n, i, weft_ll_load16(s + i * 16, flag), aligned);
  weft_group_sync_(kind);
}

static __device__ __forceinline__ void weft_ll_push(void *dst_ll, const void *src, weft_u64_t n,
                                                    unsigned flag, int pe) {
  weft_ll_push_group_(dst_ll, src, n, flag, pe, WEFT_GROUP_THREAD);
}
static __device__ __forceinline__ void weft_ll_push_warp(void *dst_ll, const void *src, weft_u64_t n,
                                                         unsigned flag, int pe) {
  weft_ll_push_group_(dst_ll, src, n, flag, pe, WEFT_GROUP_WARP);
}
static __device__ __forceinline__ void weft_ll_push_block(void *dst_ll, const void *src,
                                                          weft_u64_t n, unsigned flag, int pe) {
  weft_ll_push_group_(dst_ll, src, n, flag, pe, WEFT_GROUP_BLOCK);
}
static __device__ __forceinline__ void weft_ll_recv(void *dst, const void *src_ll, weft_u64_t n,
                                                    unsigned flag) {
  weft_ll_recv_group_(dst, src_ll, n, flag, WEFT_GROUP_THREAD);
}
static __device__ __forceinline__ void weft_ll_recv_warp(void *dst, const void *src_ll, weft_u64_t n,
                                                         unsigned flag) {
  weft_ll_recv_group_(dst, src_ll, n, flag, WEFT_GROUP_WARP);
}
static __device__ __forceinline__ void weft_ll_recv_block(void *dst, const void *src_ll,
                                                          weft_u64_t n, unsigned flag) {
  weft_ll_recv_group_(dst, src_ll, n, flag, WEFT_GROUP_BLOCK);
}

/* ---- LL128: 128-byte lines of 120 payload bytes and an 8-byte flag --------------------------
 * Eight consecutive lanes of a warp (an aligned group: lanes 8g..8g+7) move a line together, lane
 * j its bytes [16j, 16j + 16) in one st.volatile / ld.volatile .v2.u64 of the whole group; the
 * flag is the last 8 bytes (lane 7's second word). The protocol rests on what NCCL's LL128 rests
 * on: a warp's aligned 128-byte store reaches the peer over NVLink as one unit, so a reader whose
 * one 128-byte load sees the flag sees the whole line. Not a PTX guarantee (the LL lines above
 * need only 8-byte single-copy atomicity): NVLink only (weft_comm_init refuses GPUs without
 * native peer atomics, i.e. without NVLink), and the group converged at each store and load (the
 * __syncwarp in both). Flags are epochs (u64, nonzero), areas by parity, never shared with
 * another layout (a flag position there could hold data). */
/* (WEFT_LL128_LINE, _PAYLOAD and _BYTES: weft/ll_layout.h) */

/* The lanes of this thread's group of eight. */
static __device__ __forceinline__ unsigned weft_ll128_mask(void) {
  return 0xffu << (threadIdx.x & 24);
}

/* Every lane of the group: its 16 bytes {w0, w1} of the line at dst (128-byte aligned, local or a
 * peer's); lane 7's w1 must be the flag. */
static __device__ __forceinline__ void weft_ll128_store(void *dst, weft_u64_t w0, weft_u64_t w1) {
  char *d = (char *)dst + 16 * (threadIdx.x & 7);
  __syncwarp(weft_ll128_mask());
  asm volatile("st.volatile.global.v2.u64 [%0], {%1, %2};" ::"l"(d), "l"(w0), "l"(w1) : "memory");
}

/* Every lane of the group: waits until the line at src (local, 128-byte aligned) carries flag
 * and returns its 16 bytes in *w0, *w1 (lane 7's w1 is the flag). */
static __device__ __forceinline__ void weft_ll128_load(const void *src, weft_u64_t flag,
                                                       weft_u64_t *w0, weft_u64_t *w1) {
  const char *s = (const char *)src + 16 * (threadIdx.x & 7);
  unsigned mask = weft_ll128_mask(), last = (threadIdx.x & 31) | 7;
  weft_u64_t start = 0;
  for (unsigned spins = 0;; spins++) {
    __syncwarp(mask);
    asm volatile("ld.volatile.global.v2.u64 {%0, %1}, [%2];" : "=l"(*w0), "=l"(*w1) : "l"(s) : "memory");
    weft_u64_t f = __shfl_sync(mask, *w1, last);
    if (f == flag) return;
    weft_spin_check(spins, &start, "ll128_load", -1, (const weft_u64_t *)src + 15, WEFT_CMP_EQ, flag, f);
  }
}

/* weft_ll128_load of n <= LINES lines (line i at src + i * stride) into w0[i], w1[i]: each spin
 * loads every line whose flag has not come yet, all in flight before any flag is checked, so a
 * reader of several peers' lines waits about one round trip after the last arrives, not one a
 * line. LINES = 1 is weft_ll128_load itself (the loop costs registers: a 2-rank AllReduce in LL128
 * ran 2-7% slower with it, 86 registers against 80). */
template <int LINES>
static __device__ __forceinline__ void weft_ll128_load_n(const void *src, weft_u64_t stride, int n,
                                                         weft_u64_t flag, weft_u64_t w0[LINES],
                                                         weft_u64_t w1[LINES]) {
  if constexpr (LINES == 1) {
    weft_ll128_load(src, flag, &w0[0], &w1[0]);
  } else {
    const char *s = (const char *)src + 16 * (threadIdx.x & 7);
    unsigned mask = weft_ll128_mask(), last = (threadIdx.x & 31) | 7, pending = (1u << n) - 1;
    weft_u64_t start = 0;
    for (unsigned spins = 0;; spins++) {
      __syncwarp(mask);
#pragma unroll
      for (int i = 0; i < LINES; i++)
        if (pending >> i & 1)
          asm volatile("ld.volatile.global.v2.u64 {%0, %1}, [%2];"
                       : "=l"(w0[i]), "=l"(w1[i])
                       : "l"(s + i * stride)
                       : "memory");
      int first = -1; /* (pending and the flags are the group's: so are the branches) */
      weft_u64_t seen = 0;
#pragma unroll
      for (int i = 0; i < LINES; i++)
        if (pending >> i & 1) {
          weft_u64_t f = __shfl_sync(mask, w1[i], last);
          if (f == flag) pending &= ~(1u << i);
          else if (first < 0) first = i, seen = f;
        }
      if (!pending) return;
      const weft_u64_t *line = (const weft_u64_t *)((const char *)src + first * stride);
      weft_spin_check(spins, &start, "ll128_load", -1, line + 15, WEFT_CMP_EQ, flag, seen);
    }
  }
}

#endif
