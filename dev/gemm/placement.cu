// dev/gemm/placement.cu — where the CTAs of a grid land, unclustered and in clusters of 2, 4, 8
// (research probe for the decode grids: dev/gemm/README.md, clusters). Each CTA records
// %smid and stays resident (spins ~50 us) so that all CTAs of the grid are co-resident; the host
// prints, per launch, the SMs used, the TPCs used (smid / 2), CTAs sharing a TPC, and the
// smallest and largest smid. Build and run: nvcc -arch=sm_90a -o placement dev/gemm/placement.cu -lcuda && ./placement
#include <cuda.h>
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>

#include "../cuda_check.h"

__global__ void where(unsigned *sm) {
  unsigned id;
  asm volatile("mov.u32 %0, %%smid;" : "=r"(id));
  unsigned long long t0, t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
  do asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t)); while (t - t0 < 50000);
  if (threadIdx.x == 0) sm[blockIdx.x] = id;
}

int main() {
  int sms;
  CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  unsigned *d, h[1024];
  CK(cudaMalloc(&d, sizeof h));
  CK(cudaFuncSetAttribute(where, cudaFuncAttributeNonPortableClusterSizeAllowed, 1));
  const int grids[] = {44, 86, 88, 132};
  const int clusters[] = {1, 2, 4, 8};
  for (int gi = 0; gi < 4; gi++)
    for (int ci = 0; ci < 4; ci++) {
      int g = grids[gi], c = clusters[ci];
      if (g % c) continue;
      cudaLaunchConfig_t cfg = {};
      cfg.gridDim = dim3(g), cfg.blockDim = dim3(384), cfg.dynamicSmemBytes = 0;
      cudaLaunchAttribute at[1];
      at[0].id = cudaLaunchAttributeClusterDimension;
      at[0].val.clusterDim.x = c, at[0].val.clusterDim.y = 1, at[0].val.clusterDim.z = 1;
      cfg.attrs = at, cfg.numAttrs = 1;
      CK(cudaMemset(d, 0xff, sizeof h));
      CK(cudaLaunchKernelEx(&cfg, where, d));
      CK(cudaDeviceSynchronize());
      CK(cudaMemcpy(h, d, g * 4, cudaMemcpyDeviceToHost));
      int per_sm[512] = {0}, per_tpc[256] = {0}, lo = 1 << 30, hi = -1;
      for (int i = 0; i < g; i++) {
        per_sm[h[i]]++, per_tpc[h[i] / 2]++;
        if ((int)h[i] < lo) lo = h[i];
        if ((int)h[i] > hi) hi = h[i];
      }
      int used_sm = 0, used_tpc = 0, shared_tpc = 0, multi_sm = 0;
      for (int i = 0; i < 512; i++) used_sm += per_sm[i] > 0, multi_sm += per_sm[i] > 1;
      for (int i = 0; i < 256; i++) used_tpc += per_tpc[i] > 0, shared_tpc += per_tpc[i] > 1;
      printf("grid %3d cluster %d: SMs %3d (with 2+ CTAs %d), TPCs %3d (with 2+ CTAs %3d), smid %d..%d; first smids:",
             g, c, used_sm, multi_sm, used_tpc, shared_tpc, lo, hi);
      for (int i = 0; i < 16 && i < g; i++) printf(" %u", h[i]);
      printf("\n");
    }
  return 0;
}
