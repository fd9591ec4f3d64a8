/*
 * bidir.cu — can one GPU pull and push over NVLink at once, and how must the work be split for
 * it? The question behind AllReduce two-shot (kernels/reduce.cu, weft_red_pull with push = 1),
 * which at 4 ranks takes the time of a ReduceScatter plus an AllGather (h200-x4: 1277 us at
 * 256 MB against NCCL's 1186, bench/results/2026-11-26-collectives-h200x4.md) although its reads
 * come in and its stores go out.
 * One process, every local GPU, all running at once; each GPU g owns a segment of B bytes of
 * every buffer (a two-shot AllReduce of world x B bytes):
 *   pull    g reads segment g of every peer's `in`, stores it in its own `out` (incoming)
 *   push    g reads its segment g of `in`, stores it in segment g of every peer's `out` (outgoing)
 *   mixed   the two-shot's pattern: every thread loads segment g of every rank's `in` (next
 *           vector's loads before this one's stores), sums, stores into every rank's `out`
 *   split   half the blocks run pull, the other half push (independent data)
 *   warps   every block: half its warps pull, half push
 *   both    pull, then push, one after the other (the sum of the two)
 *   pull_u8, push_u8   pull, push with 8 vectors in flight a thread (the others: 4)
 *   bulk_pull, bulk_push   TMA bulk copies (bulk.cuh), one thread a block, 6 x 32 KiB in flight
 *   ce_push  the copy engines: one cudaMemcpyAsync a peer, each on its own stream
 *   ce+spin_sys, ce+spin_vol, ce+spin_gpu   ce_push while one thread on every GPU polls a local
 *            word (for 0.8 ms) with ld.acquire.sys, volatile loads or ld.acquire.gpu: what a
 *            waiting kernel (a collective's handshake) costs the copies
 *   ce_rot   the copy engines one peer at a time, rank + 1 first, on one stream (weft's
 *            copy-engine AllGather, src/ops/allgather.c)
 *   ce25+push, ce50+push   the first 25% / 50% of the segment by ce_rot on a side stream while
 *            push (every SM) sends the rest: whether engines and SMs together move more than
 *            either alone (AllGather 64 MB at 4 ranks: SM 167 us, engines 171, NCCL 190; the
 *            1.15x target needs 165)
 * 512-thread blocks, U = 4 vectors in flight a thread (pull, push); time: events on every GPU
 * around one launch, the slowest GPU, median of 7 after a warm-up; GB/s a direction a GPU =
 * (world - 1) x B / time.
 * Build and run (device tool, 2 or more GPUs):
 *   nvcc -O3 -arch=sm_90a -o /tmp/bidir dev/collectives/bidir.cu -lcuda && /tmp/bidir [MiB a segment [vmm]]
 * vmm: the buffers from the driver's virtual memory calls, as weft's heap has them.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../cuda_check.h"

typedef unsigned long long u64;
#include "bulk.cuh"

#define THREADS 512
#define MAXG 8

struct Ptrs {
  const uint4 *in[MAXG]; /* every rank's in, segment g (this GPU's) */
  uint4 *out[MAXG];      /* every rank's out, segment g */
  int world, me;
};

/* vectors [lo, hi) of segment `me`: local `in` to every peer's `out` (push), or every peer's
 * `in` to local `out` (pull); t, nt: this thread's index and stride among the role's threads */
template <int U> __device__ void copy_role(const Ptrs &p, int pull, u64 n, u64 t, u64 nt) {
  for (int k = 1; k < p.world; k++) {
    int q = (p.me + k) % p.world;
    const uint4 *src = pull ? p.in[q] : p.in[p.me];
    uint4 *dst = pull ? p.out[p.me] : p.out[q]; /* (pulled copies land on one another) */
    for (u64 v = t; v < n; v += (u64)U * nt) {
      uint4 x[U];
#pragma unroll
      for (int u = 0; u < U; u++)
        if (v + u * nt < n) x[u] = src[v + u * nt];
#pragma unroll
      for (int u = 0; u < U; u++)
        if (v + u * nt < n) dst[v + u * nt] = x[u];
    }
  }
}

/* mode 0 pull, 1 push, 2 split by blocks, 3 split by warps; U vectors in flight a thread */
template <int U> __global__ void __launch_bounds__(THREADS) k_roles(Ptrs p, u64 n, int mode) {
  u64 G = gridDim.x, b = blockIdx.x, t = threadIdx.x;
  if (mode < 2) copy_role<U>(p, mode == 0, n, b * THREADS + t, G * THREADS);
  else if (mode == 2) {
    u64 half = G / 2, pull = b < half;
    u64 nb = pull ? half : G - half, bb = pull ? b : b - half;
    copy_role<U>(p, (int)pull, n, bb * THREADS + t, nb * THREADS);
  } else {
    int pull = t < THREADS / 2;
    u64 tt = pull ? t : t - THREADS / 2;
    copy_role<U>(p, pull, n, b * (THREADS / 2) + tt, G * (THREADS / 2));
  }
}

/* TMA bulk copies, one thread a block: the peers' segments in turn (pull) or this one to every
 * peer (push) */
__global__ void k_bulk(Ptrs p, u64 bytes, int pull) {
  extern __shared__ __align__(128) char buf[];
  if (threadIdx.x) return;
  for (int k = 1; k < p.world; k++) {
    int q = (p.me + k) % p.world;
    bulk_share((char *)(pull ? p.out[p.me] : p.out[q]), (const char *)(pull ? p.in[q] : p.in[p.me]),
               bytes, blockIdx.x, gridDim.x, buf);
  }
}

/* one thread polls *flag (never set) for 0.8 ms of %globaltimer */
__global__ void k_spin(const u64 *flag, int how) {
  u64 t0 = gtimer(), v = 0;
  while (!v && gtimer() - t0 < 800000) {
    if (how == 0) asm volatile("ld.acquire.sys.global.u64 %0, [%1];" : "=l"(v) : "l"(flag) : "memory");
    else if (how == 1) v = *(const volatile u64 *)flag;
    else asm volatile("ld.acquire.gpu.global.u64 %0, [%1];" : "=l"(v) : "l"(flag) : "memory");
  }
}

__device__ __forceinline__ uint4 add4(uint4 a, uint4 b) {
  return make_uint4(a.x + b.x, a.y + b.y, a.z + b.z, a.w + b.w);
}

/* the two-shot's loop: loads of every rank's in (next vector first), sum, stores to every out */
template <int W> __global__ void __launch_bounds__(THREADS) k_mixed(Ptrs p, u64 n) {
  u64 nt = (u64)gridDim.x * THREADS, t = blockIdx.x * (u64)THREADS + threadIdx.x;
  const uint4 *in[W];
  uint4 *out[W], x[W];
#pragma unroll
  for (int j = 0; j < W; j++) in[j] = p.in[j], out[j] = p.out[(p.me + j) % W];
#pragma unroll
  for (int j = 0; j < W; j++)
    if (t < n) x[j] = in[j][t];
  for (u64 v = t; v < n; v += nt) {
    uint4 nx[W];
#pragma unroll
    for (int j = 0; j < W; j++)
      if (v + nt < n) nx[j] = in[j][v + nt];
    uint4 s = x[0];
#pragma unroll
    for (int j = 1; j < W; j++) s = add4(s, x[j]);
#pragma unroll
    for (int k = 0; k < W; k++) out[k][v] = s;
#pragma unroll
    for (int j = 0; j < W; j++) x[j] = nx[j];
  }
}

/* `bytes` on GPU g by the driver's virtual memory calls, as weft's symmetric heap has it
 * (pinned, exportable as a file descriptor, the recommended granularity), readable and
 * writable by every GPU: whether peer copies into such memory run slower than into
 * cudaMalloc's. */
static void *vmm_alloc(int g, int world, u64 bytes) {
  CUmemAllocationProp prop;
  memset(&prop, 0, sizeof prop);
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = g;
  prop.requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
  size_t gran = 0;
  CU(cuMemGetAllocationGranularity(&gran, &prop, CU_MEM_ALLOC_GRANULARITY_RECOMMENDED));
  bytes = (bytes + gran - 1) / gran * gran;
  CUmemGenericAllocationHandle h;
  CUdeviceptr p;
  CU(cuMemCreate(&h, bytes, &prop, 0));
  CU(cuMemAddressReserve(&p, bytes, gran, 0, 0));
  CU(cuMemMap(p, bytes, 0, h, 0));
  for (int d = 0; d < world; d++) {
    CUmemAccessDesc a;
    memset(&a, 0, sizeof a);
    a.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    a.location.id = d;
    a.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    CU(cuMemSetAccess(p, bytes, &a, 1));
  }
  return (void *)p;
}

int main(int argc, char **argv) {
  int world = 0;
  CK(cudaGetDeviceCount(&world));
  if (world > MAXG) world = MAXG;
  if (world != 2 && world != 4 && world != 8) world = world >= 4 ? 4 : 2;
  if (world < 2) {
    printf("bidir: needs 2 or more GPUs (found %d)\n", world);
    return 0;
  }
  u64 mib = argc > 1 ? strtoull(argv[1], NULL, 10) : 64, B = mib << 20, n = B / 16;
  int vmm = argc > 2 && !strcmp(argv[2], "vmm");
  uint4 *in[MAXG], *out[MAXG];
  cudaStream_t st[MAXG];
  cudaEvent_t e0[MAXG], e1[MAXG];
  int sms = 0;
  for (int g = 0; g < world; g++) {
    CK(cudaSetDevice(g));
    for (int h = 0; h < world; h++)
      if (h != g) CK(cudaDeviceEnablePeerAccess(h, 0));
    if (vmm) {
      in[g] = (uint4 *)vmm_alloc(g, world, B * world);
      out[g] = (uint4 *)vmm_alloc(g, world, B * world);
    } else {
      CK(cudaMalloc(&in[g], B * world));
      CK(cudaMalloc(&out[g], B * world));
    }
    CK(cudaMemset(in[g], g + 1, B * world));
    CK(cudaStreamCreateWithFlags(&st[g], cudaStreamNonBlocking));
    CK(cudaEventCreate(&e0[g]));
    CK(cudaEventCreate(&e1[g]));
    CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, g));
  }
  printf("# bidir: %d GPUs, %llu MiB a segment, %s memory, %d blocks of %d threads; GB/s a "
         "direction a GPU\n", world, mib, vmm ? "VMM" : "cudaMalloc", sms, THREADS);
  const char *names[] = {"pull", "push", "split", "warps", "mixed", "both", "pull_u8", "push_u8",
                         "bulk_pull", "bulk_push", "ce_push", "ce+spin_sys", "ce+spin_vol",
                         "ce+spin_gpu", "ce_rot", "ce25+push", "ce50+push"};
  u64 *flag[MAXG];
  cudaStream_t side[MAXG][MAXG];
  cudaEvent_t done[MAXG][MAXG];
  for (int g = 0; g < world; g++) {
    CK(cudaSetDevice(g));
    CK(cudaFuncSetAttribute(k_bulk, cudaFuncAttributeMaxDynamicSharedMemorySize, BULK_NBUF * BULK_CHUNK));
    for (int k = 0; k < world; k++) {
      CK(cudaStreamCreateWithFlags(&side[g][k], cudaStreamNonBlocking));
      CK(cudaEventCreateWithFlags(&done[g][k], cudaEventDisableTiming));
    }
    CK(cudaMalloc(&flag[g], 8));
    CK(cudaMemset(flag[g], 0, 8));
  }
  for (int m = 0; m < 17; m++) {
    float ts[7];
    for (int rep = -1; rep < 7; rep++) {
      for (int g = 0; g < world; g++) {
        CK(cudaSetDevice(g));
        Ptrs p;
        p.world = world, p.me = g;
        for (int h = 0; h < world; h++) {
          p.in[h] = in[h] + (u64)g * n;
          p.out[h] = out[h] + (u64)g * n;
        }
        CK(cudaEventRecord(e0[g], st[g]));
        if (m < 4) k_roles<4><<<sms, THREADS, 0, st[g]>>>(p, n, m);
        else if (m == 4 && world == 2) k_mixed<2><<<sms, THREADS, 0, st[g]>>>(p, n);
        else if (m == 4 && world == 4) k_mixed<4><<<sms, THREADS, 0, st[g]>>>(p, n);
        else if (m == 4) k_mixed<8><<<sms, THREADS, 0, st[g]>>>(p, n); /* (8 GPUs only) */
        else if (m == 5) {
          k_roles<4><<<sms, THREADS, 0, st[g]>>>(p, n, 0);
          k_roles<4><<<sms, THREADS, 0, st[g]>>>(p, n, 1);
        } else if (m < 8) k_roles<8><<<sms, THREADS, 0, st[g]>>>(p, n, m - 6);
        else if (m < 10) k_bulk<<<sms, 32, BULK_NBUF * BULK_CHUNK, st[g]>>>(p, B, m == 8);
        else if (m >= 14) { /* the engines one peer at a time on a side stream (the first nce
                             * vectors), every SM pushing the rest meanwhile */
          u64 nce = m == 14 ? n : m == 15 ? n / 4 : n / 2;
          CK(cudaStreamWaitEvent(side[g][0], e0[g], 0));
          for (int k = 1; k < world; k++) {
            int q = (g + k) % world;
            CK(cudaMemcpyAsync(p.out[q], p.in[g], nce * 16, cudaMemcpyDeviceToDevice, side[g][0]));
          }
          CK(cudaEventRecord(done[g][0], side[g][0]));
          if (nce < n) {
            Ptrs r = p;
            for (int h = 0; h < world; h++) r.in[h] += nce, r.out[h] += nce;
            k_roles<4><<<sms, THREADS, 0, st[g]>>>(r, n - nce, 1);
          }
          CK(cudaStreamWaitEvent(st[g], done[g][0], 0));
        } else { /* the copy engines: one stream a peer, forked from and joined to st[g] */
          if (m > 10) k_spin<<<1, 1, 0, side[g][0]>>>(flag[g], m - 11);
          for (int k = 1; k < world; k++) {
            int q = (g + k) % world;
            CK(cudaStreamWaitEvent(side[g][k], e0[g], 0));
            CK(cudaMemcpyAsync(p.out[q], p.in[g], B, cudaMemcpyDeviceToDevice, side[g][k]));
            CK(cudaEventRecord(done[g][k], side[g][k]));
            CK(cudaStreamWaitEvent(st[g], done[g][k], 0));
          }
        }
        CK(cudaGetLastError());
        CK(cudaEventRecord(e1[g], st[g]));
      }
      float worst = 0;
      for (int g = 0; g < world; g++) {
        float ms = 0;
        CK(cudaSetDevice(g));
        CK(cudaEventSynchronize(e1[g]));
        CK(cudaEventElapsedTime(&ms, e0[g], e1[g]));
        if (ms > worst) worst = ms;
      }
      if (rep >= 0) ts[rep] = worst;
    }
    for (int g = 0; g < world; g++) { /* (the spinning kernels) */
      CK(cudaSetDevice(g));
      CK(cudaDeviceSynchronize());
    }
    for (int i = 0; i < 7; i++)
      for (int j = i + 1; j < 7; j++)
        if (ts[j] < ts[i]) {
          float x = ts[i];
          ts[i] = ts[j], ts[j] = x;
        }
    double us = ts[3] * 1e3, gbs = (double)(world - 1) * B / (us * 1e3);
    printf("%-6s %9.1f us  %7.1f GB/s\n", names[m], us, gbs);
  }
  return 0;
}
