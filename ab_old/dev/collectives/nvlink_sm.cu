/*
 * nvlink_sm.cu — how many bytes one SM moves over NVLink, by method: the question behind every
 * SM-driven collective and overlap consumer in weft (they measured 2-5 GB/s a block; NCCL's
 * channels ~10-17). One process, GPU 0 and GPU 1 with peer access; GPU 0's blocks move `bytes`
 * between its memory and GPU 1's, each block a contiguous share:
 *   push_u<U>   512 threads, 16-byte loads of local memory, U in flight a thread, then remote stores
 *   pull_u<U>   512 threads, U 16-byte remote loads in flight a thread, then local stores
 *   bulk_push   one thread: cp.async.bulk global->shared of local chunks (BULK_NBUF in flight), then
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
#include "bulk.cuh"
#define THREADS 512

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
  default: bulk_copy<<<blocks, 32, BULK_NBUF * BULK_CHUNK>>>(dst, src, bytes); break;
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
  CK(cudaFuncSetAttribute(bulk_copy, cudaFuncAttributeMaxDynamicSharedMemorySize, BULK_NBUF * BULK_CHUNK));
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
