/*
 * weft/tile.cuh — TileLink's tile-centric primitives (Table 3 of the TileLink paper) over the
 * mappings of weft/tile_map.h. Signals are 64-bit counters in the symmetric heap; a tile's
 * signal counts the tiles (or chunks) that arrived, so waits compare with >= and nothing is reset
 * when callers compare against a per-call base (epoch * tiles_per_signal).
 *
 * Ordering: producer side, data stores -> (block barrier) -> one thread's release (red.release);
 * consumer side, one thread's acquire wait -> block barrier -> data loads. For data written by
 * TMA stores, put cp.async.bulk.wait_group 0 and fence.proxy.async.global before the notify;
 * before a TMA load of data guarded by a wait, fence.proxy.async.global after it
 * (weft_fence_proxy_async).
 */
#ifndef WEFT_TILE_CUH
#define WEFT_TILE_CUH

#include "weft/shmem.cuh"
#include "weft/tile_map.h"

static __device__ __forceinline__ void weft_fence_proxy_async(void) {
  asm volatile("fence.proxy.async.global;" ::: "memory");
}

/* Same-GPU producer -> consumer (e.g. a GEMM tile done -> a communication block): .gpu scope. */
static __device__ __forceinline__ void weft_producer_tile_notify(weft_u64_t *sigs,
                                                                 const weft_tile_map_t *m, int tile) {
  weft_u64_t *s = sigs + weft_tile_signal(m, tile);
  asm volatile("red.release.gpu.global.add.u64 [%0], 1;" ::"l"(s) : "memory");
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

/* Rank-level: signal index idx on pe (add value), and wait for it here. */
static __device__ __forceinline__ void weft_rank_notify(weft_u64_t *sigs, int idx, weft_u64_t value,
                                                        int pe) {
  weft_signal_op(sigs + idx, value, WEFT_SIGNAL_ADD, pe);
}
static __device__ __forceinline__ void weft_rank_wait(const weft_u64_t *sigs, int idx,
                                                      weft_u64_t expected, int from) {
  weft_wait_until(sigs + idx, WEFT_CMP_GE, expected, "rank_wait", from);
}

/* A tile of a row-major matrix: rows x cols elements of elem bytes at (row0, col0), leading
 * dimension ld (elements). */
typedef struct weft_tile {
  long long row0, col0;
  int rows, cols;
  long long ld;
  int elem;
} weft_tile_t;

/* Copies a tile between two matrices of the same shape, the block's threads striding over rows. */
static __device__ __forceinline__ void weft_tile_copy_block(char *dst, const char *src,
                                                            weft_tile_t t) {
  unsigned tid = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
  unsigned nt = blockDim.x * blockDim.y * blockDim.z;
  weft_u64_t row_bytes = (weft_u64_t)t.cols * t.elem;
  /* A warp per row: rows are contiguous, so each warp streams one. */
  unsigned warp = tid / 32, nwarps = (nt + 31) / 32;
  for (int r = (int)warp; r < t.rows; r += (int)nwarps) {
    weft_u64_t off = ((weft_u64_t)(t.row0 + r) * (weft_u64_t)t.ld + (weft_u64_t)t.col0) * t.elem;
    weft_copy_group(dst + off, src + off, row_bytes, tid & 31, 32);
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
