/*
 * kernels/gemm_ar.cu — the AllReduce half of GEMM + AllReduce's SM form (src/ops/gemm_ar.c
 * launches it on a side stream, on a few SMs, while the GEMM runs on the others).
 *
 * Every rank's GEMM writes its partial product [m, n] (dtype: weft_dtype_t's value) into the
 * symmetric `partial` and, after each stored 64-row sub-tile, adds to counters[first row / rows]
 * (release at system scope). Row block b, rows [b * rows, (b + 1) * rows) of m, is stored once
 * its counter reaches units * (the block's 64-row sub-tiles), units being what one row of
 * sub-tiles adds over all tile columns (src/ops/gemm/, weft_gemm_notify_units).
 *
 * A row block's elements (contiguous in partial and in c) are cut into world slices of whole
 * 16-byte units; rank q owns slice q. Each slice is cut into pieces of at most `piece` elements,
 * item i = b * per_block + j being piece j of every slice of block b. Every remote access is a
 * store (NVLink loads from a few SMs ran at ~3 GB/s per SM on H200, one load in flight a thread).
 * A scatter block copies ~24 GB/s, a reducer sums ~15-22 (2 ranks, H100: dev/overlap/README.md);
 * one block can move ~44 GB/s over NVLink with enough bytes in flight (dev/collectives/README.md):
 *
 *   weft_gemm_ar_reduce  blocks [0, scatter): for the items in order, once this rank's row block
 *                        is stored, push piece j of every peer's slice into that peer's staging
 *                        slot of this rank, then +1 on the peer's arrivals[i] (release).
 *                        blocks [scatter, grid): for the items in order, once arrivals[i] reached
 *                        world - 1 and this rank's own block is stored, sum the piece of its own
 *                        slice in rank order (its own partial and the world - 1 staged copies,
 *                        fp32, rounded once: every rank stores the same bits) and store the sum
 *                        into every rank's c. Scatter blocks wait for nothing but this GPU's GEMM,
 *                        so the reducers' waits always end.
 *                        staging: slot p (rank p's pushes) at staging + p * slot_bytes, item i at
 *                        i * item_bytes (a piece's bytes + 16) + (its offset in partial & 15):
 *                        every source of a sum shares its alignment mod 16.
 *                        Handshake, epoch e of WEFT_EPOCH_GEMM_AR: block 0 sets "ready e" on
 *                        every rank (this rank's counters and arrivals were reset on its stream
 *                        before the kernel, and its previous call's reads of staging are over);
 *                        every block waits for every rank's "ready e" before it pushes to that
 *                        rank. The last block to finish sets "done e" on every rank and waits for
 *                        all of them: then every peer's stores into this rank's c are visible.
 */
#include <weft/device.cuh>
/* The reducers read local memory only. src/ops/gemm_ar.c compiles this file with WEFT_RED_BATCH =
 * the node's world size (every source in one batch: weft_red_sum_range then double-buffers its
 * loads) and WEFT_RED_UNROLL = 8 / world, at least 1 (16 vectors in flight a thread: two buffers of
 * UNROLL x world). */
// weft-jit-variant: -DWEFT_RED_BATCH=2 -DWEFT_RED_UNROLL=4
// weft-jit-variant: -DWEFT_RED_BATCH=4 -DWEFT_RED_UNROLL=2
// weft-jit-variant: -DWEFT_RED_BATCH=8 -DWEFT_RED_UNROLL=1
#include <weft/reduce.cuh>

#define AR_SLOT WEFT_EPOCH_GEMM_AR

/* 1 (dev/overlap/ar_sm_trace.sh sets it in a copy of the tree): on the call of epoch 3, thread 0
 * of every block printf()s where its time went (ns): waits for stored rows or arrived pieces,
 * copies or sums, releases. */
#ifndef WEFT_GEMM_AR_TRACE
#define WEFT_GEMM_AR_TRACE 0
#endif
#if WEFT_GEMM_AR_TRACE
#define AR_STAMP(acc)                                                                             \
  do {                                                                                            \
    weft_u64_t now_ = weft_globaltimer();                                                         \
    acc += now_ - tr_last, tr_last = now_;                                                        \
  } while (0)
#else
#define AR_STAMP(acc) ((void)0)
#endif

/* Piece [lo, lo + cnt) of slice q (slices of `part` elements) of a block of len elements: its
 * first element in the block, and its length once cut at the block's end (possibly 0). */
static __device__ __forceinline__ weft_u64_t ar_piece(int q, weft_u64_t part, weft_u64_t lo,
                                                      weft_u64_t cnt, weft_u64_t len, weft_u64_t *first) {
  weft_u64_t f = (weft_u64_t)q * part + lo;
  *first = f;
  return f >= len ? 0 : f + cnt > len ? len - f : cnt;
}

extern "C" __global__ void __launch_bounds__(256) weft_gemm_ar_reduce(
    const char *partial, char *staging, unsigned long long slot_bytes,
    unsigned long long item_bytes, char *c, int m,
    unsigned long long n, int dtype, const unsigned long long *counters, int rows,
    unsigned long long units, unsigned long long *arrivals, unsigned long long piece,
    int scatter) {
  __shared__ const char *srcs[WEFT_MAX_LOCAL_RANKS];
  __shared__ char *dsts[WEFT_MAX_LOCAL_RANKS];
  int world = weft_state.local_world, me = weft_state.local_rank, first = weft_state.node_first_rank;
  unsigned t = threadIdx.x;
  weft_u64_t e = weft_epoch_begin(AR_SLOT), es = dtype == WEFT_RED_FP32 ? 4 : 2, unit = 16 / es;
  if (blockIdx.x == 0 && t == 0) weft_op_signal_all(WEFT_FLAGS_GEMM_AR_READY, e);
  for (int p = (int)t; p < world; p += (int)blockDim.x)
    if (p != me) weft_op_wait(WEFT_FLAGS_GEMM_AR_READY, p, e, "gemm_ar(ready)");

  int scatterer = (int)blockIdx.x < scatter;
  weft_u64_t role_block = scatterer ? blockIdx.x : blockIdx.x - scatter;
  weft_u64_t role_grid = scatterer ? (weft_u64_t)scatter : gridDim.x - scatter;
  weft_u64_t blocks = ((weft_u64_t)m + rows - 1) / rows;
  /* the first block's slice bounds every block's (the last block may be shorter) */
  weft_u64_t rows0 = (weft_u64_t)m < (weft_u64_t)rows ? (weft_u64_t)m : (weft_u64_t)rows;
  weft_u64_t full_part = (rows0 * n + world * unit - 1) / (world * unit) * unit;
  weft_u64_t per_block = (full_part + piece - 1) / piece, stored = ~0ull;
#if WEFT_GEMM_AR_TRACE
  weft_u64_t tr_start = weft_globaltimer(), tr_last = tr_start, tr_wait = 0, tr_move = 0, tr_rel = 0,
             tr_items = 0;
#endif
  for (weft_u64_t item = role_block; item < blocks * per_block; item += role_grid) {
    weft_u64_t b = item / per_block, j = item % per_block;
    weft_u64_t r0 = b * rows, nrows = (weft_u64_t)m - r0 < (weft_u64_t)rows ? (weft_u64_t)m - r0 : rows;
    weft_u64_t len = nrows * n, part = (len + world * unit - 1) / (world * unit) * unit;
    weft_u64_t lo = j * piece, cnt = lo < part ? part - lo : 0;
    if (cnt > piece) cnt = piece;
    if (cnt == 0) continue; /* uniform over the block */
    if (t == 0 && b != stored) { /* one wait per row block a block meets */
      weft_wait_until(counters + b, WEFT_CMP_GE, units * ((nrows + 63) / 64), "gemm_ar(rows stored)",
                      weft_state.rank);
      stored = b;
    }
#if WEFT_GEMM_AR_TRACE
    tr_items++;
#endif
    if (scatterer) {
      __syncthreads(); /* the rows are stored */
      AR_STAMP(tr_wait);
      for (int k = 1; k < world; k++) {
        int q = weft_local_peer(k);
        weft_u64_t qlo, qn = ar_piece(q, part, lo, cnt, len, &qlo);
        const char *src = partial + (r0 * n + qlo) * es;
        char *dst = staging + (weft_u64_t)me * slot_bytes + item * item_bytes + ((weft_u64_t)src & 15);
        weft_copy_group((char *)weft_remote_ptr(dst, first + q), src, qn * es, t, blockDim.x);
      }
      __syncthreads();
      AR_STAMP(tr_move);
      if (t == 0)
        for (int k = 1; k < world; k++)
          weft_red_release((weft_u64_t *)weft_remote_ptr(arrivals + item, weft_local_next(k)), 1);
      AR_STAMP(tr_rel);
    } else {
      weft_u64_t mlo, mn = ar_piece(me, part, lo, cnt, len, &mlo);
      weft_u64_t off = (r0 * n + mlo) * es;
      if (t == 0)
        weft_wait_until(arrivals + item, WEFT_CMP_GE, (weft_u64_t)(world - 1), "gemm_ar(pieces arrived)",
                        weft_state.rank);
      for (int p = (int)t; p < world; p += (int)blockDim.x) {
        srcs[p] = p == me ? partial + off
                          : staging + (weft_u64_t)p * slot_bytes + item * item_bytes + ((weft_u64_t)(partial + off) & 15);
        dsts[p] = (char *)weft_remote_ptr(c + off, weft_local_next(p)); /* own c first */
      }
      __syncthreads();
      AR_STAMP(tr_wait);
      weft_red_sum_range(srcs, world, dsts, world, mn, dtype, t, blockDim.x);
      __syncthreads(); /* srcs and dsts are rewritten by the next item */
      AR_STAMP(tr_move);
    }
  }
  __syncthreads();
#if WEFT_GEMM_AR_TRACE
  if (t == 0 && e == 3)
    printf("gemm_ar trace rank %d block %d %s: %llu items, wait %llu move %llu release %llu, "
           "total %llu ns\n", me, blockIdx.x, scatterer ? "scatter" : "reduce", tr_items, tr_wait,
           tr_move, tr_rel, weft_globaltimer() - tr_start);
#endif
  if (t == 0) weft_epoch_done_all(AR_SLOT, WEFT_FLAGS_GEMM_AR_DONE, e, "gemm_ar(done)");
}
