/*
 * weft/tile.cuh — TileLink's tile-centric primitives (Table 3 of the TileLink paper) over the
 * mappings of weft/tile_map.h (static/affine or dynamic/lookup-table: tile -> signal, rank, rows):
 *   producer_tile_notify / consumer_tile_wait   one GPU: a producer block to a consumer block
 *   peer_tile_notify / peer_tile_wait           across GPUs, per tile
 *   rank_notify / rank_wait                     across GPUs, per rank-level signal
 *   tile_push_data / tile_pull_data             a 2-D tile into / from a peer's symmetric matrix
 *   rank_copy_data                              a rank's whole contiguous chunk from a peer
 * The plain notify/wait names are called by one thread, which must already be ordered after (for
 * notify) the data it covers; the _block forms are called by every thread and do the block
 * barrier themselves. Data movers are _block.
 *
 * Signals are 64-bit counters in the symmetric heap; a tile's signal counts the notifies that
 * arrived (tiles, or chunks), so waits compare with >= and nothing is reset when callers compare
 * against a per-call base (epoch * notifies_per_signal).
 *
 * Ordering:
 * - Producer: data stores -> __syncthreads -> ONE thread's release (red.release .gpu for
 *   producer_tile_notify, .sys for peer/rank notify). Release is cumulative, so it covers the
 *   block's stores that the barrier ordered before it.
 * - Consumer: ONE thread's ld.acquire.sys wait -> __syncthreads -> the block's loads.
 * - Data written by TMA stores (async proxy): the issuing thread calls weft_tma_store_complete()
 *   (cp.async.bulk.wait_group 0 — not the .read form, which only frees the source — then
 *   fence.proxy.async.global) before the notify.
 * - Data read by TMA loads after a wait: weft_fence_proxy_async() (fence.proxy.async.global)
 *   between the acquire and the TMA load, by the thread that issues the load.
 */
#ifndef WEFT_TILE_CUH
#define WEFT_TILE_CUH

#include "weft/shmem.cuh"
#include "weft/tile_map.h"

/* Generic-proxy writes/acquires made visible to the async proxy (TMA), and back. */
static __device__ __forceinline__ void weft_fence_proxy_async(void) {
  asm volatile("fence.proxy.async.global;" ::: "memory");
}
/* After this thread's TMA stores (cp.async.bulk ... committed with cp.async.bulk.commit_group):
 * wait until they are complete — written, not just read from shared memory — and order them
 * with the generic proxy, so that a following notify's release covers them. */
static __device__ __forceinline__ void weft_tma_store_complete(void) {
  asm volatile("cp.async.bulk.wait_group 0;" ::: "memory");
  asm volatile("fence.proxy.async.global;" ::: "memory");
}

/* Same-GPU producer -> consumer (e.g. a GEMM tile done -> a communication block): .gpu scope. */
static __device__ __forceinline__ void weft_producer_tile_notify(weft_u64_t *sigs,
                                                                 const weft_tile_map_t *m, int tile) {
  weft_red_release_gpu(sigs + weft_tile_signal(m, tile), 1);
}
static __device__ __forceinline__ void weft_consumer_tile_wait(const weft_u64_t *sigs,
                                                               const weft_tile_map_t *m, int tile,
                                                               weft_u64_t expected) {
  weft_wait_until(sigs + weft_tile_signal(m, tile), WEFT_CMP_GE, expected, "consumer_tile_wait", -1);
}

/* Cross-GPU: notify pe's copy of the tile's signal (the tile's owner by default: pe < 0). */
static __device__ __forceinline__ void weft_peer_tile_notify(weft_u64_t *sigs,
                                                             const weft_tile_map_t *m, int tile,
                                                             int pe) {
  if (pe < 0) pe = weft_tile_rank(m, tile);
  weft_signal_op(sigs + weft_tile_signal(m, tile), 1, WEFT_SIGNAL_ADD, pe);
}
static __device__ __forceinline__ void weft_peer_tile_wait(const weft_u64_t *sigs,
                                                           const weft_tile_map_t *m, int tile,
                                                           weft_u64_t expected) {
  weft_wait_until(sigs + weft_tile_signal(m, tile), WEFT_CMP_GE, expected, "peer_tile_wait",
                  weft_tile_rank(m, tile));
}

/* Rank-level: add value to signal index idx on pe (release), and wait (acquire) until the local
 * signal idx reaches expected; from names the rank waited on in a timeout report. */
static __device__ __forceinline__ void weft_rank_notify(weft_u64_t *sigs, int idx, weft_u64_t value,
                                                        int pe) {
  weft_signal_op(sigs + idx, value, WEFT_SIGNAL_ADD, pe);
}
static __device__ __forceinline__ void weft_rank_wait(const weft_u64_t *sigs, int idx,
                                                      weft_u64_t expected, int from) {
  weft_wait_until(sigs + idx, WEFT_CMP_GE, expected, "rank_wait", from);
}

/* Block forms: every thread of the block calls them. Notify: barrier, then thread 0 releases.
 * Wait: thread 0 acquires, then barrier. */
static __device__ __forceinline__ void weft_producer_tile_notify_block(weft_u64_t *sigs,
                                                                       const weft_tile_map_t *m,
                                                                       int tile) {
  __syncthreads();
  if (weft_thread_rank() == 0) weft_producer_tile_notify(sigs, m, tile);
}
static __device__ __forceinline__ void weft_consumer_tile_wait_block(const weft_u64_t *sigs,
                                                                     const weft_tile_map_t *m,
                                                                     int tile, weft_u64_t expected) {
  if (weft_thread_rank() == 0) weft_consumer_tile_wait(sigs, m, tile, expected);
  __syncthreads();
}
static __device__ __forceinline__ void weft_peer_tile_notify_block(weft_u64_t *sigs,
                                                                   const weft_tile_map_t *m,
                                                                   int tile, int pe) {
  __syncthreads();
  if (weft_thread_rank() == 0) weft_peer_tile_notify(sigs, m, tile, pe);
}
static __device__ __forceinline__ void weft_peer_tile_wait_block(const weft_u64_t *sigs,
                                                                 const weft_tile_map_t *m, int tile,
                                                                 weft_u64_t expected) {
  if (weft_thread_rank() == 0) weft_peer_tile_wait(sigs, m, tile, expected);
  __syncthreads();
}
static __device__ __forceinline__ void weft_rank_notify_block(weft_u64_t *sigs, int idx,
                                                              weft_u64_t value, int pe) {
  __syncthreads();
  if (weft_thread_rank() == 0) weft_rank_notify(sigs, idx, value, pe);
}
static __device__ __forceinline__ void weft_rank_wait_block(const weft_u64_t *sigs, int idx,
                                                            weft_u64_t expected, int from) {
  if (weft_thread_rank() == 0) weft_rank_wait(sigs, idx, expected, from);
  __syncthreads();
}

/* A tile of a row-major matrix: rows x cols elements of elem bytes at (row0, col0), leading
 * dimension ld (elements). */
typedef struct weft_tile {
  long long row0, col0;
  int rows, cols;
  long long ld;
  int elem;
} weft_tile_t;

/* The tile of a map: tile t's rows (weft_tile_row0 / weft_tile_rows), columns [col0, + cols). */
static __device__ __forceinline__ weft_tile_t weft_tile_of_map(const weft_tile_map_t *m, int t,
                                                               long long col0, int cols,
                                                               long long ld, int elem) {
  weft_tile_t r;
  r.row0 = weft_tile_row0(m, t);
  r.col0 = col0;
  r.rows = weft_tile_rows(m, t);
  r.cols = cols;
  r.ld = ld;
  r.elem = elem;
  return r;
}

/* Copies a tile between two matrices of the same shape, the block's threads striding over rows. */
static __device__ __forceinline__ void weft_tile_copy_block(char *dst, const char *src,
                                                            weft_tile_t t) {
  unsigned tid = weft_thread_rank();
  unsigned nt = weft_block_size();
  weft_u64_t row_bytes = (weft_u64_t)t.cols * t.elem;
  /* A warp per row: rows are contiguous, so each warp streams one. The last warp of a block
   * whose size is not a multiple of 32 strides by its own size. */
  unsigned warp = tid / 32, nwarps = (nt + 31) / 32;
  unsigned width = nt - warp * 32 < 32 ? nt - warp * 32 : 32;
  for (int r = (int)warp; r < t.rows; r += (int)nwarps) {
    weft_u64_t off = ((weft_u64_t)(t.row0 + r) * (weft_u64_t)t.ld + (weft_u64_t)t.col0) * t.elem;
    weft_copy_group(dst + off, src + off, row_bytes, tid & 31, width);
  }
  __syncthreads();
}

/* Push a tile of my matrix into pe's copy (symmetric), pull pe's into mine. */
static __device__ __forceinline__ void weft_tile_push_data_block(void *mat, const void *src_mat,
                                                                 weft_tile_t t, int pe) {
  weft_tile_copy_block((char *)weft_remote_ptr(mat, pe), (const char *)src_mat, t);
}
static __device__ __forceinline__ void weft_tile_pull_data_block(void *dst_mat, const void *mat,
                                                                 weft_tile_t t, int pe) {
  weft_tile_copy_block((char *)dst_mat, (const char *)weft_remote_ptr(mat, pe), t);
}

/* A whole rank's chunk: n bytes at offset off of a symmetric buffer, from pe into my copy. */
static __device__ __forceinline__ void weft_rank_copy_data_block(void *buf, weft_u64_t off,
                                                                 weft_u64_t n, int pe) {
  weft_getmem_block((char *)buf + off, (const char *)buf + off, n, pe);
}

#endif
