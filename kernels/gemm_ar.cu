/*
 * kernels/gemm_ar.cu — the AllReduce half of GEMM + AllReduce's SM form (src/ops/gemm_ar.c
 * launches it on a side stream, on a few SMs, while the GEMM runs on the others).
 *
 * Every rank's GEMM writes its partial product [m, n] (dtype: weft_dtype_t's value) into the
 * symmetric `partial` and, after each stored 64-row sub-tile, adds to counters[first row / rows]
 * (symmetric, release at system scope). Row block b, rows [b * rows, (b + 1) * rows) of m, is
 * stored on a rank once its counter reaches units * (the block's 64-row sub-tiles), units being
 * what one sub-tile row adds over all tile columns (src/ops/gemm.c, weft_gemm_notify_units).
 *
 *   weft_gemm_ar_reduce  A two-shot AllReduce per row block, started as soon as the block is
 *                        stored everywhere: the block's elements (contiguous in partial and in c)
 *                        are cut into world parts of whole 16-byte units, and rank q reduces part
 *                        q: it waits for every rank's counter of the block, sums the world
 *                        partials in rank order (fp32, rounded once: every rank stores the same
 *                        bits) and stores the sum into every rank's c. Each part is cut again into
 *                        pieces of `piece` elements so that the blocks of the grid share even a
 *                        small m; block i takes pieces i, i + grid, ... in row-block order, waiting once for
 *                        each row block it meets.
 *                        Handshake, epoch e of WEFT_EPOCH_GEMM_AR: block 0 sets "ready e" on
 *                        every rank (this rank's counters were reset on its stream before the
 *                        kernel, so peers may read them from now on); every block waits for
 *                        every rank's "ready e" before it reads that rank's counters. The last
 *                        block to finish sets "done e" on every rank and waits for all of them:
 *                        after that no peer reads this rank's partial or counters any more, and
 *                        every peer's stores into this rank's c are visible.
 */
#include <weft/device.cuh>
/* A few SMs pull from the peers: each thread keeps 4 vectors of every source (up to 4) in flight
 * to cover NVLink's load latency (one vector each ran at ~8 GB/s per SM on H200). */
#define WEFT_RED_BATCH 4
#define WEFT_RED_UNROLL 4
#include <weft/reduce.cuh>

#define AR_SLOT WEFT_EPOCH_GEMM_AR

extern "C" __global__ void __launch_bounds__(256) weft_gemm_ar_reduce(const char *partial, char *c, int m,
                                               unsigned long long n, int dtype,
                                               const unsigned long long *counters, int rows,
                                               unsigned long long units,
                                               unsigned long long piece) {
  __shared__ const char *srcs[WEFT_MAX_LOCAL_RANKS];
  __shared__ char *dsts[WEFT_MAX_LOCAL_RANKS];
  int world = weft_state.local_world, me = weft_state.local_rank, first = weft_state.node_first_rank;
  unsigned t = threadIdx.x;
  weft_u64_t e = weft_epoch_begin(AR_SLOT), es = dtype == WEFT_RED_FP32 ? 4 : 2, unit = 16 / es;
  if (blockIdx.x == 0 && t == 0) weft_op_signal_all(WEFT_FLAGS_GEMM_AR_READY, e);
  for (int p = (int)t; p < world; p += (int)blockDim.x)
    if (p != me) weft_op_wait(WEFT_FLAGS_GEMM_AR_READY, p, e, "gemm_ar(ready)");

  /* the pieces of a whole block's part bound every block's (the last block may be shorter) */
  weft_u64_t blocks = ((weft_u64_t)m + rows - 1) / rows;
  weft_u64_t full_part = ((weft_u64_t)rows * n + world * unit - 1) / (world * unit) * unit;
  weft_u64_t per_block = (full_part + piece - 1) / piece, waited = ~0ull;
  for (weft_u64_t item = blockIdx.x; item < blocks * per_block; item += gridDim.x) {
    weft_u64_t b = item / per_block, j = item % per_block;
    weft_u64_t r0 = b * rows, nrows = (weft_u64_t)m - r0 < (weft_u64_t)rows ? (weft_u64_t)m - r0 : rows;
    weft_u64_t len = nrows * n, part = (len + world * unit - 1) / (world * unit) * unit;
    weft_u64_t lo = (weft_u64_t)me * part + j * piece, hi = lo + piece;
    if (hi > (weft_u64_t)(me + 1) * part) hi = (weft_u64_t)(me + 1) * part;
    if (hi > len) hi = len;
    if (lo >= hi) continue; /* uniform over the block */
    weft_u64_t off = (r0 * n + lo) * es, target = units * ((nrows + 63) / 64);
    for (int p = (int)t; p < world; p += (int)blockDim.x) {
      if (b != waited) /* consecutive pieces of one row block wait once (a remote round trip) */
        weft_wait_until((const weft_u64_t *)weft_remote_ptr(counters + b, first + p), WEFT_CMP_GE,
                        target, "gemm_ar(rows stored)", first + p);
      srcs[p] = (const char *)weft_remote_ptr(partial, first + p) + off;
      dsts[p] = (char *)weft_remote_ptr(c, first + (me + p) % world) + off; /* own c first */
    }
    waited = b;
    __syncthreads();
    weft_red_sum_range(srcs, world, dsts, world, hi - lo, dtype, t, blockDim.x);
    __syncthreads(); /* srcs and dsts are rewritten by the next piece */
  }
  __syncthreads();
  if (t == 0 && weft_epoch_last_block(AR_SLOT)) {
    weft_op_signal_all(WEFT_FLAGS_GEMM_AR_DONE, e);
    for (int p = 0; p < world; p++)
      if (p != me) weft_op_wait(WEFT_FLAGS_GEMM_AR_DONE, p, e, "gemm_ar(done)");
    *(volatile weft_u64_t *)weft_sync_word(WEFT_SYNC_EPOCHS + AR_SLOT) = e;
  }
}
