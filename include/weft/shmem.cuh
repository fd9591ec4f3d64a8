/*
 * weft/shmem.cuh — OpenSHMEM-style primitives over the symmetric heap (Table 1 of the
 * Triton-distributed paper): weft_my_pe, weft_n_pes, weft_remote_ptr, weft_int_p,
 * weft_putmem / weft_getmem (+ _nbi), weft_putmem_signal (+ _nbi), weft_signal_op,
 * weft_signal_wait_until, weft_barrier_all, weft_sync_all, weft_broadcast, and the paper's
 * wait / notify / consume_token; weft_quiet, weft_fence and the atomics are in sync.cuh.
 *
 * Granularity: a plain name is called by ONE thread; _warp by all 32 lanes of a warp (converged);
 * _block by every thread of the block. Copies use 16-byte vectors when both ends are 16-byte
 * aligned, bytes otherwise. pe is a world rank on this node (remote_ptr maps symmetric addresses
 * through the peer mappings of the intra-node heap).
 *
 * Ordering:
 * - Puts are plain stores through the peer mapping. They are ordered before a later signal only
 *   by a release: weft_signal_op / weft_putmem_signal* do the release (and, for _warp/_block,
 *   first a __syncwarp/__syncthreads so the other lanes' stores are covered).
 * - weft_fence (fence.acq_rel.sys) orders this thread's puts before its later stores, e.g. a
 *   relaxed flag; weft_quiet completes them (OpenSHMEM quiet). The _nbi forms are the blocking
 *   ones: an NVLink store returns before it lands either way, and only fence/quiet/release order it.
 * - weft_signal_wait_until* acquire: loads after it see what the signaller wrote before its
 *   release. The _warp/_block forms let one thread acquire, then sync the group.
 * - barrier_all: every rank's accesses before it are visible to every rank after it. sync_all is
 *   the same barrier (OpenSHMEM allows sync_all to promise less; weft's costs nothing extra).
 *   The barrier's epoch lives in this rank's sync area, so at most ONE barrier (any granularity,
 *   kernel or stream) may be in flight per rank at a time: call it from one block per rank, and
 *   do not run two barrier kernels concurrently on two streams.
 */
#ifndef WEFT_SHMEM_CUH
#define WEFT_SHMEM_CUH

#include "weft/sync.cuh"

#define WEFT_SIGNAL_SET 0
#define WEFT_SIGNAL_ADD 1

static __device__ __forceinline__ int weft_my_pe(void) { return weft_state.rank; }
static __device__ __forceinline__ int weft_n_pes(void) { return weft_state.world; }

/* Address on this GPU of pe's copy of symmetric address p. */
static __device__ __forceinline__ void *weft_remote_ptr(const void *p, int pe) {
  weft_u64_t a = (weft_u64_t)p - weft_state.my_heap + weft_state.heap_base +
                 (weft_u64_t)(pe - weft_state.node_first_rank) * weft_state.heap_stride;
  return (void *)a;
}

/* The local rank k places after this one (k = 0: this rank; 0 <= k < local_world), and its world
 * rank. Collectives that push to every rank go to weft_local_next(1), (2), ... in turn, every
 * rank starting with its next neighbour, so that every link carries alike. No `%`: the LL kernels
 * call it in their per-line loops. */
static __device__ __forceinline__ int weft_local_peer(int k) {
  int r = weft_state.local_rank + k;
  return r < weft_state.local_world ? r : r - weft_state.local_world;
}
static __device__ __forceinline__ int weft_local_next(int k) {
  return weft_state.node_first_rank + weft_local_peer(k);
}

static __device__ __forceinline__ void weft_int_p(int *dst, int value, int pe) {
  *(volatile int *)weft_remote_ptr(dst, pe) = value;
}

#define WEFT_COPY_DEPTH 4 /* weft_copy_group's 16-byte loads in flight a thread */

/* Copies n bytes with the threads [lane, lane + stride) of a group: when dst and src are equally
 * misaligned, bytes up to the first 16-byte boundary, then 16-byte vectors, then the byte tail;
 * bytes throughout otherwise. */
static __device__ __forceinline__ void weft_copy_group(char *dst, const char *src,
                                                       weft_u64_t n, unsigned lane,
                                                       unsigned stride) {
  weft_u64_t i = 0;
  if ((((weft_u64_t)dst ^ (weft_u64_t)src) & 15) == 0) {
    weft_u64_t head = (16 - ((weft_u64_t)dst & 15)) & 15;
    if (head > n) head = n;
    for (weft_u64_t b = lane; b < head; b += stride) dst[b] = src[b];
    weft_u64_t nv = (n - head) / 16, v = lane;
    uint4 *d = (uint4 *)(dst + head);
    const uint4 *s = (const uint4 *)(src + head);
    /* WEFT_COPY_DEPTH loads in flight per thread before the stores: one at a time leaves
     * NVLink idle (a block moves ~44 GB/s with 32 KiB in flight, dev/collectives/README.md). */
    const weft_u64_t step = WEFT_COPY_DEPTH * (weft_u64_t)stride;
    for (; v + step - stride < nv; v += step) {
      uint4 x[WEFT_COPY_DEPTH];
#pragma unroll
      for (int u = 0; u < WEFT_COPY_DEPTH; u++) x[u] = s[v + u * stride];
#pragma unroll
      for (int u = 0; u < WEFT_COPY_DEPTH; u++) d[v + u * stride] = x[u];
    }
    for (; v < nv; v += stride) d[v] = s[v];
    i = head + nv * 16;
  }
  for (weft_u64_t b = i + lane; b < n; b += stride) dst[b] = src[b];
}

static __device__ __forceinline__ void weft_putmem(void *dst, const void *src, weft_u64_t n, int pe) {
  weft_copy_group((char *)weft_remote_ptr(dst, pe), (const char *)src, n, 0, 1);
}
static __device__ __forceinline__ void weft_putmem_warp(void *dst, const void *src, weft_u64_t n, int pe) {
  weft_copy_group((char *)weft_remote_ptr(dst, pe), (const char *)src, n, weft_lane(), 32);
  __syncwarp();
}
static __device__ __forceinline__ void weft_putmem_block(void *dst, const void *src, weft_u64_t n, int pe) {
  unsigned t = weft_thread_rank();
  weft_copy_group((char *)weft_remote_ptr(dst, pe), (const char *)src, n, t,
                  weft_block_size());
  __syncthreads();
}
static __device__ __forceinline__ void weft_getmem(void *dst, const void *src, weft_u64_t n, int pe) {
  weft_copy_group((char *)dst, (const char *)weft_remote_ptr(src, pe), n, 0, 1);
}
static __device__ __forceinline__ void weft_getmem_warp(void *dst, const void *src, weft_u64_t n, int pe) {
  weft_copy_group((char *)dst, (const char *)weft_remote_ptr(src, pe), n, weft_lane(), 32);
  __syncwarp();
}
static __device__ __forceinline__ void weft_getmem_block(void *dst, const void *src, weft_u64_t n, int pe) {
  unsigned t = weft_thread_rank();
  weft_copy_group((char *)dst, (const char *)weft_remote_ptr(src, pe), n, t,
                  weft_block_size());
  __syncthreads();
}

/* Signal op on pe's copy of sig, with release: everything this thread wrote before is visible
 * to whoever acquires the new value. */
static __device__ __forceinline__ void weft_signal_op(weft_u64_t *sig, weft_u64_t value, int op, int pe) {
  weft_u64_t *r = (weft_u64_t *)weft_remote_ptr(sig, pe);
  if (op == WEFT_SIGNAL_ADD) weft_red_release(r, value);
  else weft_st_release(r, value);
}

static __device__ __forceinline__ weft_u64_t weft_signal_wait_until(const weft_u64_t *sig, int cmp,
                                                                   weft_u64_t value) {
  return weft_wait_until(sig, cmp, value, "signal_wait_until", -1);
}
/* Lane 0 waits (acquire), then the warp syncs; every lane gets the value lane 0 saw. */
static __device__ __forceinline__ weft_u64_t weft_signal_wait_until_warp(const weft_u64_t *sig,
                                                                        int cmp, weft_u64_t value) {
  weft_u64_t v = 0;
  if ((weft_lane()) == 0) v = weft_wait_until(sig, cmp, value, "signal_wait_until", -1);
  __syncwarp();
  return __shfl_sync(0xffffffffu, v, 0);
}
/* Thread 0 waits (acquire), then the block syncs; every thread gets the value thread 0 saw. */
static __device__ __forceinline__ weft_u64_t weft_signal_wait_until_block(const weft_u64_t *sig,
                                                                         int cmp, weft_u64_t value) {
  __shared__ weft_u64_t weft_seen_;
  unsigned t = weft_thread_rank();
  if (t == 0) weft_seen_ = weft_wait_until(sig, cmp, value, "signal_wait_until", -1);
  __syncthreads();
  weft_u64_t v = weft_seen_;
  __syncthreads(); /* nobody overwrites weft_seen_ (next call) before every thread read it */
  return v;
}

static __device__ __forceinline__ void weft_putmem_signal(void *dst, const void *src, weft_u64_t n,
                                                          weft_u64_t *sig, weft_u64_t value,
                                                          int op, int pe) {
  weft_putmem(dst, src, n, pe);
  weft_signal_op(sig, value, op, pe);
}
static __device__ __forceinline__ void weft_putmem_signal_block(void *dst, const void *src,
                                                                weft_u64_t n, weft_u64_t *sig,
                                                                weft_u64_t value, int op, int pe) {
  weft_putmem_block(dst, src, n, pe); /* ends with __syncthreads: every thread's stores done */
  if (threadIdx.x + threadIdx.y + threadIdx.z == 0) {
    weft_fence(); /* cumulativity: the other threads' stores, observed via the barrier */
    weft_signal_op(sig, value, op, pe);
  }
}

/* Non-blocking forms: the stores are issued and the call returns; weft_quiet (or a signal with
 * release semantics) completes them. Through the NVLink mapping an ordinary store already
 * returns before it lands, so these are the blocking forms without the implied ordering. */
#define weft_putmem_nbi weft_putmem
#define weft_putmem_nbi_warp weft_putmem_warp
#define weft_putmem_nbi_block weft_putmem_block
#define weft_getmem_nbi weft_getmem
#define weft_getmem_nbi_warp weft_getmem_warp
#define weft_getmem_nbi_block weft_getmem_block

static __device__ __forceinline__ void weft_putmem_signal_warp(void *dst, const void *src,
                                                               weft_u64_t n, weft_u64_t *sig,
                                                               weft_u64_t value, int op, int pe) {
  weft_putmem_warp(dst, src, n, pe); /* ends with __syncwarp */
  if ((weft_lane()) == 0) {
    weft_fence();
    weft_signal_op(sig, value, op, pe);
  }
  __syncwarp();
}
#define weft_putmem_signal_nbi weft_putmem_signal
#define weft_putmem_signal_nbi_warp weft_putmem_signal_warp
#define weft_putmem_signal_nbi_block weft_putmem_signal_block

/* Triton-distributed's wait / consume_token pair, in C. weft_wait spins (acquire) until each of
 * n consecutive signals is >= value and returns a token (always 0); weft_consume_token(p, token)
 * returns p with the token added, so every address derived from it depends on the waits.
 *
 * Why it is safe, and what the token adds: the hardware ordering comes from ld.acquire.sys (no
 * later load of this thread may be satisfied before it). The compiler cannot hoist a load above
 * the wait either, because the acquire is an asm volatile with a "memory" clobber. The token
 * makes that dependency explicit and local: it is computed by an opaque asm from the value each
 * wait observed (so it cannot be folded to a constant before the waits ran) and added to the
 * pointer by another opaque asm, so a load through the returned pointer has a data dependency on
 * every wait even in code where the compiler could otherwise prove the pointer invariant (e.g.
 * reads of __restrict__ / const data that it may cache in registers across the loop). Triton
 * needs the same trick because its wait is not a memory operation to its optimiser. */
static __device__ __forceinline__ weft_u64_t weft_wait(const weft_u64_t *sig, int n, weft_u64_t value) {
  weft_u64_t token = 0;
  for (int i = 0; i < n; i++) {
    weft_u64_t v = weft_wait_until(sig + i, WEFT_CMP_GE, value, "wait", -1), z;
    asm volatile("and.b64 %0, %1, 0;" : "=l"(z) : "l"(v)); /* 0, but only after v is known */
    token |= z;
  }
  return token;
}
static __device__ __forceinline__ void *weft_consume_token(void *p, weft_u64_t token) {
  weft_u64_t a = (weft_u64_t)p;
  asm volatile("add.u64 %0, %0, %1;" : "+l"(a) : "l"(token) : "memory");
  return (void *)a;
}
/* notify: a signal op with release on pe's copy (same as weft_signal_op, named as the paper). */
#define weft_notify weft_signal_op

/* Group synchronisation used by the _warp/_block forms: kind 0 thread, 1 warp, 2 block
 * (a constant at every call site, so the branches fold away). */
#define WEFT_GROUP_THREAD 0
#define WEFT_GROUP_WARP 1
#define WEFT_GROUP_BLOCK 2
static __device__ __forceinline__ void weft_group_sync_(int kind) {
  if (kind == WEFT_GROUP_BLOCK) __syncthreads();
  else if (kind == WEFT_GROUP_WARP) __syncwarp();
}
static __device__ __forceinline__ unsigned weft_group_lane_(int kind) {
  if (kind == WEFT_GROUP_BLOCK) return weft_thread_rank();
  return kind == WEFT_GROUP_WARP ? (weft_lane()) : 0;
}
static __device__ __forceinline__ unsigned weft_group_size_(int kind) {
  if (kind == WEFT_GROUP_BLOCK) return weft_block_size();
  return kind == WEFT_GROUP_WARP ? 32 : 1;
}

/* Barrier of all ranks of the node, by a group (one thread, one warp or one block) per rank.
 * Epoch-based: each call raises this rank's barrier epoch e (WEFT_SYNC_EPOCHS +
 * WEFT_EPOCH_BARRIER in its own sync area), writes e into its flag on every peer with
 * st.release.sys, and waits until every peer's flag here is >= e. Nothing is reset between calls,
 * so kernels that call it may be replayed in a CUDA graph. The release after the group sync
 * covers the whole group's earlier writes; the acquire waits before the closing sync cover the
 * group's later reads. */
static __device__ __forceinline__ void weft_barrier_all_group_(int kind) {
  weft_group_sync_(kind);
  weft_u64_t *sync = (weft_u64_t *)weft_state.my_heap;
  weft_u64_t *epoch = sync + WEFT_SYNC_EPOCHS + WEFT_EPOCH_BARRIER;
  weft_u64_t e = *(volatile weft_u64_t *)epoch + 1;
  unsigned t = weft_group_lane_(kind), nt = weft_group_size_(kind);
  if (t == 0) weft_fence();
  weft_group_sync_(kind);
  weft_u64_t *flag = sync + WEFT_SYNC_BARRIER_FLAGS + weft_state.local_rank;
  for (int p = (int)t; p < weft_state.local_world; p += (int)nt)
    weft_st_release((weft_u64_t *)weft_remote_ptr(flag, weft_state.node_first_rank + p), e);
  for (int p = (int)t; p < weft_state.local_world; p += (int)nt)
    weft_wait_until(sync + WEFT_SYNC_BARRIER_FLAGS + p, WEFT_CMP_GE, e, "barrier_all",
                    weft_state.node_first_rank + p);
  weft_group_sync_(kind); /* every peer arrived before anyone publishes the new epoch */
  if (t == 0) *(volatile weft_u64_t *)epoch = e;
  weft_group_sync_(kind); /* and before anyone may start the next call and read it */
}
static __device__ __forceinline__ void weft_barrier_all(void) { weft_barrier_all_group_(WEFT_GROUP_THREAD); }
static __device__ __forceinline__ void weft_barrier_all_warp(void) { weft_barrier_all_group_(WEFT_GROUP_WARP); }
static __device__ __forceinline__ void weft_barrier_all_block(void) { weft_barrier_all_group_(WEFT_GROUP_BLOCK); }

/* ---- epochs and flags of the ops (the runtime's sync area at the start of every heap) ---- */

static __device__ __forceinline__ weft_u64_t *weft_sync_word(int index) {
  return (weft_u64_t *)weft_state.my_heap + index;
}
/* This call's epoch for slot: one more than the last finished call's. Every block of a kernel
 * reads the same value because only the last block to finish raises it (weft_epoch_finish). */
static __device__ __forceinline__ weft_u64_t weft_epoch_begin(int slot) {
  return *(volatile weft_u64_t *)weft_sync_word(WEFT_SYNC_EPOCHS + slot) + 1;
}
/* Called once per block (by one thread) at the end of a kernel on slot: 1 in the last block of
 * the grid to arrive, which resets the count for the next kernel. No ordering beyond the count
 * (weft_epoch_last_block also sees the other blocks' accesses). */
static __device__ __forceinline__ int weft_epoch_arrive(int slot) {
  unsigned long long *arrive = (unsigned long long *)weft_sync_word(WEFT_SYNC_ARRIVE + slot);
  unsigned blocks = gridDim.x * gridDim.y * gridDim.z;
  if (atomicAdd(arrive, 1ull) != blocks - 1) return 0;
  *(volatile unsigned long long *)arrive = 0; /* read again only by the next kernel */
  return 1;
}
/* Sets slot's sync word to v: the epoch (or count) the next call of the op starts from. */
static __device__ __forceinline__ void weft_epoch_publish(int slot, weft_u64_t v) {
  *(volatile weft_u64_t *)weft_sync_word(WEFT_SYNC_EPOCHS + slot) = v;
}
/* Called once per block (by one thread) at the end of a kernel that began epoch e on slot: the
 * last block to arrive publishes e, so the next kernel on the stream sees it. */
static __device__ __forceinline__ void weft_epoch_finish(int slot, weft_u64_t e) {
  if (weft_epoch_arrive(slot)) weft_epoch_publish(slot, e);
}
/* For kernels that publish slot's epoch themselves once a last step is done (e.g. waiting for
 * the peers): thread 0 of every block, after __syncthreads(), calls it; it returns 1 in the last
 * block of the grid to get here, which then also sees every other block's earlier accesses (the
 * fences on both sides of the count make it a release/acquire pair, and bar.sync brought the
 * block's threads' accesses under thread 0's fence). That block ends with
 * weft_epoch_publish(slot, e). */
static __device__ __forceinline__ int weft_epoch_last_block(int slot) {
  weft_fence();
  if (!weft_epoch_arrive(slot)) return 0;
  weft_fence();
  return 1;
}
/* The flag array of an op's slot; entry r is written by world rank node_first_rank + r. */
static __device__ __forceinline__ weft_u64_t *weft_op_flags(int slot) {
  return weft_sync_word(WEFT_SYNC_FLAGS(slot));
}
/* Tell every local rank that this rank reached epoch e on the flag slot (release). */
static __device__ __forceinline__ void weft_op_signal_all(int slot, weft_u64_t e) {
  weft_u64_t *mine = weft_op_flags(slot) + weft_state.local_rank;
  for (int p = 0; p < weft_state.local_world; p++)
    weft_st_release((weft_u64_t *)weft_remote_ptr(mine, weft_state.node_first_rank + p), e);
}
/* Wait until local rank p's flag on slot reaches e. */
static __device__ __forceinline__ void weft_op_wait(int slot, int p, weft_u64_t e, const char *op) {
  weft_wait_until(weft_op_flags(slot) + p, WEFT_CMP_GE, e, op, weft_state.node_first_rank + p);
}
/* The end of a kernel whose last block must see every rank finished with call e before any rank
 * goes on (peers read this rank's buffers or write into them): thread 0 of every block, after
 * __syncthreads(); the last block (weft_epoch_last_block) sets "done e" on flag slot `flags` of
 * every rank, waits for every rank's, and publishes e on epoch slot `slot`. */
static __device__ __forceinline__ void weft_epoch_done_all(int slot, int flags, weft_u64_t e,
                                                           const char *op) {
  if (!weft_epoch_last_block(slot)) return;
  weft_op_signal_all(flags, e);
  for (int p = 0; p < weft_state.local_world; p++)
    if (p != weft_state.local_rank) weft_op_wait(flags, p, e, op);
  weft_epoch_publish(slot, e);
}

/* sync_all: a barrier of all ranks; weft's barrier already orders memory, so it is the same. */
#define weft_sync_all weft_barrier_all
#define weft_sync_all_warp weft_barrier_all_warp
#define weft_sync_all_block weft_barrier_all_block

/* Collective broadcast: every rank calls it (same group kind on every rank); root's n bytes at
 * src land in dst (symmetric) on every rank, and the call returns on every rank only once they
 * have (root's puts precede its barrier release; the others acquire in the barrier). */
static __device__ __forceinline__ void weft_broadcast_group_(void *dst, const void *src,
                                                             weft_u64_t n, int root, int kind) {
  if (weft_my_pe() == root) {
    unsigned t = weft_group_lane_(kind), nt = weft_group_size_(kind);
    for (int p = 0; p < weft_state.local_world; p++)
      weft_copy_group((char *)weft_remote_ptr(dst, weft_state.node_first_rank + p),
                      (const char *)src, n, t, nt);
  }
  weft_barrier_all_group_(kind); /* starts with the group sync that orders the puts */
}
static __device__ __forceinline__ void weft_broadcast(void *dst, const void *src, weft_u64_t n, int root) {
  weft_broadcast_group_(dst, src, n, root, WEFT_GROUP_THREAD);
}
static __device__ __forceinline__ void weft_broadcast_warp(void *dst, const void *src, weft_u64_t n, int root) {
  weft_broadcast_group_(dst, src, n, root, WEFT_GROUP_WARP);
}
static __device__ __forceinline__ void weft_broadcast_block(void *dst, const void *src, weft_u64_t n, int root) {
  weft_broadcast_group_(dst, src, n, root, WEFT_GROUP_BLOCK);
}

#endif
