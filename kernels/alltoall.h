/*
 * kernels/alltoall.h — the plan of one weft_alltoall / weft_alltoallv call: what this rank sends to
 * and receives from each local peer, and which blocks of the kernel copy which part of which
 * chunk. Compiles as host C11 and as NVRTC device code, so that the host (src/ops/alltoall.c)
 * fills exactly what the kernel (kernels/alltoall.cu) reads and the CPU test
 * (tests/cpu/test_alltoall_plan.c) checks the arithmetic of both. Passed to the kernel by value
 * (__grid_constant__: about 2 KiB, no table in device memory, so that a call needs no host copy
 * and a CUDA graph keeps the counts it was captured with).
 *
 * Pairs and blocks: this rank's chunks go out in the order k = 0, 1, ..., world - 1 to local peer
 * weft_a2a_peer(k) = (me + 1 + k) % world (its own chunk, a local copy, last; every rank starts
 * with a different receiver). Pair k is copied by blocks [first_block[k], first_block[k + 1]):
 * its slices, one to WEFT_A2A_MAX_SLICES of them, about WEFT_A2A_SLICE_BYTES each for stores
 * and WEFT_A2A_LL_SLICE_BYTES for LL lines, at most `budget` blocks in all
 * (weft_a2a_plan_blocks). The blocks of a pair whose peer's chunk for this rank comes in LL lines
 * also unpack it, slice s of it each. Slice s covers bytes [lo, hi) of a chunk
 * (weft_a2a_slice): starts are multiples of WEFT_A2A_SLICE_ALIGN, so every slice keeps the
 * chunk's alignment; slices past the end are empty but still counted.
 *
 * Done counts: slice s adds weft_a2a_units(s, slices) to its receiver's count of this sender, and
 * the slices of one pair add exactly WEFT_A2A_UNITS in all, whatever their number (every slice at
 * least 1, so none can be forgotten). After the c-th call every count is c * WEFT_A2A_UNITS, even
 * when calls of different sizes cut their chunks differently.
 */
#ifndef WEFT_ALLTOALL_H
#define WEFT_ALLTOALL_H

#include "weft/state.h"

#if defined(__CUDACC__) || defined(__CUDACC_RTC__)
#define WEFT_A2A_HD static __host__ __device__ __forceinline__
#else
#define WEFT_A2A_HD static inline
#endif

#define WEFT_A2A_UNITS 1024u                /* added to a done count per pair and call */
#define WEFT_A2A_MAX_SLICES 32              /* blocks per pair (<= WEFT_A2A_UNITS) */
/* bytes per block aimed at (stores): a block pushes ~40 GB/s, so 256 KiB slices left calls of
 * 256 KiB-2 MiB on 1-8 blocks (13-16 us at 2 ranks against 11-13.5 with 32 or 64 KiB, h200-x2,
 * dev/collectives/README.md) */
#define WEFT_A2A_SLICE_BYTES (32ull << 10)
#define WEFT_A2A_LL_SLICE_BYTES (8ull << 10) /* LL: payload bytes per block (2 lines a thread) */
#define WEFT_A2A_SLICE_ALIGN 4096ull        /* slice starts, from the chunk's start (whole LL
                                               lines: multiples of 8) */

/* Inbox of a rank (symmetric, [WEFT_MAX_LOCAL_RANKS][WEFT_A2A_INBOX_WORDS] 64-bit words): entry r
 * is written by local rank r before it raises its ready flag here, and says where r wants this
 * rank's chunk and how much it expects (what r sends comes in the chunk's header line). */
#define WEFT_A2A_INBOX_WORDS 2
#define WEFT_A2A_INBOX_DST 0       /* heap offset (in r's heap) of where this rank's chunk lands */
#define WEFT_A2A_INBOX_RECV_BYTES 1 /* bytes r expects from this rank */

typedef struct weft_a2a_plan {
  /* by local peer p: this rank's chunk for p (bytes from sendbuf, length) and where p's chunk
   * for this rank lands (bytes from recvbuf, length) */
  weft_u64 send_off[WEFT_MAX_LOCAL_RANKS];
  weft_u64 send_bytes[WEFT_MAX_LOCAL_RANKS];
  weft_u64 recv_off[WEFT_MAX_LOCAL_RANKS];
  weft_u64 recv_bytes[WEFT_MAX_LOCAL_RANKS];
  /* by pair k (not by peer): its first block; first_block[world] is the grid size */
  unsigned short first_block[WEFT_MAX_LOCAL_RANKS + 1];
} weft_a2a_plan_t;

/* The local peer that pair k sends to. */
WEFT_A2A_HD int weft_a2a_peer(int k, int me, int world) { return (me + 1 + k) % world; }

/* Bytes [*lo, *hi) of an n-byte chunk that slice s of `slices` copies. */
WEFT_A2A_HD void weft_a2a_slice(weft_u64 n, int s, int slices, weft_u64 *lo, weft_u64 *hi) {
  weft_u64 per = (n + (weft_u64)slices - 1) / (weft_u64)slices;
  per = (per + WEFT_A2A_SLICE_ALIGN - 1) / WEFT_A2A_SLICE_ALIGN * WEFT_A2A_SLICE_ALIGN;
  weft_u64 a = per * (weft_u64)s;
  *lo = a < n ? a : n;
  *hi = n - *lo < per ? n : *lo + per;
}

/* What slice s of `slices` adds to the receiver's done count (the slices add WEFT_A2A_UNITS). */
WEFT_A2A_HD weft_u64 weft_a2a_units(int s, int slices) {
  return (weft_u64)WEFT_A2A_UNITS * (weft_u64)(s + 1) / (weft_u64)slices -
         (weft_u64)WEFT_A2A_UNITS * (weft_u64)s / (weft_u64)slices;
}

/* Block b's pair *k, its slice *s and the pair's number of slices (binary search over
 * first_block). */
WEFT_A2A_HD void weft_a2a_block(const weft_a2a_plan_t *plan, int world, unsigned b, int *k, int *s,
                                int *slices) {
  int lo = 0, hi = world - 1; /* the last k with first_block[k] <= b */
  while (lo < hi) {
    int mid = (lo + hi + 1) / 2;
    if (plan->first_block[mid] <= b) lo = mid;
    else hi = mid - 1;
  }
  *k = lo;
  *s = (int)b - (int)plan->first_block[lo];
  *slices = (int)plan->first_block[lo + 1] - (int)plan->first_block[lo];
}

/* A copy of n bytes from src to dst whose addresses are misaligned differently (mod 16), as
 * kernels/alltoall.cu's a2a_copy makes it with 16-byte stores: bytes [0, *head) one by one, then
 * *nv vectors at dst + *head (16-byte aligned), vector i put together from the aligned source
 * vectors at src + *head - *r + 16 i and the next one (*r, 1 to 15: where in the first of them
 * the vector's bytes start), then bytes [*head + 16 *nv, n) one by one. Every source vector read
 * lies inside [src, src + n). */
WEFT_A2A_HD void weft_a2a_shift_plan(weft_u64 dst, weft_u64 src, weft_u64 n, weft_u64 *head,
                                     unsigned *r, weft_u64 *nv) {
  weft_u64 h = (16 - (dst & 15)) & 15;
  unsigned rr = (unsigned)((src + h) & 15);
  if (h < rr) h += 16; /* the first source vector, at src + h - rr, starts inside src */
  /* the last vector's second source vector ends inside src + n */
  *nv = n + rr >= h + 32 ? (n + rr - h - 16) / 16 : 0;
  *head = h < n ? h : n;
  *r = rr;
}

#if !defined(__CUDACC__) && !defined(__CUDACC_RTC__)
/* Host: cuts each pair into slices, 1 to WEFT_A2A_MAX_SLICES of about slice_bytes of the chunk
 * sent, or of WEFT_A2A_LL_SLICE_BYTES where the pair goes by LL lines (a peer's chunk of fewer
 * than ll_below bytes; those blocks also unpack the peer's chunk for this rank, so a received
 * chunk of fewer than ll_below bytes asks for LL slices of it too), halving the cuts until the
 * grid fits in budget blocks (never fewer than one block per pair), and fills first_block.
 * Returns the grid size. */
WEFT_A2A_HD unsigned weft_a2a_plan_blocks(weft_a2a_plan_t *plan, int me, int world, int budget,
                                          weft_u64 slice_bytes, weft_u64 ll_below) {
  int want[WEFT_MAX_LOCAL_RANKS], total = 0;
  for (int k = 0; k < world; k++) {
    int p = weft_a2a_peer(k, me, world);
    weft_u64 n = plan->send_bytes[p], r = plan->recv_bytes[p];
    weft_u64 per = p != me && n < ll_below ? WEFT_A2A_LL_SLICE_BYTES : slice_bytes;
    weft_u64 w = (n + per - 1) / per;
    if (p != me && r < ll_below && (r + WEFT_A2A_LL_SLICE_BYTES - 1) / WEFT_A2A_LL_SLICE_BYTES > w)
      w = (r + WEFT_A2A_LL_SLICE_BYTES - 1) / WEFT_A2A_LL_SLICE_BYTES;
    want[k] = w < 1 ? 1 : w > WEFT_A2A_MAX_SLICES ? WEFT_A2A_MAX_SLICES : (int)w;
    total += want[k];
  }
  while (total > budget && total > world) {
    total = 0;
    for (int k = 0; k < world; k++) total += want[k] = (want[k] + 1) / 2;
  }
  plan->first_block[0] = 0;
  for (int k = 0; k < world; k++)
    plan->first_block[k + 1] = (unsigned short)(plan->first_block[k] + want[k]);
  return plan->first_block[world];
}
#endif

#endif /* WEFT_ALLTOALL_H */
