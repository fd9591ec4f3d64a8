/*
 * kernels/reduce.cu — ReduceScatter and AllReduce over the ranks of a node (src/ops/reduce.c
 * launches). fp16, bf16 or fp32 elements (dtype = weft_dtype_t's value) combined by the
 * module's WEFT_RED_OP (weft/reduce.cuh; one module an operator, sum by default) in fp32 in rank
 * order 0, 1, ..., world - 1 and rounded once, so that every rank computes bit-identical results
 * ("sums" below). Counts are in elements; every buffer is aligned to its element size.
 *
 * Nothing is reset between calls: every call of either op (every algorithm; a copy-engine
 * call's rounds share one) runs under this rank's WEFT_EPOCH_REDUCE epoch e, one more than the
 * last call's; flags are set to e and waited for with >= e, so calls of different algorithms may
 * follow each other in any order. Every call of every algorithm returns only after every rank
 * has started it, which is what lets the LL areas be reused by epoch parity (see weft_red_ll).
 *
 *   weft_red_pull       one kernel, three uses. Block 0 sets "ready e" on every rank; every
 *                       block waits for every rank's ready (its send may be read, its recv
 *                       written), reduces elements [0, n) of every rank's symmetric `send` in
 *                       rank order and stores the sums at `recv` (push = 0: this rank's; push = 1:
 *                       every rank's, the same symmetric address). The last block to finish sets
 *                       "done e" on every rank and waits for every rank's, so that no rank
 *                       returns while a peer may still read its send or write its recv.
 *                         ReduceScatter SM:      send = my segment of sendbuf, push = 0
 *                         AllReduce SM one-shot: send = sendbuf, n = count, push = 0
 *                         AllReduce two-shot:    send, recv = my 1/world of both, push = 1 (the
 *                                                all-gather is fused into the reduction's stores)
 *   weft_red_push2      AllReduce two-shot by pushes, up to WEFT_ALLREDUCE_PUSH_BYTES (see
 *                       there): no handshake, and 8-15% faster than the pull at 4-32 MiB on 4
 *                       H200s (its fixed cost, ~15 us, only 2 under the pull's).
 *   weft_red_ll2        AllReduce two-shot in LL lines (see there): a rank pushes
 *                       2 (world - 1) / world of the array, not world - 1 arrays, for one more
 *                       NVLink hop.
 *   weft_red_ll128      the same in LL128 lines (120 payload bytes a 128-byte line, weft/ll.cuh).
 *   weft_red_ll         AllReduce one-shot in LL lines (16 bytes: 8 payload bytes and the flag e
 *                       twice): every rank pushes its whole array into its slot of every rank's
 *                       LL area (parity of e), then each rank reduces the world slots (for
 *                       ReduceScatter, each rank's segment goes to its owner only). send NULL:
 *                       the reduction only, the lines pushed by another kernel under the same
 *                       epoch (GEMM + AllReduce's LL form: kernels/gemm/gemm.cu, WEFT_GEMM_LL). No
 *                       handshake: a sender reaches call e + 2 (the same parity) only after
 *                       finishing call e + 1, which needed every rank to have started e + 1,
 *                       i.e. to have finished reading call e's lines.
 *   weft_red_ll, _ll2 and _ll128 poll WEFT_RED_LL_BATCH ranks' lines at once (below).
 *   Copy-engine ReduceScatter (Triton-distributed, §3.3, Algorithm 3), in rounds: in round r
 *   every rank's copy engines put its piece r of every segment into the owner's staging area,
 *   parity r & 1 (src/ops/reduce.c), and every owner reduces its round r while the copies of
 *   round r + 1 run.
 *   weft_red_ce_enter   once a call, before any copy: "ready e" to every rank, wait for all
 *                       (every rank has finished its earlier calls: no staging is still read,
 *                       whichever algorithm used it).
 *   weft_red_ce_step    on the side stream between rounds, one thread a peer: after a round's
 *                       copies (sent), +1 on every receiver's arrival count of this rank
 *                       (release) and a round counted in this rank's sync word
 *                       WEFT_EPOCH_RS_CE_SENT (only the side stream touches it: the epochs may
 *                       already have been raised by the reductions on the caller's stream);
 *                       before the next round's copies (next), every owner must have reduced the
 *                       round that last used the parity they are about to write (round c - 2, c
 *                       the rounds sent before: its freed count >= c - 1). A kernel a round, not
 *                       a copy: the owner waits for the whole round anyway, and every kernel
 *                       between two copies costs the stream a few microseconds. Counts, not
 *                       epochs: the c-th copy-engine round leaves every arrival and freed count
 *                       at c.
 *   weft_red_ce_wait    on the caller's stream, one block: waits for every peer's arrival count
 *                       to reach this round's c (WEFT_EPOCH_RS_CE).
 *   weft_red_ce_reduce  then reduces my own piece (from sendbuf) and the peers' (from staging)
 *                       in rank order, raises c, and gives every peer +1 on its freed count of
 *                       this rank; the last round of a call also raises the call's epoch e.
 *   weft_red_ring       ReduceScatter over a ring, for GPUs without a full-bandwidth link to
 *                       every peer: each rank writes only into its right neighbour's staging
 *                       area. Segment j's partial sum starts at rank j + 1 and travels
 *                       j + 1 -> j + 2 -> ... -> j, each rank adding its own part; at step s
 *                       rank r sends the partial of segment (r - s - 1) mod world, and at step
 *                       world - 1 adds its own part to the partial of its own segment and stores
 *                       it. Partials travel in fp32 and are rounded once, at the owner; the
 *                       order is the ring's, from the owner's right neighbour on (not rank
 *                       order: its sums may differ from the other forms' in the last bit).
 *                       Grid: WEFT_MAX_LOCAL_RANKS blocks in every call (every call must advance
 *                       every count word alike), block b the b-th slice of every step, in rounds
 *                       of slices x per elements of the segment that fit the staging area twice
 *                       (two parities: a step writes parity k & 1 of its cumulative index k).
 *                       Counts per slice, cumulative over the ring calls (the steps of the
 *                       earlier calls in this rank's sync word WEFT_EPOCH_RS_RING, alike on every
 *                       rank): word b of WEFT_FLAGS_RED_RING here counts the left neighbour's
 *                       steps of slice b that landed; word b of WEFT_FLAGS_RED_RING_FREE on the
 *                       left neighbour counts the steps of slice b read here, so that it writes
 *                       a parity again only once its previous step there has been read (per
 *                       slice: a count over all slices would let one slice run ahead on
 *                       another's steps; dev/collectives/ring_sim.py models it). The first
 *                       writes of a call wait for the right neighbour's ready (its earlier calls
 *                       are done with its staging, which the copy-engine form shares). No peer
 *                       reads this rank's sendbuf or recvbuf, and the last step's partial comes
 *                       through every other rank: the call returns only after every rank has
 *                       started it.
 */
#include <weft/device.cuh>

#define RED_SLOT WEFT_EPOCH_REDUCE
#define RED_LL128_WORDS (WEFT_LL128_PAYLOAD / 8) /* payload words of an LL128 line */

#include <weft/reduce.cuh>

/* ---- pull: ReduceScatter SM, AllReduce one-shot and two-shot ------------------------------- */

/* 512 threads (src/ops/reduce.c, RED_THREADS): the bound keeps the sums within 128 registers. */
extern "C" __global__ void __launch_bounds__(512) weft_red_pull(const char *send, char *recv,
                                                               unsigned long long n, int dtype, int push) {
  __shared__ const char *srcs[WEFT_MAX_LOCAL_RANKS];
  __shared__ char *dsts[WEFT_MAX_LOCAL_RANKS];
  int world = weft_state.local_world, me = weft_state.local_rank, first = weft_state.node_first_rank;
  unsigned t = threadIdx.x;
  weft_u64_t e = weft_epoch_begin(RED_SLOT);
  if (blockIdx.x == 0 && t == 0) weft_op_signal_all(WEFT_FLAGS_RED_READY, e);
  for (int p = (int)t; p < world; p += (int)blockDim.x) {
    srcs[p] = (const char *)weft_remote_ptr(send, first + p);
    dsts[p] = push ? (char *)weft_remote_ptr(recv, weft_local_next(p)) : recv; /* own first */
    if (p != me) weft_op_wait(WEFT_FLAGS_RED_READY, p, e, push ? "allreduce(ready)" : "reduce(ready)");
  }
  __syncthreads();
  weft_red_sum_range(srcs, world, dsts, push ? world : 1, n, dtype,
                blockIdx.x * (weft_u64_t)blockDim.x + t, gridDim.x * (weft_u64_t)blockDim.x);
  __syncthreads();
  if (t == 0) weft_epoch_done_all(RED_SLOT, WEFT_FLAGS_RED_DONE, e, push ? "allreduce(done)" : "reduce(done)");
}

/* ---- push two-shot AllReduce, push ReduceScatter ------------------------------------------- */

/* Rank q owns segment q: elements [q * per, min((q + 1) * per, n)); block b of the grid owns slice
 * b of every segment: its elements [b * slice, (b + 1) * slice) (slice a multiple of 8; per too
 * for the AllReduce). Block b:
 *   1. puts slice b of every peer q's segment of send into q's staging, slot [e & 1][this rank]
 *      (at the segment's offset mod 16, so that every source of the sums shares it), then sets
 *      q's PUSHED[b][this rank] to e (release after the block's stores);
 *   2. waits for every peer's PUSHED[b][p] here, sums slice b of this rank's segment in rank order
 *      (its own part from send, the peers' from staging) and stores the sums: gather 1
 *      (AllReduce) into every rank's recv at the segment's place, then sets SUMS[b][this rank] to
 *      e on every peer; gather 0 (ReduceScatter) into this rank's recv, [per] elements;
 *   3. gather 1: waits for every peer's SUMS[b][p] here (slice b of every segment is in recv).
 * No block waits for another block of its own grid. Staging by the parity of e: a rank starts
 * call e only after finishing e - 1, which needed every peer to have started e - 1, i.e. to have
 * finished e - 2's reads of that parity (every algorithm's calls return only after every rank has
 * started them; here step 2's PUSHED waits see to it, step 3 is for recv only). The flags hold
 * epochs (no reset; both ops count on RED_SLOT). In place is safe: a peer overwrites slice b of
 * segment q in recv (its sums) only after this rank's block b pushed it; a ReduceScatter's sums
 * overwrite only the elements their thread has read. stage: [2][world][slot_bytes] symmetric. */
static __device__ __forceinline__ weft_u64_t red_push2_count(int q, weft_u64_t n, weft_u64_t per,
                                                             weft_u64_t lo, weft_u64_t slice) {
  weft_u64_t s0 = (weft_u64_t)q * per + lo, end = (weft_u64_t)(q + 1) * per; /* the slice's first */
  if (end > n) end = n;                                                       /* the segment's end */
  if (end > s0 + slice) end = s0 + slice;
  return s0 < end ? end - s0 : 0;
}
/* flag (this rank's word of a flag array) set to e on every peer, with release */
static __device__ __forceinline__ void red_push2_signal(weft_u64_t *flag, weft_u64_t e) {
  for (int k = 1; k < weft_state.local_world; k++)
    weft_st_release((weft_u64_t *)weft_remote_ptr(flag, weft_local_next(k)), e);
}
extern "C" __global__ void __launch_bounds__(512)
    weft_red_push2(const char *send, char *recv, unsigned long long n, unsigned long long per,
                   unsigned long long slice, int dtype, char *stage, unsigned long long slot_bytes,
                   int gather) {
  weft_pdl_begin(); /* launched programmatic (src/ops) */
  __shared__ const char *srcs[WEFT_MAX_LOCAL_RANKS];
  __shared__ char *dsts[WEFT_MAX_LOCAL_RANKS];
  int world = weft_state.local_world, me = weft_state.local_rank, first = weft_state.node_first_rank;
  unsigned t = threadIdx.x, b = blockIdx.x;
  weft_u64_t e = weft_epoch_begin(RED_SLOT), es = dtype == WEFT_RED_FP32 ? 4 : 2;
  weft_u64_t lo = (weft_u64_t)b * slice;
#define RED_PUSH2_ALIGN(q) (((weft_u64_t)send + (weft_u64_t)(q) * per * es) & 15) /* segment q's */
  char *parity = stage + (e & 1) * (weft_u64_t)world * slot_bytes;
  weft_u64_t *pushed = weft_op_flags(WEFT_FLAGS_RED_PUSHED) + (weft_u64_t)b * world;
  weft_u64_t *sums = weft_op_flags(WEFT_FLAGS_RED_SUMS) + (weft_u64_t)b * world;
  for (int k = 1; k < world; k++) {
    int q = weft_local_peer(k);
    weft_u64_t cnt = red_push2_count(q, n, per, lo, slice);
    char *dst = parity + (weft_u64_t)me * slot_bytes + RED_PUSH2_ALIGN(q) + lo * es;
    weft_copy_group((char *)weft_remote_ptr(dst, first + q), send + ((weft_u64_t)q * per + lo) * es,
                    cnt * es, t, blockDim.x);
  }
  __syncthreads();
  if (t == 0) red_push2_signal(pushed + me, e);
  for (int p = (int)t; p < world; p += (int)blockDim.x) {
    srcs[p] = p == me ? send + ((weft_u64_t)me * per + lo) * es
                      : parity + (weft_u64_t)p * slot_bytes + RED_PUSH2_ALIGN(me) + lo * es;
    dsts[p] = gather ? (char *)weft_remote_ptr(recv + ((weft_u64_t)me * per + lo) * es, weft_local_next(p))
                     : recv + lo * es;
    if (p != me)
      weft_wait_until(pushed + p, WEFT_CMP_GE, e, gather ? "allreduce(pushed)" : "reduce_scatter(pushed)",
                      first + p);
  }
#undef RED_PUSH2_ALIGN
  __syncthreads();
  weft_red_sum_range(srcs, world, dsts, gather ? world : 1, red_push2_count(me, n, per, lo, slice), dtype,
                     t, blockDim.x);
  __syncthreads();
  if (gather) {
    if (t == 0) red_push2_signal(sums + me, e);
    for (int p = (int)t; p < world; p += (int)blockDim.x)
      if (p != me) weft_wait_until(sums + p, WEFT_CMP_GE, e, "allreduce(sums)", first + p);
    __syncthreads();
  }
  if (t == 0) weft_epoch_finish(RED_SLOT, e);
}

/* ---- LL one-shot AllReduce ------------------------------------------------------------------ */

/* The 8 bytes of line l of an n-byte array (zero past n): the padding adds zeros to the sums. */
static __device__ __forceinline__ weft_u64_t red_ll_get(const unsigned char *p, weft_u64_t n,
                                                        weft_u64_t l) {
  weft_u64_t b = l * 8, v = 0;
  if (b + 8 <= n && ((weft_u64_t)(p + b) & 7) == 0) return *(const weft_u64_t *)(p + b);
  for (int k = 0; k < 8 && b + k < n; k++) v |= (weft_u64_t)p[b + k] << (8 * k);
  return v;
}
static __device__ __forceinline__ void red_ll_put(unsigned char *p, weft_u64_t n, weft_u64_t l,
                                                  weft_u64_t v) {
  weft_u64_t b = l * 8;
  if (b + 8 <= n && ((weft_u64_t)(p + b) & 7) == 0) {
    *(weft_u64_t *)(p + b) = v;
    return;
  }
  for (int k = 0; k < 8 && b + k < n; k++) p[b + k] = (unsigned char)(v >> (8 * k));
}

/* The ranks' lines an LL reader (a thread; LL128: a group) polls at once (weft_ll_load16_n,
 * weft_ll128_load_n). src/ops compiles this file with 4 above 2 ranks, 1 (one rank's line at a
 * time) else: at 4 ranks 4 at once ran 8 B-8 KiB ~0.35 us, 128 KiB 0.6, 1 MiB 0.6, 4 MiB 2 us
 * faster; at 2 ranks the batched LL128 loop cost 2-12% (more registers) (h200-x4, 2026-11-26,
 * bench/results/2026-11-26-collectives-h200x4.md, "AllReduce in LL128 lines: four ranks' lines
 * polled at once"). */
// weft-jit-variant: -DWEFT_RED_LL_BATCH=1
// weft-jit-variant: -DWEFT_RED_LL_BATCH=4
// and each other operator (src/ops/reduce.c's red_load), at both:
// weft-jit-variant: -DWEFT_RED_LL_BATCH=1 -DWEFT_RED_OP=1
// weft-jit-variant: -DWEFT_RED_LL_BATCH=4 -DWEFT_RED_OP=1
// weft-jit-variant: -DWEFT_RED_LL_BATCH=1 -DWEFT_RED_OP=2
// weft-jit-variant: -DWEFT_RED_LL_BATCH=4 -DWEFT_RED_OP=2
// weft-jit-variant: -DWEFT_RED_LL_BATCH=1 -DWEFT_RED_OP=3
// weft-jit-variant: -DWEFT_RED_LL_BATCH=4 -DWEFT_RED_OP=3
// weft-jit-variant: -DWEFT_RED_LL_BATCH=1 -DWEFT_RED_OP=4
// weft-jit-variant: -DWEFT_RED_LL_BATCH=4 -DWEFT_RED_OP=4
#ifndef WEFT_RED_LL_BATCH
#define WEFT_RED_LL_BATCH 1
#endif

/* Of the ranks' lines from rank p0 on, those polled at once (WEFT_RED_LL_BATCH 1: the constant
 * keeps the one-at-a-time loop's code as it was). */
static __device__ __forceinline__ int red_batch_lines(int world, int p0) {
  const int b = WEFT_RED_LL_BATCH;
  return b == 1 ? 1 : world - p0 < b ? world - p0 : b;
}

/* Line l summed over the world slots of an LL area (slot r: rank r's lines, slot_bytes apart),
 * ranks in order, each line waited for under flag, WEFT_RED_LL_BATCH ranks' lines at once;
 * 8 bytes of sums. */
static __device__ __forceinline__ weft_u64_t red_ll_sum(const unsigned char *slots, weft_u64_t slot_bytes,
                                                        weft_u64_t l, unsigned flag, int dtype,
                                                        const char *op) {
  float acc[4];
  const int world = weft_state.local_world;
  for (int p0 = 0; p0 < world; p0 += WEFT_RED_LL_BATCH) {
    weft_u64_t v[WEFT_RED_LL_BATCH];
    const int n = red_batch_lines(world, p0);
    const unsigned char *line = slots + (weft_u64_t)p0 * slot_bytes + l * 16;
    weft_ll_load16_n<WEFT_RED_LL_BATCH>(line, slot_bytes, n, flag, v, op,
                                        weft_state.node_first_rank + p0);
#pragma unroll
    for (int i = 0; i < WEFT_RED_LL_BATCH; i++)
      if (i < n) {
        weft_red_word_add(acc, (unsigned)v[i], dtype, p0 + i == 0);
        weft_red_word_add(acc + 2, (unsigned)(v[i] >> 32), dtype, p0 + i == 0);
      }
  }
  return (weft_u64_t)weft_red_word_pack(acc, dtype) | (weft_u64_t)weft_red_word_pack(acc + 2, dtype) << 32;
}

/* ll: [2 parities][world][ll_slot_bytes] symmetric; slot r holds rank r's lines. AllReduce
 * (seg_stride 0): every rank gets the whole bytes of send. ReduceScatter: rank p gets the bytes
 * at send + p * seg_stride (its segment). The same thread pushes line l (reading send) and later
 * reduces it (writing recv): in place is safe (ReduceScatter's own segment is line l's too). */
extern "C" __global__ void weft_red_ll(const unsigned char *send, unsigned char *recv,
                                       unsigned long long bytes, int dtype, unsigned char *ll,
                                       unsigned long long ll_slot_bytes,
                                       unsigned long long seg_stride) {
  weft_pdl_begin(); /* launched programmatic (src/ops) */
  int world = weft_state.local_world, me = weft_state.local_rank, first = weft_state.node_first_rank;
  weft_u64_t e = weft_epoch_begin(RED_SLOT);
  unsigned flag = (unsigned)e;
  unsigned char *area = ll + (e & 1) * (weft_u64_t)world * ll_slot_bytes;
  unsigned char *mine = area + (weft_u64_t)me * ll_slot_bytes;
  weft_u64_t lines = (bytes + 7) / 8, l0 = blockIdx.x * (weft_u64_t)blockDim.x + threadIdx.x;
  weft_u64_t step = gridDim.x * (weft_u64_t)blockDim.x;
  for (weft_u64_t l = l0; send && l < lines; l += step) {
    weft_u64_t v = red_ll_get(send, bytes, l);
    for (int k = 0; k < world; k++) {
      int p = weft_local_peer(k);
      if (seg_stride) v = red_ll_get(send + (weft_u64_t)p * seg_stride, bytes, l);
      weft_ll_store16(weft_remote_ptr(mine + l * 16, first + p), (unsigned)v, (unsigned)(v >> 32), flag);
    }
  }
  for (weft_u64_t l = l0; l < lines; l += step)
    red_ll_put(recv, bytes, l,
               red_ll_sum(area, ll_slot_bytes, l, flag, dtype,
                          seg_stride ? "reduce_scatter(ll)" : "allreduce(ll)"));
  __syncthreads();
  if (threadIdx.x == 0) weft_epoch_finish(RED_SLOT, e);
}

/* The bytes of segment p of an array of `bytes` cut into segments of per bytes. */
static __device__ __forceinline__ weft_u64_t red_seg_bytes(weft_u64_t bytes, weft_u64_t per, int p) {
  weft_u64_t lo = (weft_u64_t)p * per;
  return lo < bytes ? (bytes - lo < per ? bytes - lo : per) : 0;
}

/* AllReduce two-shot in LL lines: ReduceScatter LL, then AllGather LL of the sums, in one kernel
 * and without a handshake. Segment p is bytes [p * per, min((p + 1) * per, bytes)) (per a
 * multiple of 8). In this call's parity of the LL area (as weft_red_ll's), the first
 * world * seg_slot bytes take the pieces (slot r: rank r's piece of my segment) and the next
 * world * seg_slot the sums (slot r: rank r's segment summed). The thread of line l of the
 * segments pushes line l of every segment to its owner, then reduces line l of its own segment
 * (ranks in order), pushes the sum to every rank, and last unpacks line l of every rank's sums.
 * It waits only for lines that other ranks' threads of line l push before they wait for
 * anything, so no cycle (the whole grid resident, as for every LL form). Reuse by parity as for
 * weft_red_ll: a rank that finished call e + 1 read every rank's sums of e + 1, so every rank had
 * started e + 1 and finished reading e's lines. */
extern "C" __global__ void weft_red_ll2(const unsigned char *send, unsigned char *recv,
                                        unsigned long long bytes, unsigned long long per, int dtype,
                                        unsigned char *ll, unsigned long long ll_slot_bytes) {
  weft_pdl_begin(); /* launched programmatic (src/ops) */
  int world = weft_state.local_world, me = weft_state.local_rank, first = weft_state.node_first_rank;
  weft_u64_t e = weft_epoch_begin(RED_SLOT);
  unsigned flag = (unsigned)e;
  unsigned char *area = ll + (e & 1) * (weft_u64_t)world * ll_slot_bytes;
  weft_u64_t lines = per / 8, seg_slot = lines * 16;
  unsigned char *pieces = area, *sums = area + (weft_u64_t)world * seg_slot;
  weft_u64_t l0 = blockIdx.x * (weft_u64_t)blockDim.x + threadIdx.x, step = gridDim.x * (weft_u64_t)blockDim.x;
  for (weft_u64_t l = l0; l < lines; l += step)
    for (int k = 0; k < world; k++) {
      int p = weft_local_peer(k);
      weft_u64_t v = red_ll_get(send + (weft_u64_t)p * per, red_seg_bytes(bytes, per, p), l);
      weft_ll_store16(weft_remote_ptr(pieces + (weft_u64_t)me * seg_slot + l * 16, first + p),
                      (unsigned)v, (unsigned)(v >> 32), flag);
    }
  for (weft_u64_t l = l0; l < lines; l += step) {
    weft_u64_t v = red_ll_sum(pieces, seg_slot, l, flag, dtype, "allreduce(ll pieces)");
    for (int k = 0; k < world; k++) {
      int p = weft_local_peer(k);
      weft_ll_store16(weft_remote_ptr(sums + (weft_u64_t)me * seg_slot + l * 16, first + p),
                      (unsigned)v, (unsigned)(v >> 32), flag);
    }
  }
  for (weft_u64_t l = l0; l < lines; l += step)
    for (int p0 = 0; p0 < world; p0 += WEFT_RED_LL_BATCH) {
      weft_u64_t v[WEFT_RED_LL_BATCH];
      const int n = red_batch_lines(world, p0);
      weft_ll_load16_n<WEFT_RED_LL_BATCH>(sums + (weft_u64_t)p0 * seg_slot + l * 16,
                                          seg_slot, n, flag, v, "allreduce(ll sums)", first + p0);
#pragma unroll
      for (int i = 0; i < WEFT_RED_LL_BATCH; i++)
        if (i < n)
          red_ll_put(recv + (weft_u64_t)(p0 + i) * per, red_seg_bytes(bytes, per, p0 + i), l, v[i]);
    }
  __syncthreads();
  if (threadIdx.x == 0) weft_epoch_finish(RED_SLOT, e);
}

/* AllReduce two-shot in LL128 lines (weft/ll.cuh): weft_red_ll2's protocol with 120 payload
 * bytes a 128-byte line instead of 8 a 16-byte one, so a rank pushes 1.07x, not 2x, the bytes of
 * its pieces and sums. A group of eight lanes moves a line: line L of a segment is its bytes
 * [120 L, 120 L + 120), lane j its words 15 L + 2 j and + 1 (lane 7: one word and the flag e).
 * area: [2 parities][2][world][seg_slot] symmetric, of this kernel only: pieces (slot r: rank r's
 * piece of my segment), then sums (slot r: rank r's segment summed). The group of line L pushes
 * line L of every segment to its owner, then sums line L of its own segment in rank order and
 * pushes the sums to every rank, then unpacks line L of every rank's sums: as for weft_red_ll2 it
 * waits only for lines that the other ranks' groups of line L push before they wait for
 * anything (the whole grid resident), and the parity argument is weft_red_ll2's. A group polls
 * WEFT_RED_LL_BATCH ranks' lines at once. */
extern "C" __global__ void weft_red_ll128(const unsigned char *send, unsigned char *recv,
                                          unsigned long long bytes, unsigned long long per, int dtype,
                                          unsigned char *ll, unsigned long long seg_slot) {
  weft_pdl_begin(); /* launched programmatic (src/ops) */
  int world = weft_state.local_world, me = weft_state.local_rank, first = weft_state.node_first_rank;
  weft_u64_t e = weft_epoch_begin(RED_SLOT);
  unsigned char *pieces = ll + (e & 1) * 2 * (weft_u64_t)world * seg_slot;
  unsigned char *sums = pieces + (weft_u64_t)world * seg_slot;
  int j = threadIdx.x & 7;
  weft_u64_t lines = (per + WEFT_LL128_PAYLOAD - 1) / WEFT_LL128_PAYLOAD;
  weft_u64_t g0 = (blockIdx.x * (weft_u64_t)blockDim.x + threadIdx.x) / 8, step = gridDim.x * (weft_u64_t)blockDim.x / 8;
  for (weft_u64_t L = g0; L < lines; L += step) {
    weft_u64_t w = L * RED_LL128_WORDS + 2 * j, off = L * WEFT_LL128_LINE;
    for (int k = 0; k < world; k++) {
      int p = weft_local_peer(k);
      const unsigned char *seg = send + (weft_u64_t)p * per;
      weft_u64_t n = red_seg_bytes(bytes, per, p);
      weft_u64_t w0 = red_ll_get(seg, n, w), w1 = j == 7 ? e : red_ll_get(seg, n, w + 1);
      weft_ll128_store(weft_remote_ptr(pieces + (weft_u64_t)me * seg_slot + off, first + p), w0, w1);
    }
  }
  for (weft_u64_t L = g0; L < lines; L += step) {
    weft_u64_t off = L * WEFT_LL128_LINE, w0, w1;
    float acc[8];
    for (int p0 = 0; p0 < world; p0 += WEFT_RED_LL_BATCH) {
      weft_u64_t a[WEFT_RED_LL_BATCH], b[WEFT_RED_LL_BATCH];
      const int n = red_batch_lines(world, p0);
      weft_ll128_load_n<WEFT_RED_LL_BATCH>(pieces + (weft_u64_t)p0 * seg_slot + off,
                                           seg_slot, n, e, a, b);
#pragma unroll
      for (int i = 0; i < WEFT_RED_LL_BATCH; i++)
        if (i < n) {
          weft_red_word_add(acc, (unsigned)a[i], dtype, p0 + i == 0);
          weft_red_word_add(acc + 2, (unsigned)(a[i] >> 32), dtype, p0 + i == 0);
          weft_red_word_add(acc + 4, (unsigned)b[i], dtype, p0 + i == 0);
          weft_red_word_add(acc + 6, (unsigned)(b[i] >> 32), dtype, p0 + i == 0);
        }
    }
    w0 = (weft_u64_t)weft_red_word_pack(acc, dtype) | (weft_u64_t)weft_red_word_pack(acc + 2, dtype) << 32;
    w1 = j == 7 ? e : (weft_u64_t)weft_red_word_pack(acc + 4, dtype) | (weft_u64_t)weft_red_word_pack(acc + 6, dtype) << 32;
    for (int k = 0; k < world; k++) {
      int p = weft_local_peer(k);
      weft_ll128_store(weft_remote_ptr(sums + (weft_u64_t)me * seg_slot + off, first + p), w0, w1);
    }
  }
  for (weft_u64_t L = g0; L < lines; L += step) {
    weft_u64_t w = L * RED_LL128_WORDS + 2 * j, off = L * WEFT_LL128_LINE;
    for (int p0 = 0; p0 < world; p0 += WEFT_RED_LL_BATCH) {
      weft_u64_t a[WEFT_RED_LL_BATCH], b[WEFT_RED_LL_BATCH];
      const int n = red_batch_lines(world, p0);
      weft_ll128_load_n<WEFT_RED_LL_BATCH>(sums + (weft_u64_t)p0 * seg_slot + off,
                                           seg_slot, n, e, a, b);
#pragma unroll
      for (int i = 0; i < WEFT_RED_LL_BATCH; i++)
        if (i < n) {
          unsigned char *seg = recv + (weft_u64_t)(p0 + i) * per;
          weft_u64_t nb = red_seg_bytes(bytes, per, p0 + i);
          red_ll_put(seg, nb, w, a[i]);
          if (j != 7) red_ll_put(seg, nb, w + 1, b[i]);
        }
    }
  }
  __syncthreads();
  if (threadIdx.x == 0) weft_epoch_finish(RED_SLOT, e);
}

/* ---- copy-engine ReduceScatter -------------------------------------------------------------- */

extern "C" __global__ void weft_red_ce_enter(void) {
  weft_u64_t e = weft_epoch_begin(RED_SLOT);
  if (threadIdx.x == 0) weft_op_signal_all(WEFT_FLAGS_RED_READY, e);
  for (int p = threadIdx.x; p < weft_state.local_world; p += blockDim.x)
    if (p != weft_state.local_rank) weft_op_wait(WEFT_FLAGS_RED_READY, p, e, "reduce_scatter(ready)");
}

/* One block of world threads, on the side stream between rounds (see the file comment).
 * The copies before it on the stream are complete (stream order); the fence and the releases
 * publish them before the counts. */
extern "C" __global__ void weft_red_ce_step(int sent, int next) {
  int me = weft_state.local_rank, world = weft_state.local_world, p = (int)threadIdx.x;
  volatile weft_u64_t *rounds = weft_sync_word(WEFT_SYNC_EPOCHS + WEFT_EPOCH_RS_CE_SENT);
  weft_u64_t c = *rounds + (sent ? 1 : 0);
  __syncthreads(); /* every thread read the count before rank + 1's thread raises it */
  if (p >= world || p == me) return;
  if (sent) {
    weft_u64_t *count = weft_op_flags(WEFT_FLAGS_RED_ARRIVED) + me;
    weft_fence();
    weft_red_release((weft_u64_t *)weft_remote_ptr(count, weft_state.node_first_rank + p), 1);
  }
  if (next && c >= 2) weft_op_wait(WEFT_FLAGS_RED_FREED, p, c - 1, "reduce_scatter(ce staging free)");
  if (sent && p == (me + 1) % world) *rounds = c;
}

/* One block, on the caller's stream before the reduction: waits for every peer's count to reach
 * this round's c. The wait is its own small kernel so that the reduction, whose blocks may fill
 * every SM, starts only once nothing it needs is still to be launched: the peers' signal kernels
 * must find room on their GPUs beside whatever waits there. */
extern "C" __global__ void weft_red_ce_wait(void) {
  weft_u64_t c = weft_epoch_begin(WEFT_EPOCH_RS_CE); /* (raised by the reduction) */
  for (int p = threadIdx.x; p < weft_state.local_world; p += blockDim.x)
    if (p != weft_state.local_rank) weft_op_wait(WEFT_FLAGS_RED_ARRIVED, p, c, "reduce_scatter(ce arrival)");
}

/* recv[i] = sum over ranks r in order of (r == me ? own[i] : staging slot r [i]), i < n; staging:
 * this round's parity. The senders put each piece at (own & 15) past its slot's start, so that
 * slots and own share their alignment mod 16 (own's offset is the same on every rank: sendbuf
 * is symmetric). last: the call's last round. */
extern "C" __global__ void __launch_bounds__(512) weft_red_ce_reduce(const char *own, const char *staging,
                                                                   unsigned long long slot_bytes, char *recv,
                                                                   unsigned long long n, int dtype, int last) {
  __shared__ const char *srcs[WEFT_MAX_LOCAL_RANKS];
  __shared__ char *dsts[1];
  int world = weft_state.local_world, me = weft_state.local_rank;
  unsigned t = threadIdx.x;
  weft_u64_t e = weft_epoch_begin(RED_SLOT), c = weft_epoch_begin(WEFT_EPOCH_RS_CE);
  for (int p = (int)t; p < world; p += (int)blockDim.x)
    srcs[p] = p == me ? own : staging + (weft_u64_t)p * slot_bytes + ((weft_u64_t)own & 15);
  if (t == 0) dsts[0] = recv;
  __syncthreads();
  weft_red_sum_range(srcs, world, dsts, 1, n, dtype, blockIdx.x * (weft_u64_t)blockDim.x + t,
                gridDim.x * (weft_u64_t)blockDim.x);
  __syncthreads();
  if (t == 0 && weft_epoch_last_block(WEFT_EPOCH_RS_CE)) { /* every block's staging reads done */
    weft_u64_t *freed = weft_op_flags(WEFT_FLAGS_RED_FREED) + me;
    for (int p = 0; p < world; p++)
      if (p != me) weft_red_release((weft_u64_t *)weft_remote_ptr(freed, weft_state.node_first_rank + p), 1);
    weft_epoch_publish(WEFT_EPOCH_RS_CE, c);
    if (last) weft_epoch_publish(RED_SLOT, e);
  }
}

/* ---- ring ReduceScatter ---------------------------------------------------------------------- */

/* n elements of one ring step with the block's threads: acc = own[i], combined with in[i] after
 * the first step, stored as fp32 at out (a peer's staging) or, where out is NULL, finished and
 * rounded into fin (the owner's recv).
 * in and out are fp32 slices 16-byte aligned; 4 elements a thread at a time where own (and fin)
 * allow 4-element loads (and stores), one otherwise. */
static __device__ __forceinline__ void red_ring_step(const float *in, const char *own, float *out,
                                                     char *fin, weft_u64_t n, int dtype) {
  weft_u64_t elem = dtype == WEFT_RED_FP32 ? 4 : 2, i = 4 * (weft_u64_t)threadIdx.x;
  int vec = ((weft_u64_t)own % (4 * elem)) == 0 && (out || ((weft_u64_t)fin % (4 * elem)) == 0);
  for (; vec && i + 4 <= n; i += 4 * (weft_u64_t)blockDim.x) {
    float a[4];
    if (dtype == WEFT_RED_FP32) {
      float4 x = *(const float4 *)(own + i * 4);
      a[0] = x.x, a[1] = x.y, a[2] = x.z, a[3] = x.w;
    } else {
      uint2 x = *(const uint2 *)(own + i * 2);
      weft_red_word_add(a, x.x, dtype, 1);
      weft_red_word_add(a + 2, x.y, dtype, 1);
    }
    if (in) {
      float4 p = *(const float4 *)(in + i);
      a[0] = weft_red_combine(p.x, a[0]), a[1] = weft_red_combine(p.y, a[1]);
      a[2] = weft_red_combine(p.z, a[2]), a[3] = weft_red_combine(p.w, a[3]);
    }
    if (out) *(float4 *)(out + i) = make_float4(a[0], a[1], a[2], a[3]);
    else if (dtype == WEFT_RED_FP32)
      *(float4 *)(fin + i * 4) = make_float4(weft_red_final(a[0]), weft_red_final(a[1]),
                                             weft_red_final(a[2]), weft_red_final(a[3]));
    else *(uint2 *)(fin + i * 2) = make_uint2(weft_red_word_pack(a, dtype), weft_red_word_pack(a + 2, dtype));
  }
  /* the rest one element a thread: all of it where the vectors could not be used */
  for (i = (vec ? n / 4 * 4 : 0) + threadIdx.x; i < n; i += blockDim.x) {
    float a = weft_red_elem_load(own + i * elem, dtype);
    if (in) a = weft_red_combine(in[i], a);
    if (out) out[i] = a;
    else weft_red_elem_store(fin + i * elem, a, dtype);
  }
}

/* send: this rank's sendbuf ([world][n] elements); recv: its n sums. stage: the symmetric
 * staging area, [2 parities][slices][per] floats (per a multiple of 4); slices (the grid) is
 * WEFT_MAX_LOCAL_RANKS: the two ring counts are kept per slice, in the flag words that other ops
 * keep per peer (a ring has one neighbour on each side). One block an SM (the grid is at most the
 * SMs): with the bound's default ptxas held the kernel to 64 registers and spilled 20 bytes. */
extern "C" __global__ void __launch_bounds__(512, 1) weft_red_ring(const char *send, char *recv,
                                                               unsigned long long n, int dtype,
                                                               float *stage, unsigned long long per) {
  int world = weft_state.local_world, me = weft_state.local_rank, first = weft_state.node_first_rank;
  int right = me + 1 < world ? me + 1 : 0, left = me > 0 ? me - 1 : world - 1;
  unsigned t = threadIdx.x, slices = gridDim.x, b = blockIdx.x;
  weft_u64_t e = weft_epoch_begin(RED_SLOT);
  weft_u64_t base = *(volatile weft_u64_t *)weft_sync_word(WEFT_SYNC_EPOCHS + WEFT_EPOCH_RS_RING);
  weft_u64_t elem = dtype == WEFT_RED_FP32 ? 4 : 2;
  /* a round's elements of a segment, which are also one parity's floats of the staging area */
  weft_u64_t round = per * slices, rounds = (n + round - 1) / round;
  weft_u64_t *landed = weft_op_flags(WEFT_FLAGS_RED_RING) + b;     /* here, from the left */
  weft_u64_t *freed = weft_op_flags(WEFT_FLAGS_RED_RING_FREE) + b; /* here, from the right */
  if (b == 0 && t == 0) weft_op_signal_all(WEFT_FLAGS_RED_READY, e);
  if (t == 0) weft_op_wait(WEFT_FLAGS_RED_READY, right, e, "reduce_scatter(ring ready)");
  for (weft_u64_t r = 0; r < rounds; r++) {
    weft_u64_t lo = r * round + b * per, cnt = lo < n ? (n - lo < per ? n - lo : per) : 0;
    for (int s = 0; s < world; s++) {
      int c = ((me - s - 1) % world + world) % world; /* the segment of this step */
      weft_u64_t k = base + r * (weft_u64_t)(world - 1) + (weft_u64_t)s; /* this step's send */
      if (t == 0) {
        if (s > 0) /* this slice of the left neighbour's send k - 1 has landed here */
          weft_wait_until(landed, WEFT_CMP_GE, k, "reduce_scatter(ring)", first + left);
        if (s + 1 < world && k >= base + 2) /* the right one has read send k - 2 (this parity) */
          weft_wait_until(freed, WEFT_CMP_GE, k - 1, "reduce_scatter(ring free)", first + right);
      }
      __syncthreads(); /* (the waits' acquires cover the block's reads and writes below) */
      const float *in = s > 0 ? stage + ((k - 1) & 1) * round + b * per : NULL;
      float *out = s + 1 < world
                       ? (float *)weft_remote_ptr(stage + (k & 1) * round + b * per, first + right)
                       : NULL;
      red_ring_step(in, send + ((weft_u64_t)c * n + lo) * elem, out, recv + lo * elem, cnt, dtype);
      __syncthreads();
      if (t == 0) {
        weft_fence(); /* the block's reads of send k - 1 and stores of send k (seen through the
                         barrier) before the counts */
        if (s > 0) /* this slice of send k - 1 read: its parity may be written again */
          weft_red_release((weft_u64_t *)weft_remote_ptr(freed, first + left), 1);
        if (out) weft_red_release((weft_u64_t *)weft_remote_ptr(landed, first + right), 1);
      }
    }
  }
  if (t == 0 && weft_epoch_arrive(RED_SLOT)) {
    weft_epoch_publish(WEFT_EPOCH_RS_RING, base + rounds * (weft_u64_t)(world - 1));
    weft_epoch_publish(RED_SLOT, e);
  }
}
