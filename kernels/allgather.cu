/*
 * kernels/allgather.cu — AllGather over the ranks of a node (src/ops/allgather.c launches).
 * recv is symmetric: [world][bytes]; every rank's chunk lands at recv + rank * bytes on every
 * rank. Nothing is reset between calls: each call's epoch e is one more than the last, read from
 * this rank's sync area, and every flag compares against it.
 *
 *   weft_ag_enter / weft_ag_exit  around copy-engine pushes (one block each): "ready for epoch
 *                                 e" to every rank, wait for all; then "done" likewise.
 *   weft_ag_sm                    SM push in one kernel: (world - 1) x slices blocks for the
 *                                 peers, then local_slices for this rank's own copy (an HBM
 *                                 copy, many times faster than a link); a block sends its slice
 *                                 of this rank's chunk to its rank once that rank is ready, then
 *                                 counts it in the receiver's done flag; then waits for that
 *                                 rank's slices to it.
 *   weft_ag_ring                  ring, for GPUs without a full-bandwidth link to every peer:
 *                                 world - 1 steps; at step s each rank forwards chunk
 *                                 (rank - s) mod world to its right neighbour (step 0 from
 *                                 send, later from recv, where the left neighbour put it at
 *                                 step s - 1), each slice's steps counted in the receiver's
 *                                 ring flag word of that slice.
 *   weft_ag_ll                    LL push for small chunks: data and epoch flag in each 16-byte
 *                                 line, into a double-buffered LL area (parity of e); no
 *                                 handshake at all.
 */
#include <weft/device.cuh>

#define AG_SLOT WEFT_EPOCH_ALLGATHER

extern "C" __global__ void weft_ag_enter(void) {
  weft_u64_t e = weft_epoch_begin(AG_SLOT);
  if (threadIdx.x == 0) weft_op_signal_all(WEFT_FLAGS_AG_READY, e);
  for (int p = threadIdx.x; p < weft_state.local_world; p += blockDim.x)
    weft_op_wait(WEFT_FLAGS_AG_READY, p, e, "allgather(ready)");
}

extern "C" __global__ void weft_ag_exit(void) {
  weft_u64_t e = weft_epoch_begin(AG_SLOT);
  __syncthreads();
  if (threadIdx.x == 0) weft_op_signal_all(WEFT_FLAGS_AG_DONE, e);
  for (int p = threadIdx.x; p < weft_state.local_world; p += blockDim.x)
    weft_op_wait(WEFT_FLAGS_AG_DONE, p, e, "allgather(done)");
  __syncthreads();
  if (threadIdx.x == 0) weft_epoch_finish(AG_SLOT, e);
}

extern "C" __global__ void weft_ag_sm(const char *send, char *recv, unsigned long long bytes,
                                      int local_slices) {
  int world = weft_state.local_world, me = weft_state.local_rank;
  int remote = gridDim.x - local_slices, peer = me, slices = local_slices,
      slice = blockIdx.x - remote;
  if ((int)blockIdx.x < remote) { /* peers rank + 1, rank + 2, ... in turn, so each link has as many */
    peer = weft_local_peer(1 + (int)(blockIdx.x % (world - 1)));
    slices = remote / (world - 1), slice = blockIdx.x / (world - 1);
  }
  weft_u64_t e = weft_epoch_begin(AG_SLOT), c = weft_epoch_begin(WEFT_EPOCH_AG_SM);
  if (blockIdx.x == 0 && threadIdx.x == 0) weft_op_signal_all(WEFT_FLAGS_AG_READY, e);
  if (threadIdx.x == 0) weft_op_wait(WEFT_FLAGS_AG_READY, peer, e, "allgather(ready)");
  __syncthreads();
  /* Slices are 4 KiB multiples so that aligned buffers stay aligned slice by slice. */
  unsigned long long per = ((bytes + slices - 1) / slices + 4095) & ~4095ull;
  unsigned long long off = per * slice;
  if (off < bytes) {
    unsigned long long n = bytes - off < per ? bytes - off : per;
    char *dst = (char *)weft_remote_ptr(recv + (unsigned long long)me * bytes + off,
                                        weft_state.node_first_rank + peer);
    weft_copy_group(dst, send + off, n, threadIdx.x, blockDim.x);
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    weft_fence(); /* the block's stores (seen through the barrier) before the count */
    weft_u64_t *done = weft_op_flags(WEFT_FLAGS_AG_SM_DONE) + me;
    weft_red_release((weft_u64_t *)weft_remote_ptr(done, weft_state.node_first_rank + peer),
                     WEFT_AG_SM_UNITS * (slice + 1) / slices - WEFT_AG_SM_UNITS * slice / slices);
    weft_op_wait(WEFT_FLAGS_AG_SM_DONE, peer, c * WEFT_AG_SM_UNITS, "allgather(sm)");
    weft_epoch_finish(AG_SLOT, e);
    weft_epoch_finish(WEFT_EPOCH_AG_SM, c);
  }
}

/* grid = WEFT_MAX_LOCAL_RANKS blocks in every call (every call must advance every count word
 * alike), each one slice of every chunk. The right neighbour is written only once it is ready
 * for epoch e (its recv is free), every chunk once per call. Word `slice` of this rank's ring
 * flags counts that slice's steps landed here from the left neighbour: base + s once its step
 * s - 1 has, base counting the earlier ring calls' world - 1 steps. Per slice: one count over
 * all slices (as this kernel first had) reaches a step's total while a slow slice is still a
 * step behind, where another has run ahead (a CPU model of the protocol found such stale reads:
 * dev/collectives/ring_sim.py). */
extern "C" __global__ void weft_ag_ring(const char *send, char *recv, unsigned long long bytes) {
  int world = weft_state.local_world, me = weft_state.local_rank, first = weft_state.node_first_rank;
  int right = me + 1 < world ? me + 1 : 0, left = me > 0 ? me - 1 : world - 1;
  int slices = gridDim.x, slice = blockIdx.x;
  weft_u64_t e = weft_epoch_begin(AG_SLOT), c = weft_epoch_begin(WEFT_EPOCH_AG_RING);
  weft_u64_t base = (c - 1) * (weft_u64_t)(world - 1);
  if (blockIdx.x == 0 && threadIdx.x == 0) weft_op_signal_all(WEFT_FLAGS_AG_READY, e);
  /* Slices are 4 KiB multiples so that aligned buffers stay aligned slice by slice. */
  unsigned long long per = ((bytes + slices - 1) / slices + 4095) & ~4095ull, off = per * slice;
  unsigned long long n = off < bytes ? (bytes - off < per ? bytes - off : per) : 0;
  if (n && send != recv + (unsigned long long)me * bytes) /* own chunk (unless in place) */
    weft_copy_group(recv + (unsigned long long)me * bytes + off, send + off, n, threadIdx.x, blockDim.x);
  if (threadIdx.x == 0) weft_op_wait(WEFT_FLAGS_AG_READY, right, e, "allgather(ring ready)");
  weft_u64_t *count = weft_op_flags(WEFT_FLAGS_AG_RING) + slice;
  for (int s = 0; s + 1 < world; s++) {
    int q = me - s >= 0 ? me - s : me - s + world;
    if (s > 0 && threadIdx.x == 0)
      weft_wait_until(count, WEFT_CMP_GE, base + (weft_u64_t)s, "allgather(ring)", first + left);
    __syncthreads(); /* (the wait's acquire covers the block's reads of chunk q) */
    const char *src = s == 0 ? send + off : recv + (unsigned long long)q * bytes + off;
    if (n)
      weft_copy_group((char *)weft_remote_ptr(recv + (unsigned long long)q * bytes + off, first + right),
                      src, n, threadIdx.x, blockDim.x);
    __syncthreads();
    if (threadIdx.x == 0) {
      weft_fence(); /* the block's stores (seen through the barrier) before the count */
      weft_red_release((weft_u64_t *)weft_remote_ptr(count, first + right), 1);
    }
  }
  if (threadIdx.x == 0) {
    weft_wait_until(count, WEFT_CMP_GE, base + (weft_u64_t)(world - 1), "allgather(ring)", first + left);
    weft_epoch_finish(AG_SLOT, e);
    weft_epoch_finish(WEFT_EPOCH_AG_RING, c);
  }
}

/* ll: [2 parities][world][WEFT_LL_BYTES(max_bytes)] symmetric scratch. */
extern "C" __global__ void weft_ag_ll(const unsigned char *send, unsigned char *recv,
                                      unsigned long long bytes, unsigned char *ll,
                                      unsigned long long ll_slot_bytes) {
  weft_pdl_begin(); /* launched programmatic (src/ops) */
  int world = weft_state.local_world, me = weft_state.local_rank;
  int peer = blockIdx.x % world, slices = gridDim.x / world, slice = blockIdx.x / world;
  weft_u64_t e = weft_epoch_begin(AG_SLOT);
  unsigned flag = (unsigned)e;
  unsigned char *area = ll + (e & 1) * (unsigned long long)world * ll_slot_bytes;
  unsigned long long lines = (bytes + 7) / 8;
  unsigned long long per = (lines + slices - 1) / slices, l0 = per * slice;
  unsigned long long l1 = l0 + per < lines ? l0 + per : lines;
  /* push my lines [l0, l1) to peer's area slot `me` */
  unsigned char *dst = (unsigned char *)weft_remote_ptr(area + (unsigned long long)me * ll_slot_bytes,
                                                        weft_state.node_first_rank + peer);
  for (unsigned long long l = l0 + threadIdx.x; l < l1; l += blockDim.x) {
    unsigned long long v = 0, b = l * 8;
    if (b + 8 <= bytes && ((unsigned long long)(send + b) & 7) == 0) {
      v = *(const unsigned long long *)(send + b);
    } else {
      for (int k = 0; k < 8 && b + k < bytes; k++) v |= (unsigned long long)send[b + k] << (8 * k);
    }
    weft_ll_store16(dst + l * 16, (unsigned)v, (unsigned)(v >> 32), flag);
  }
  /* receive peer's lines [l0, l1) from my area slot `peer` */
  const unsigned char *src = area + (unsigned long long)peer * ll_slot_bytes;
  unsigned char *out = recv + (unsigned long long)peer * bytes;
  for (unsigned long long l = l0 + threadIdx.x; l < l1; l += blockDim.x) {
    unsigned long long v = weft_ll_load16(src + l * 16, flag, "allgather(ll)",
                                          weft_state.node_first_rank + peer), b = l * 8;
    if (b + 8 <= bytes && ((unsigned long long)(out + b) & 7) == 0) {
      *(unsigned long long *)(out + b) = v;
    } else {
      for (int k = 0; k < 8 && b + k < bytes; k++) out[b + k] = (unsigned char)(v >> (8 * k));
    }
  }
  __syncthreads();
  if (threadIdx.x == 0) weft_epoch_finish(AG_SLOT, e);
}
