/*
 * kernels/gemm/tma.cuh — the TMA (cp.async.bulk.tensor) PTX of weft's GEMM
 * (kernels/gemm/gemm.cu), for any kernel: the tensor map, passed by value as a
 * __grid_constant__ kernel parameter; 2-D tile loads into shared memory that complete an
 * mbarrier's transaction bytes, plain or multicast to CTAs of the cluster, each also with an L2
 * cache policy, and 3-D ones (a batch of matrices, e.g. one per expert); 2-D and 3-D tile stores
 * from shared memory; the bulk async-group commit and the
 * waits for a group's reads of shared memory and for its completion. The host encodes the maps
 * (src/ops/gemm/launch.c); kernels/gemm/gemm.cu describes each of the GEMM's.
 *
 * Expects nothing before it (includes kernels/gemm/ptx.cuh).
 */
#ifndef WEFT_KERNELS_GEMM_TMA_CUH
#define WEFT_KERNELS_GEMM_TMA_CUH

#include "kernels/gemm/ptx.cuh"

/* CUtensorMap (no cuda.h under NVRTC): 128 opaque bytes, 64-byte aligned. */
typedef struct __align__(64) weft_gemm_tmap { u64 v[16]; } weft_gemm_tmap_t;

__device__ __forceinline__ void weft_gemm_tma_load(u32 dst, const weft_gemm_tmap_t *map,
                                                         int c0, int c1, u32 bar) {
  asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes"
               " [%0], [%1, {%2, %3}], [%4];" ::"r"(dst),
               "l"((u64)map), "r"(c0), "r"(c1), "r"(bar)
               : "memory");
}

__device__ __forceinline__ void weft_gemm_tma_load_mc(u32 dst, const weft_gemm_tmap_t *map,
                                                            int c0, int c1, u32 bar,
                                                            unsigned short mask) {
  asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes"
               ".multicast::cluster [%0], [%1, {%2, %3}], [%4], %5;" ::"r"(dst),
               "l"((u64)map), "r"(c0), "r"(c1), "r"(bar), "h"(mask)
               : "memory");
}

/* TMA loads with an L2 cache policy (createpolicy): WEFT_GEMM_B_EVICT_FIRST */
__device__ __forceinline__ void weft_gemm_tma_load_hint(u32 dst, const weft_gemm_tmap_t *map,
                                                        int c0, int c1, u32 bar, u64 policy) {
  asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes"
               ".L2::cache_hint [%0], [%1, {%2, %3}], [%4], %5;" ::"r"(dst),
               "l"((u64)map), "r"(c0), "r"(c1), "r"(bar), "l"(policy)
               : "memory");
}

__device__ __forceinline__ void weft_gemm_tma_load_mc_hint(u32 dst, const weft_gemm_tmap_t *map,
                                                           int c0, int c1, u32 bar,
                                                           unsigned short mask, u64 policy) {
  asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes"
               ".multicast::cluster.L2::cache_hint [%0], [%1, {%2, %3}], [%4], %5, %6;" ::"r"(dst),
               "l"((u64)map), "r"(c0), "r"(c1), "r"(bar), "h"(mask), "l"(policy)
               : "memory");
}

/* 3-D: matrix c2 of a batch (tiles past any edge of it read zeros) */
__device__ __forceinline__ void weft_gemm_tma_load3(u32 dst, const weft_gemm_tmap_t *map, int c0,
                                                    int c1, int c2, u32 bar) {
  asm volatile("cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes"
               " [%0], [%1, {%2, %3, %4}], [%5];" ::"r"(dst),
               "l"((u64)map), "r"(c0), "r"(c1), "r"(c2), "r"(bar)
               : "memory");
}

__device__ __forceinline__ void weft_gemm_tma_load3_hint(u32 dst, const weft_gemm_tmap_t *map,
                                                         int c0, int c1, int c2, u32 bar,
                                                         u64 policy) {
  asm volatile("cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes"
               ".L2::cache_hint [%0], [%1, {%2, %3, %4}], [%5], %6;" ::"r"(dst),
               "l"((u64)map), "r"(c0), "r"(c1), "r"(c2), "r"(bar), "l"(policy)
               : "memory");
}

__device__ __forceinline__ void weft_gemm_tma_store(const weft_gemm_tmap_t *map, u32 src,
                                                          int c0, int c1) {
  asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%0, {%1, %2}], [%3];" ::"l"(
                   (u64)map),
               "r"(c0), "r"(c1), "r"(src)
               : "memory");
}

/* SCATTER: a box into rank c2's slot (tm_c 3-D) */
__device__ __forceinline__ void weft_gemm_tma_store3(const weft_gemm_tmap_t *map, u32 src,
                                                     int c0, int c1, int c2) {
  asm volatile("cp.async.bulk.tensor.3d.global.shared::cta.bulk_group [%0, {%1, %2, %3}], [%4];" ::"l"(
                   (u64)map),
               "r"(c0), "r"(c1), "r"(c2), "r"(src)
               : "memory");
}

__device__ __forceinline__ void weft_gemm_bulk_commit(void) {
  asm volatile("cp.async.bulk.commit_group;" ::: "memory");
}
__device__ __forceinline__ void weft_gemm_bulk_wait_read0(void) {
  asm volatile("cp.async.bulk.wait_group.read 0;" ::: "memory");
}
__device__ __forceinline__ void weft_gemm_bulk_wait0(void) {
  asm volatile("cp.async.bulk.wait_group 0;" ::: "memory");
}

#endif
