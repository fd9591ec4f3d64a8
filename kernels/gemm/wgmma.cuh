/*
 * kernels/gemm/wgmma.cuh — the warpgroup MMA (wgmma) PTX of weft's GEMM (kernels/gemm/gemm.cu)
 * around the instruction, for any kernel: the fence before a warpgroup's wgmmas use registers,
 * the commit of the issued wgmmas as a group, the wait until at most n groups are pending
 * (WEFT_GEMM_WGMMA_WAIT(n): n is part of the instruction's text), and the shared-memory matrix
 * descriptor of a 128-byte-swizzled operand. The instruction itself, whose text names every
 * accumulator register, is kernels/gemm/wgmma_acc.cuh.
 *
 * Expects nothing before it (includes kernels/gemm/ptx.cuh).
 */
#ifndef WEFT_KERNELS_GEMM_WGMMA_CUH
#define WEFT_KERNELS_GEMM_WGMMA_CUH

#include "kernels/gemm/ptx.cuh"

__device__ __forceinline__ void weft_gemm_wgmma_fence(void) {
  asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
}
__device__ __forceinline__ void weft_gemm_wgmma_commit(void) {
  asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
}
#define WEFT_GEMM_WGMMA_WAIT(n) asm volatile("wgmma.wait_group.sync.aligned " #n ";" ::: "memory")

/* wgmma shared-memory descriptor, 128B swizzle: start >> 4 in bits 0-13, LBO >> 4 in 16-29,
 * SBO >> 4 in 32-45, swizzle mode 1 (128B) in 62-63. */
__device__ __forceinline__ u64 weft_gemm_desc(u32 addr, u32 lbo, u32 sbo) {
  return (u64)((addr & 0x3FFFF) >> 4) | ((u64)(lbo >> 4) << 16) | ((u64)(sbo >> 4) << 32) |
         (1ULL << 62);
}

#endif
