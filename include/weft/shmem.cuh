/*
 * weft/shmem.cuh — OpenSHMEM-style primitives over the symmetric heap (Table 1 of the
 * Triton-distributed paper): PE queries, peer pointers, puts and gets at thread, warp and block
 * granularity, signals, barrier.
 *
 * pe is a world rank on this node. Puts are plain stores through the peer mapping; a signal after
 * them (weft_signal_op, a release) makes them visible to whoever acquires the signal.
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

static __device__ __forceinline__ void weft_int_p(int *dst, int value, int pe) {
  *(volatile int *)weft_remote_ptr(dst, pe) = value;
}

/* Copies n bytes with the threads [lane, lane + stride) of a group: 16-byte vectors when both
 * ends allow it, bytes otherwise. */
static __device__ __forceinline__ void weft_copy_group(char *dst, const char *src,
                                                       weft_u64_t n, unsigned lane,
                                                       unsigned stride) {
  weft_u64_t i = 0;
  if ((((weft_u64_t)dst | (weft_u64_t)src) & 15) == 0) {
    weft_u64_t nv = n / 16, v = lane;
    uint4 *d = (uint4 *)dst;
    const uint4 *s = (const uint4 *)src;
    /* Four loads in flight per thread before the stores: one at a time leaves NVLink idle. */
    for (; v + 3 * (weft_u64_t)stride < nv; v += 4 * (weft_u64_t)stride) {
      uint4 a = s[v], b = s[v + stride], c = s[v + 2 * stride], e = s[v + 3 * stride];
      d[v] = a, d[v + stride] = b, d[v + 2 * stride] = c, d[v + 3 * stride] = e;
    }
    for (; v < nv; v += stride) d[v] = s[v];
    i = nv * 16;
  }
  for (weft_u64_t b = i + lane; b < n; b += stride) dst[b] = src[b];
}

static __device__ __forceinline__ void weft_putmem(void *dst, const void *src, weft_u64_t n, int pe) {
  weft_copy_group((char *)weft_remote_ptr(dst, pe), (const char *)src, n, 0, 1);
}
static __device__ __forceinline__ void weft_putmem_warp(void *dst, const void *src, weft_u64_t n, int pe) {
  weft_copy_group((char *)weft_remote_ptr(dst, pe), (const char *)src, n, threadIdx.x & 31, 32);
  __syncwarp();
}
static __device__ __forceinline__ void weft_putmem_block(void *dst, const void *src, weft_u64_t n, int pe) {
  unsigned t = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
  weft_copy_group((char *)weft_remote_ptr(dst, pe), (const char *)src, n, t,
                  blockDim.x * blockDim.y * blockDim.z);
  __syncthreads();
}
static __device__ __forceinline__ void weft_getmem(void *dst, const void *src, weft_u64_t n, int pe) {
  weft_copy_group((char *)dst, (const char *)weft_remote_ptr(src, pe), n, 0, 1);
}
static __device__ __forceinline__ void weft_getmem_warp(void *dst, const void *src, weft_u64_t n, int pe) {
  weft_copy_group((char *)dst, (const char *)weft_remote_ptr(src, pe), n, threadIdx.x & 31, 32);
  __syncwarp();
}
static __device__ __forceinline__ void weft_getmem_block(void *dst, const void *src, weft_u64_t n, int pe) {
  unsigned t = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
  weft_copy_group((char *)dst, (const char *)weft_remote_ptr(src, pe), n, t,
                  blockDim.x * blockDim.y * blockDim.z);
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
  if ((threadIdx.x & 31) == 0) {
    weft_fence();
    weft_signal_op(sig, value, op, pe);
  }
  __syncwarp();
}
#define weft_putmem_signal_nbi weft_putmem_signal
#define weft_putmem_signal_nbi_warp weft_putmem_signal_warp
#define weft_putmem_signal_nbi_block weft_putmem_signal_block

/* Triton-distributed's non-OpenSHMEM pair. weft_wait spins until each of n consecutive signals
 * is >= value (acquire) and returns a token; weft_consume_token ties a later load's address to
 * that token, so the compiler cannot move the load above the wait. */
static __device__ __forceinline__ weft_u64_t weft_wait(const weft_u64_t *sig, int n, weft_u64_t value) {
  weft_u64_t token = 0;
  for (int i = 0; i < n; i++) token |= weft_wait_until(sig + i, WEFT_CMP_GE, value, "wait", -1) * 0;
  return token;
}
static __device__ __forceinline__ void *weft_consume_token(void *p, weft_u64_t token) {
  weft_u64_t a = (weft_u64_t)p;
  asm volatile("add.u64 %0, %0, %1;" : "+l"(a) : "l"(token) : "memory");
  return (void *)a;
}
/* notify: a signal op with release on pe's copy (same as weft_signal_op, named as the paper). */
#define weft_notify weft_signal_op

/* Barrier of all ranks, called by every thread of ONE block per rank. Epoch-based: each call
 * raises this rank's barrier epoch and waits until every peer has written at least that epoch
 * into its flag here, so nothing is reset between calls. */
static __device__ __forceinline__ void weft_barrier_all_block(void) {
  __syncthreads();
  weft_u64_t *sync = (weft_u64_t *)weft_state.my_heap;
  weft_u64_t *epoch = sync + WEFT_SYNC_EPOCHS + WEFT_EPOCH_BARRIER;
  weft_u64_t e = *(volatile weft_u64_t *)epoch + 1;
  unsigned t = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
  unsigned nt = blockDim.x * blockDim.y * blockDim.z;
  if (t == 0) weft_fence();
  __syncthreads();
  for (int p = (int)t; p < weft_state.local_world; p += (int)nt) {
    weft_u64_t *flag = sync + WEFT_SYNC_BARRIER_FLAGS + weft_state.local_rank;
    weft_st_release((weft_u64_t *)weft_remote_ptr(flag, weft_state.node_first_rank + p), e);
  }
  for (int p = (int)t; p < weft_state.local_world; p += (int)nt)
    weft_wait_until(sync + WEFT_SYNC_BARRIER_FLAGS + p, WEFT_CMP_GE, e, "barrier_all",
                    weft_state.node_first_rank + p);
  __syncthreads();
  if (t == 0) *(volatile weft_u64_t *)epoch = e;
  __syncthreads();
}

/* ---- epochs and flags of the ops (the runtime's sync area at the start of every heap) ---- */

static __device__ __forceinline__ weft_u64_t *weft_sync_word(int index) {
  return (weft_u64_t *)weft_state.my_heap + index;
}
/* This call's epoch for slot: one more than the last finished call's. Every block of a kernel
 * reads the same value because only the last block to finish raises it (weft_epoch_finish). */
static __device__ __forceinline__ weft_u64_t weft_epoch_begin(int slot) {
  return *(volatile weft_u64_t *)weft_sync_word(WEFT_SYNC_EPOCHS + slot) + 1;
}
/* Called once per block (by one thread) at the end of a kernel that began epoch e on slot: the
 * last block to arrive publishes e, so the next kernel on the stream sees it. */
static __device__ __forceinline__ void weft_epoch_finish(int slot, weft_u64_t e) {
  unsigned long long *arrive = (unsigned long long *)weft_sync_word(WEFT_SYNC_ARRIVE + slot);
  unsigned blocks = gridDim.x * gridDim.y * gridDim.z;
  if (atomicAdd(arrive, 1ull) == blocks - 1) {
    *arrive = 0;
    *(volatile weft_u64_t *)weft_sync_word(WEFT_SYNC_EPOCHS + slot) = e;
  }
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

/* sync_all: a barrier of all ranks; weft's barrier already orders memory, so it is the same. */
#define weft_sync_all_block weft_barrier_all_block

/* Collective broadcast: every rank calls it with one block; root's n bytes at src land in dst
 * (symmetric) on every rank, and the call returns on every rank only once they have. */
static __device__ __forceinline__ void weft_broadcast_block(void *dst, const void *src,
                                                            weft_u64_t n, int root) {
  if (weft_my_pe() == root)
    for (int p = 0; p < weft_state.local_world; p++)
      weft_putmem_block(dst, src, n, weft_state.node_first_rank + p);
  weft_barrier_all_block();
}

#endif
