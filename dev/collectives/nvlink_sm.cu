/*
 * nvlink_sm.cu — how many bytes one SM moves over NVLink, by method: the question behind every
 * SM-driven collective and overlap consumer in weft (they measured 2-5 GB/s a block; NCCL's
 * channels ~10-17). One process, GPU 0 and GPU 1 with peer access; GPU 0's blocks move `bytes`
 * between its memory and GPU 1's, each block a contiguous share:
 *   push_u<U>   512 threads, 16-byte loads of local memory, U in flight a thread, then remote stores
 *   pull_u<U>   512 threads, U 16-byte remote loads in flight a thread, then local stores
 *   bulk_push   one thread: cp.async.bulk global->shared of local chunks (NBUF in flight), then
 *               cp.async.bulk shared->global into the peer (the TMA unit, no registers)
 *   bulk_pull   the same with the peer's chunks loaded and stored locally
 * Timing: cudaEvents around one launch, median of 5 after a warm-up; GB = 1e9 bytes.
 * Build and run (device tool, 2 GPUs):
 *   nvcc -O3 -arch=sm_90a -o /tmp/nvlink_sm dev/collectives/nvlink_sm.cu && /tmp/nvlink_sm
 * Bulk waits are bounded (2 s of %globaltimer): on expiry a block prints what it waited for and
 * traps.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../cuda_check.h"

typedef unsigned long long u64;
#define THREADS 512
#define CHUNK (32u << 10) /* bulk copies: bytes a chunk */
#define NBUF 6           /* bulk copies: chunks in flight (6 x 32 KiB of shared memory) */

#define DEFINE_PUSH_PULL(U)                                                                      \
  __global__ void __launch_bounds__(THREADS) push_u##U(uint4 *dst, const uint4 *src, u64 n) {     \
    u64 per = (n + gridDim.x - 1) / gridDim.x, lo = per * blockIdx.x;                            \
    u64 hi = lo + per < n ? lo + per : n;                                                        \
    for (u64 v = lo + threadIdx.x; v < hi; v += (u64)U * THREADS) {                             \
      uint4 x[U];                                                                                \
      _Pragma("unroll") for (int u = 0; u < U; u++) if (v + (u64)u * THREADS < hi) x[u] =        \
          src[v + (u64)u * THREADS];                                                             \
      _Pragma("unroll") for (int u = 0; u < U; u++) if (v + (u64)u * THREADS < hi)               \
          dst[v + (u64)u * THREADS] = x[u];                                                      \
    }                                                                                            \
  }
DEFINE_PUSH_PULL(1)
DEFINE_PUSH_PULL(4)
DEFINE_PUSH_PULL(8)
/* (pull is the same loop with a remote src and a local dst) */

__device__ __forceinline__ unsigned smem_addr(const void *p) {
  return (unsigned)__cvta_generic_to_shared(p);
}
__device__ __forceinline__ u64 gtimer(void) {
  u64 t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}
__device__ void mbar_wait(unsigned bar, unsigned parity, u64 chunk) {
  u64 start = gtimer();
  for (;;) {
    unsigned ok;
    asm volatile("{ .reg .pred p; mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2; selp.u32 %0, 1, 0, p; }"
                 : "=r"(ok) : "r"(bar), "r"(parity) : "memory");
    if (ok) return;
    if (gtimer() - start > 2000000000ull) {
      printf("nvlink_sm: block %d timed out waiting for chunk %llu's bulk load (parity %u)\n",
             blockIdx.x, chunk, parity);
      asm volatile("trap;");
    }
  }
}

/* One thread a block: chunks of the block's share, NBUF loads ahead of the stores. */
__global__ void bulk_copy(char *dst, const char *src, u64 bytes) {
  extern __shared__ __align__(128) char buf[];
  __shared__ __align__(8) u64 bars[NBUF];
  if (threadIdx.x) return;
  u64 per = (bytes / gridDim.x + CHUNK - 1) / CHUNK * CHUNK, lo = per * blockIdx.x;
  u64 hi = lo + per < bytes ? lo + per : bytes;
  if (lo >= hi) return;
  u64 n = (hi - lo + CHUNK - 1) / CHUNK;
  for (int b = 0; b < NBUF; b++)
    asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(smem_addr(&bars[b])));
  asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  for (u64 i = 0; i < n + NBUF; i++) {
    if (i >= NBUF) { /* store chunk j = i - NBUF once loaded */
      u64 j = i - NBUF;
      int b = (int)(j % NBUF);
      unsigned len = (unsigned)(hi - lo - j * CHUNK < CHUNK ? hi - lo - j * CHUNK : CHUNK);
      mbar_wait(smem_addr(&bars[b]), (unsigned)(j / NBUF) & 1, j);
      asm volatile("cp.async.bulk.global.shared::cta.bulk_group [%0], [%1], %2;"
                   ::"l"(dst + lo + j * CHUNK), "r"(smem_addr(buf + b * CHUNK)), "r"(len) : "memory");
      asm volatile("cp.async.bulk.commit_group;" ::: "memory");
      asm volatile("cp.async.bulk.wait_group.read 0;" ::: "memory"); /* buffer b free again */
    }
    if (i < n) { /* load chunk i into buffer i % NBUF */
      int b = (int)(i % NBUF);
      unsigned len = (unsigned)(hi - lo - i * CHUNK < CHUNK ? hi - lo - i * CHUNK : CHUNK);
      unsigned bar = smem_addr(&bars[b]);
      asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(bar), "r"(len) : "memory");
      asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];"
                   ::"r"(smem_addr(buf + b * CHUNK)), "l"(src + lo + i * CHUNK), "r"(len), "r"(bar) : "memory");
    }
  }
  asm volatile("cp.async.bulk.wait_group 0;" ::: "memory");
}

typedef enum { PUSH1, PUSH4, PUSH8, PULL1, PULL4, PULL8, BULK_PUSH, BULK_PULL, NMODES } mode_t_;
static const char *names[] = {"push_u1", "push_u4", "push_u8", "pull_u1", "pull_u4", "pull_u8",
                              "bulk_push", "bulk_pull"};

static void launch(int mode, int blocks, char *local, char *remote, u64 bytes) {
  int push = mode == PUSH1 || mode == PUSH4 || mode == PUSH8 || mode == BULK_PUSH;
  char *dst = push ? remote : local + bytes; /* pull: into the second half of local */
  const char *src = push ? local : remote;
  u64 nv = bytes / 16;
  switch (mode) {
  case PUSH1: case PULL1: push_u1<<<blocks, THREADS>>>((uint4 *)dst, (const uint4 *)src, nv); break;
  case PUSH4: case PULL4: push_u4<<<blocks, THREADS>>>((uint4 *)dst, (const uint4 *)src, nv); break;
  case PUSH8: case PULL8: push_u8<<<blocks, THREADS>>>((uint4 *)dst, (const uint4 *)src, nv); break;
  default: bulk_copy<<<blocks, 32, NBUF * CHUNK>>>(dst, src, bytes); break;
  }
  CK(cudaGetLastError());
}

static int cmp(const void *a, const void *b) {
  float x = *(const float *)a, y = *(const float *)b;
  return x < y ? -1 : x > y;
}

int main(void) {
  int n;
  CK(cudaGetDeviceCount(&n));
  if (n < 2) {
    printf("nvlink_sm: needs 2 GPUs, found %d\n", n);
    return 77;
  }
  const u64 bytes = 256ull << 20;
  char *local, *remote;
  CK(cudaSetDevice(1));
  CK(cudaMalloc(&remote, bytes));
  CK(cudaMemset(remote, 1, bytes));
  CK(cudaSetDevice(0));
  CK(cudaDeviceEnablePeerAccess(1, 0));
  CK(cudaMalloc(&local, 2 * bytes));
  CK(cudaMemset(local, 2, 2 * bytes));
  CK(cudaFuncSetAttribute(bulk_copy, cudaFuncAttributeMaxDynamicSharedMemorySize, NBUF * CHUNK));
  cudaEvent_t t0, t1;
  CK(cudaEventCreate(&t0));
  CK(cudaEventCreate(&t1));
  static const int grids[] = {1, 2, 4, 8, 16, 32, 64, 132};
  printf("# GPU0 <-> GPU1, %llu MiB a launch; GB/s in total and per block (median of 5)\n",
         bytes >> 20);
  printf("%-10s", "blocks");
  for (int g = 0; g < 8; g++) printf(" %15d", grids[g]);
  printf("\n");
  for (int m = 0; m < NMODES; m++) {
    printf("%-10s", names[m]);
    for (int g = 0; g < 8; g++) {
      /* small grids move less, so that a launch stays near 10-50 ms */
      u64 b = grids[g] < 8 ? bytes / 8 * grids[g] / 4 : bytes;
      launch(m, grids[g], local, remote, b);
      float ms[5];
      for (int r = 0; r < 5; r++) {
        CK(cudaEventRecord(t0));
        launch(m, grids[g], local, remote, b);
        CK(cudaEventRecord(t1));
        CK(cudaEventSynchronize(t1));
        CK(cudaEventElapsedTime(&ms[r], t0, t1));
      }
      qsort(ms, 5, sizeof ms[0], cmp);
      double gbs = b / (ms[2] * 1e-3) / 1e9;
      printf(" %7.1f (%5.1f)", gbs, gbs / grids[g]);
      fflush(stdout);
    }
    printf("\n");
  }
  CK(cudaDeviceSynchronize());
  return 0;
}
