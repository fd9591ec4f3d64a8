/*
 * red_sm.cu — how fast GEMM + AllReduce's SM reducers can sum on a few blocks: the consumer's
 * trace (ar_sm_trace.sh, README.md) had weft_red_sum_range move ~6 GB/s a block inside the
 * consumer, where one block pushes ~44 GB/s over NVLink (dev/collectives/nvlink_sm.cu). This runs
 * the same function alone, in the consumer's shape, so the two can be told apart: GPU 0's blocks
 * sum two local bf16 sources (its partial and the peer's staged copy) into 32 MiB of sums, in
 * 128 KiB items dealt round-robin to the blocks as kernels/gemm_ar.cu deals them, and store the
 * sums by mode:
 *   local      into GPU 0's memory only
 *   push       into GPU 0's and GPU 1's (the consumer's stores, world = 2)
 *   remote     into GPU 1's only
 *   copy       one source, stored into GPU 1 (a push through the same loop)
 *   range_push push, one weft_red_sum_range call a block over a contiguous share of items
 *   pipe_push  push through a loop that loads the next vectors before it stores the current
 *              ones (bf16, two sources, pointers known global; across items)
 *   pipe_gener the same with the pointers from shared memory (generic, as weft's)
 *   pipe_items the same as pipe_push, the pipeline drained at every item's end
 * Every mode's sums are checked against a host sum of the same random inputs (bit for bit:
 * both round the fp32 sum of two bf16 values once).
 * Build and run (device tool, 2 GPUs), the in-flight counts as the consumer's -D's:
 *   nvcc -O3 -arch=sm_90a -I include -DWEFT_RED_UNROLL=8 -DWEFT_RED_BATCH=2 -o /tmp/red_sm \
 *     dev/overlap/red_sm.cu && /tmp/red_sm     (-DRED_THREADS=512: blocks of 512 threads)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <weft/reduce.cuh>

#include "../cuda_check.h"

typedef unsigned long long u64;
#define ITEM (128ull << 10) /* bytes of sums an item */
#ifndef RED_THREADS
#define RED_THREADS 256 /* threads a block (the consumer's) */
#endif
#ifndef PIPE_U
#define PIPE_U 8 /* pipe_push: vectors a thread in flight per source */
#endif

struct ptrs {
  const char *src[2];
  char *dst[2];
  int nsrc, ndst;
};

__global__ void __launch_bounds__(RED_THREADS) red_items(struct ptrs p, u64 bytes, int dtype) {
  __shared__ const char *srcs[2];
  __shared__ char *dsts[2];
  u64 items = bytes / ITEM, n = ITEM / 2;
  for (u64 it = blockIdx.x; it < items; it += gridDim.x) {
    if (threadIdx.x < 2) {
      srcs[threadIdx.x] = p.src[threadIdx.x] + it * ITEM;
      dsts[threadIdx.x] = p.dst[threadIdx.x] + it * ITEM;
    }
    __syncthreads();
    weft_red_sum_range(srcs, p.nsrc, dsts, p.ndst, n, dtype, threadIdx.x, blockDim.x);
    __syncthreads();
  }
}

__device__ __forceinline__ uint4 add_bf16x8(uint4 a, uint4 b) {
  float acc[2];
  uint4 o;
  weft_red_word_add(acc, a.x, WEFT_RED_BF16, 1), weft_red_word_add(acc, b.x, WEFT_RED_BF16, 0);
  o.x = weft_red_word_pack(acc, WEFT_RED_BF16);
  weft_red_word_add(acc, a.y, WEFT_RED_BF16, 1), weft_red_word_add(acc, b.y, WEFT_RED_BF16, 0);
  o.y = weft_red_word_pack(acc, WEFT_RED_BF16);
  weft_red_word_add(acc, a.z, WEFT_RED_BF16, 1), weft_red_word_add(acc, b.z, WEFT_RED_BF16, 0);
  o.z = weft_red_word_pack(acc, WEFT_RED_BF16);
  weft_red_word_add(acc, a.w, WEFT_RED_BF16, 1), weft_red_word_add(acc, b.w, WEFT_RED_BF16, 0);
  o.w = weft_red_word_pack(acc, WEFT_RED_BF16);
  return o;
}

/* weft_red_sum_range once a block, over a contiguous share of whole items (no per-item calls) */
__global__ void __launch_bounds__(RED_THREADS) red_range(struct ptrs p, u64 bytes, int dtype) {
  __shared__ const char *srcs[2];
  __shared__ char *dsts[2];
  u64 items = bytes / ITEM, per = (items + gridDim.x - 1) / gridDim.x, lo = per * blockIdx.x;
  u64 hi = lo + per < items ? lo + per : items;
  if (lo >= hi) return;
  if (threadIdx.x < 2) {
    srcs[threadIdx.x] = p.src[threadIdx.x] + lo * ITEM;
    dsts[threadIdx.x] = p.dst[threadIdx.x] + lo * ITEM;
  }
  __syncthreads();
  weft_red_sum_range(srcs, p.nsrc, dsts, p.ndst, (hi - lo) * ITEM / 2, dtype, threadIdx.x, blockDim.x);
}

/* Two sources, two destinations, the next PIPE_U vectors' loads issued before this PIPE_U's
 * stores. restart: the pipeline drains at every item's end (as a loop of per-item calls does),
 * else an item's vectors run straight into the next item's (the block's items are known).
 * generic: the pointers come from shared memory (as weft_red_sum_range's do), so the compiler
 * cannot know they are global. */
__global__ void __launch_bounds__(RED_THREADS) red_pipe(struct ptrs p, u64 bytes, int restart, int generic) {
  __shared__ const char *ss[2];
  __shared__ char *ds[2];
  if (threadIdx.x < 2) ss[threadIdx.x] = p.src[threadIdx.x], ds[threadIdx.x] = p.dst[threadIdx.x];
  __syncthreads();
  const uint4 *s0 = (const uint4 *)(generic ? ss[0] : p.src[0]), *s1 = (const uint4 *)(generic ? ss[1] : p.src[1]);
  uint4 *d0 = (uint4 *)(generic ? ds[0] : p.dst[0]), *d1 = (uint4 *)(generic ? ds[1] : p.dst[1]);
  u64 items = bytes / ITEM, per = ITEM / 16, nt = blockDim.x, chunk = PIPE_U * nt;
  u64 mine = items > blockIdx.x ? (items - blockIdx.x + gridDim.x - 1) / gridDim.x : 0;
  u64 steps = mine * per / chunk, in_item = per / chunk; /* per is a multiple of PIPE_U * nt */
  uint4 a[PIPE_U], b[PIPE_U];
#define PIPE_AT(s, u)                                                                            \
  (((blockIdx.x + ((s) * chunk) / per * gridDim.x) * per) + ((s) * chunk) % per + (u) * nt + threadIdx.x)
  if (steps == 0) return;
#pragma unroll
  for (int u = 0; u < PIPE_U; u++) a[u] = s0[PIPE_AT(0, u)], b[u] = s1[PIPE_AT(0, u)];
  for (u64 s = 0; s < steps; s++) {
    uint4 na[PIPE_U], nb[PIPE_U];
    int ahead = s + 1 < steps && !(restart && (s + 1) % in_item == 0);
    if (ahead) {
#pragma unroll
      for (int u = 0; u < PIPE_U; u++) na[u] = s0[PIPE_AT(s + 1, u)], nb[u] = s1[PIPE_AT(s + 1, u)];
    }
#pragma unroll
    for (int u = 0; u < PIPE_U; u++) {
      uint4 o = add_bf16x8(a[u], b[u]);
      u64 v = PIPE_AT(s, u);
      d0[v] = o;
      d1[v] = o;
    }
    if (!ahead && s + 1 < steps) { /* an item's end: the next item's loads after the stores */
      __syncthreads();
#pragma unroll
      for (int u = 0; u < PIPE_U; u++) na[u] = s0[PIPE_AT(s + 1, u)], nb[u] = s1[PIPE_AT(s + 1, u)];
    }
#pragma unroll
    for (int u = 0; u < PIPE_U; u++) a[u] = na[u], b[u] = nb[u];
  }
}

static unsigned short f2bf(float f) { /* round to nearest even; inputs are finite */
  unsigned u;
  memcpy(&u, &f, 4);
  return (unsigned short)((u + 0x7fffu + ((u >> 16) & 1)) >> 16);
}
static float bf2f(unsigned short h) {
  unsigned u = (unsigned)h << 16;
  float f;
  memcpy(&f, &u, 4);
  return f;
}
static int cmp(const void *a, const void *b) {
  float x = *(const float *)a, y = *(const float *)b;
  return x < y ? -1 : x > y;
}

enum { LOCAL, PUSH, REMOTE, COPY, RANGE_PUSH, PIPE_PUSH, PIPE_GENERIC, PIPE_RESTART, NMODES };
static const char *names[] = {"local", "push", "remote", "copy", "range_push", "pipe_push", "pipe_gener", "pipe_items"};

int main(void) {
  int n, threads = RED_THREADS;
  CK(cudaGetDeviceCount(&n));
  if (n < 2) {
    printf("red_sm: needs 2 GPUs, found %d\n", n);
    return 77;
  }
  const u64 bytes = 32ull << 20, nel = bytes / 2;
  unsigned short *h[2], *out = (unsigned short *)malloc(bytes);
  srand((unsigned)time(NULL));
  for (int s = 0; s < 2; s++) {
    h[s] = (unsigned short *)malloc(bytes);
    for (u64 i = 0; i < nel; i++) h[s][i] = f2bf((float)rand() / RAND_MAX * 2.f - 1.f);
  }
  char *loc, *rem;
  CK(cudaSetDevice(1));
  CK(cudaMalloc(&rem, bytes));
  CK(cudaSetDevice(0));
  CK(cudaDeviceEnablePeerAccess(1, 0));
  CK(cudaMalloc(&loc, 3 * bytes)); /* two sources, then the local sums */
  for (int s = 0; s < 2; s++) CK(cudaMemcpy(loc + s * bytes, h[s], bytes, cudaMemcpyHostToDevice));
  CK(cudaMemset(loc + 2 * bytes, 0xff, bytes)); /* outputs poisoned (bf16 NaN) before every mode */
  CK(cudaMemset(rem, 0xff, bytes));
  cudaEvent_t t0, t1;
  CK(cudaEventCreate(&t0));
  CK(cudaEventCreate(&t1));
  static const int grids[] = {1, 4, 8, 11, 16, 32};
  printf("# GPU0 sums 2 x 32 MiB bf16 in 128 KiB items, %d threads a block, UNROLL %d BATCH %d "
         "(pipe: %d); GB/s of sums (per block), median of 5\n%-10s",
         threads, WEFT_RED_UNROLL, WEFT_RED_BATCH, PIPE_U, "blocks");
  for (int g = 0; g < 6; g++) printf(" %14d", grids[g]);
  printf("  check\n");
  int bad_any = 0;
  for (int m = 0; m < NMODES; m++) {
    struct ptrs p = {{loc, loc + bytes}, {loc + 2 * bytes, rem}, m == COPY ? 1 : 2,
                     m == LOCAL || m == REMOTE || m == COPY ? 1 : 2};
    if (m == REMOTE || m == COPY) p.dst[0] = rem;
    printf("%-10s", names[m]);
    for (int g = 0; g < 6; g++) {
      float ms[5];
      for (int r = -1; r < 5; r++) {
        CK(cudaEventRecord(t0));
        if (m >= PIPE_PUSH) red_pipe<<<grids[g], threads>>>(p, bytes, m == PIPE_RESTART, m == PIPE_GENERIC);
        else if (m == RANGE_PUSH) red_range<<<grids[g], threads>>>(p, bytes, WEFT_RED_BF16);
        else red_items<<<grids[g], threads>>>(p, bytes, WEFT_RED_BF16); /* a variable, as in weft */
        CK(cudaGetLastError());
        CK(cudaEventRecord(t1));
        CK(cudaEventSynchronize(t1));
        if (r >= 0) CK(cudaEventElapsedTime(&ms[r], t0, t1));
      }
      qsort(ms, 5, sizeof ms[0], cmp);
      double gbs = bytes / (ms[2] * 1e-3) / 1e9;
      printf(" %6.1f (%5.1f)", gbs, gbs / grids[g]);
      fflush(stdout);
    }
    /* every destination holds every sum */
    u64 bad = 0;
    for (int d = 0; d < p.ndst; d++) {
      if (p.dst[d] == rem) {
        CK(cudaSetDevice(1));
        CK(cudaMemcpy(out, rem, bytes, cudaMemcpyDeviceToHost));
        CK(cudaMemset(rem, 0xff, bytes)); /* poison for the next mode */
        CK(cudaSetDevice(0));
      } else {
        CK(cudaMemcpy(out, p.dst[d], bytes, cudaMemcpyDeviceToHost));
        CK(cudaMemset(p.dst[d], 0xff, bytes));
      }
      for (u64 i = 0; i < nel; i++) {
        unsigned short want = p.nsrc == 1 ? h[0][i] : f2bf(bf2f(h[0][i]) + bf2f(h[1][i]));
        bad += out[i] != want;
      }
    }
    printf("  %s\n", bad ? "WRONG" : "ok");
    if (bad) printf("  %llu wrong elements\n", bad), bad_any = 1;
  }
  CK(cudaDeviceSynchronize());
  return bad_any;
}
