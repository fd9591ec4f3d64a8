/*
 * dev/collectives/red_push.cu — ReduceScatter and AllReduce two-shot by SM pushes: the question
 * whether they beat weft's pull forms (kernels/reduce.cu weft_red_pull) and NCCL at 4 ranks. Four
 * GPUs' SM pushes move 354 GB/s a direction against 321 for pulls (bench/results/
 * 2026-11-26-nvlink-h200x4.md), which bounds a push ReduceScatter at 568 us for 256 MB (NCCL
 * 672) and a push-push AllReduce at ~1136 us (NCCL 1183). Measured, it loses to the pull forms
 * (README.md: its pushers move ~280 GB/s, not 354). Driven by dev/overlap/red_push_dev.c; its
 * protocol is modelled by dev/collectives/red_push_sim.py and its index arithmetic emulated by
 * dev/collectives/red_push_emu.py.
 *
 * Segment q of the array (elements [q * per, min((q + 1) * per, total))) is owned by rank q.
 * Rounds of slices x piece elements of every segment; slice s of round r is the piece at
 * r * slices * piece + s * piece. Blocks: (world - 1) x slices pushers, then slices reducers
 * (grid world x slices <= 128, at most one block an SM: every block resident).
 *   pusher (peer q, slice s): for each round, once owner q has reduced the round that last used
 *     the staging ring's entry (freed count; the ring holds `depth` rounds), copies this rank's
 *     piece of segment q into q's staging [round % depth][this rank][s] and adds 1 to q's
 *     arrival count [this rank][s] (release).
 *   reducer (slice s): for each round, once every peer's piece has arrived, sums the ranks'
 *     pieces in rank order (its own from send) in fp32, rounds once and stores the sums in recv
 *     (ReduceScatter: this rank's recv; AllReduce: every rank's recv at the segment's place),
 *     then adds 1 to every peer's freed count [this rank][s] (AllReduce: after the sums landed).
 *     AllReduce: at the end waits for every owner's freed counts of slice s to reach the call's
 *     last round (their sums landed here). One count for both: the counts are cumulative over
 *     every call, ReduceScatter or AllReduce (a separate done count raised by AllReduce calls
 *     alone fell behind the rounds of both and hung red_push_dev at its first AllReduce).
 * Counts are cumulative over the calls (rounds of the earlier calls: sync word DEV_EPOCH_BASE,
 * raised by the last block); block 0 first sets "ready e" (the reductions' epoch) on every rank
 * and every pusher waits for its owner's: the owner has finished its earlier calls, so no
 * staging is still read by any algorithm.
 */
#include <weft/device.cuh>
#include <weft/reduce.cuh>

#define RED_SLOT WEFT_EPOCH_REDUCE
#define DEV_EPOCH_BASE WEFT_EPOCH_USER0 /* rounds of the earlier calls */
#define DEV_FLAGS_ARRIVED 24 /* [sender * slices + s] at the owner (two slots: slices x ranks <= 128) */
#define DEV_FLAGS_FREED 26   /* [owner * slices + s] at the sender (two slots) */

/* The block copies bytes from src to dst, 16-byte vectors 4 in flight a thread where both are
 * aligned, bytes otherwise (a dev program: correct, not fast, at odd offsets). */
static __device__ void push_copy(char *dst, const char *src, weft_u64_t bytes) {
  weft_u64_t t = threadIdx.x, nt = blockDim.x, nv = 0;
  if (((weft_u64_t)dst | (weft_u64_t)src) % 16 == 0) {
    nv = bytes / 16;
    const uint4 *s4 = (const uint4 *)src;
    uint4 *d4 = (uint4 *)dst;
    for (weft_u64_t v = t; v < nv; v += 4 * nt) {
      uint4 x[4];
#pragma unroll
      for (int u = 0; u < 4; u++)
        if (v + u * nt < nv) x[u] = s4[v + u * nt];
#pragma unroll
      for (int u = 0; u < 4; u++)
        if (v + u * nt < nv) d4[v + u * nt] = x[u];
    }
  }
  for (weft_u64_t i = nv * 16 + t; i < bytes; i += nt) dst[i] = src[i];
}

static __device__ __forceinline__ weft_u64_t seg_elems(weft_u64_t total, weft_u64_t per, int q) {
  weft_u64_t lo = (weft_u64_t)q * per;
  return lo < total ? (total - lo < per ? total - lo : per) : 0;
}

/* send: [total] elements (ReduceScatter: world segments of per); recv: ReduceScatter [per],
 * AllReduce [total] (symmetric). stage: symmetric [depth][world][slices][piece] elements. */
extern "C" __global__ void __launch_bounds__(512) red_push(const char *send, char *recv,
                                                          unsigned long long total,
                                                          unsigned long long per, int dtype,
                                                          int allreduce, char *stage,
                                                          unsigned long long piece, int slices,
                                                          int depth) {
  __shared__ const char *srcs[WEFT_MAX_LOCAL_RANKS];
  __shared__ char *dsts[WEFT_MAX_LOCAL_RANKS];
  int world = weft_state.local_world, me = weft_state.local_rank, first = weft_state.node_first_rank;
  unsigned t = threadIdx.x, b = blockIdx.x;
  weft_u64_t e = weft_epoch_begin(RED_SLOT);
  weft_u64_t b0 = *(volatile weft_u64_t *)weft_sync_word(WEFT_SYNC_EPOCHS + DEV_EPOCH_BASE);
  weft_u64_t elem = dtype == WEFT_RED_FP32 ? 4 : 2, round = (weft_u64_t)slices * piece;
  weft_u64_t rounds = (per + round - 1) / round;
  int pushers = (world - 1) * slices, s = (int)b < pushers ? (int)b % slices : (int)b - pushers;
#define STAGE(k, r) (stage + (((((k) % depth) * world + (r)) * slices + s) * piece) * elem)
  if ((int)b < pushers) {
    int q = (me + (int)b / slices + 1) % world;
    if (t == 0) {
      if (b == 0) weft_op_signal_all(WEFT_FLAGS_RED_READY, e);
      weft_op_wait(WEFT_FLAGS_RED_READY, q, e, "red_push(ready)");
    }
    weft_u64_t len = seg_elems(total, per, q);
    for (weft_u64_t r = 0; r < rounds; r++) {
      weft_u64_t k = b0 + r, lo = r * round + (weft_u64_t)s * piece;
      weft_u64_t cnt = lo < len ? (len - lo < piece ? len - lo : piece) : 0;
      if (t == 0 && k >= (weft_u64_t)depth)
        weft_wait_until(weft_op_flags(DEV_FLAGS_FREED) + q * slices + s, WEFT_CMP_GE, k - depth + 1,
                        "red_push(staging free)", first + q);
      __syncthreads();
      push_copy((char *)weft_remote_ptr(STAGE(k, me), first + q),
                send + ((weft_u64_t)q * per + lo) * elem, cnt * elem);
      __syncthreads();
      if (t == 0) {
        weft_fence();
        weft_red_release((weft_u64_t *)weft_remote_ptr(weft_op_flags(DEV_FLAGS_ARRIVED) + me * slices + s,
                                                       first + q), 1);
      }
    }
  } else {
    weft_u64_t len = seg_elems(total, per, me);
    for (weft_u64_t r = 0; r < rounds; r++) {
      weft_u64_t k = b0 + r, lo = r * round + (weft_u64_t)s * piece;
      weft_u64_t cnt = lo < len ? (len - lo < piece ? len - lo : piece) : 0;
      for (int p = (int)t; p < world; p += (int)blockDim.x) {
        if (p != me)
          weft_wait_until(weft_op_flags(DEV_FLAGS_ARRIVED) + p * slices + s, WEFT_CMP_GE, k + 1,
                          "red_push(arrival)", first + p);
        srcs[p] = p == me ? send + ((weft_u64_t)me * per + lo) * elem : STAGE(k, p);
        int d = (me + p) % world; /* own recv first, then the next ranks' */
        dsts[p] = allreduce ? (char *)weft_remote_ptr(recv + ((weft_u64_t)me * per + lo) * elem, first + d)
                            : recv + lo * elem;
      }
      __syncthreads();
      weft_red_sum_range(srcs, world, dsts, allreduce ? world : 1, cnt, dtype, t, blockDim.x);
      __syncthreads();
      if (t == 0) {
        weft_fence();
        for (int p = 0; p < world; p++)
          if (p != me)
            weft_red_release((weft_u64_t *)weft_remote_ptr(weft_op_flags(DEV_FLAGS_FREED) + me * slices + s,
                                                           first + p), 1);
      }
    }
    if (allreduce)
      for (int q = (int)t; q < world; q += (int)blockDim.x)
        if (q != me)
          weft_wait_until(weft_op_flags(DEV_FLAGS_FREED) + q * slices + s, WEFT_CMP_GE, b0 + rounds,
                          "red_push(sums landed)", first + q);
  }
#undef STAGE
  __syncthreads();
  if (t == 0 && weft_epoch_arrive(RED_SLOT)) {
    weft_epoch_publish(DEV_EPOCH_BASE, b0 + rounds);
    weft_epoch_publish(RED_SLOT, e);
  }
}
