// dev/gemm/hbm_read.cu — how fast can an H100/H200 stream bytes out of HBM? The ceiling a decode
// GEMM (B read once, m <= 128) is held against: weft's and cuBLAS's 128x16384x13312 read B's
// 436 MB in ~110 us (~4 TB/s). A read-only kernel: every thread sums 16-byte loads (UNROLL in
// flight) over its grid-stride share of `bytes`, one word per thread written (so the loads stay).
// Cold: consecutive runs read different copies, together far beyond L2. Medians of 20 runs, cudaEvent.
//   nvcc -O3 -arch=sm_90a dev/gemm/hbm_read.cu -o hbm_read && ./hbm_read [MB per run, default 436]
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

#define CK(x)                                                                             \
  do {                                                                                    \
    cudaError_t e_ = (x);                                                                 \
    if (e_ != cudaSuccess) {                                                              \
      fprintf(stderr, "%s failed: %s (%s:%d)\n", #x, cudaGetErrorString(e_), __FILE__, __LINE__); \
      exit(1);                                                                            \
    }                                                                                     \
  } while (0)

template <int UNROLL>
__global__ void __launch_bounds__(512) read_kernel(const uint4 *p, size_t n16, unsigned *out) {
  size_t t = blockIdx.x * (size_t)blockDim.x + threadIdx.x, nt = (size_t)gridDim.x * blockDim.x;
  unsigned acc = 0;
  size_t i = t;
  for (; i + (UNROLL - 1) * nt < n16; i += UNROLL * nt) {
    uint4 v[UNROLL];
#pragma unroll
    for (int u = 0; u < UNROLL; u++) v[u] = __ldcs(p + i + u * nt); // streaming: evict first
#pragma unroll
    for (int u = 0; u < UNROLL; u++) acc ^= v[u].x ^ v[u].y ^ v[u].z ^ v[u].w;
  }
  for (; i < n16; i += nt) {
    uint4 v = __ldcs(p + i);
    acc ^= v.x ^ v.y ^ v.z ^ v.w;
  }
  out[t] = acc;
}

template <int UNROLL>
static double run(const char *base, size_t bytes, int copies, int blocks, int threads, unsigned *out) {
  cudaEvent_t a, b;
  CK(cudaEventCreate(&a));
  CK(cudaEventCreate(&b));
  std::vector<float> ms;
  for (int r = 0; r < 25; r++) {
    const uint4 *p = (const uint4 *)(base + (size_t)(r % copies) * bytes);
    CK(cudaEventRecord(a));
    read_kernel<UNROLL><<<blocks, threads>>>(p, bytes / 16, out);
    CK(cudaEventRecord(b));
    CK(cudaEventSynchronize(b));
    CK(cudaGetLastError());
    float t;
    CK(cudaEventElapsedTime(&t, a, b));
    if (r >= 5) ms.push_back(t);
  }
  std::sort(ms.begin(), ms.end());
  CK(cudaEventDestroy(a));
  CK(cudaEventDestroy(b));
  return ms[ms.size() / 2];
}

int main(int argc, char **argv) {
  size_t mb = argc > 1 ? strtoull(argv[1], 0, 10) : 436, bytes = mb << 20;
  int sms;
  CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  cudaDeviceProp prop;
  CK(cudaGetDeviceProperties(&prop, 0));
  const int copies = 4; // 4 x 436 MB: each run reads what the last three did not
  char *base;
  CK(cudaMalloc(&base, bytes * copies));
  CK(cudaMemset(base, 1, bytes * copies));
  unsigned *out;
  CK(cudaMalloc(&out, (size_t)sms * 4 * 1024 * sizeof(unsigned)));
  printf("# %s, %d SMs; %zu MB a run, median of 20 (cold), GB/s = bytes / time\n", prop.name, sms, mb);
  printf("# blocks/SM threads unroll      us     TB/s\n");
  for (int bps : {1, 2, 4})
    for (int th : {256, 512}) {
      int blocks = sms * bps;
      double t8 = run<8>(base, bytes, copies, blocks, th, out);
      double t16 = run<16>(base, bytes, copies, blocks, th, out);
      printf("  %9d %7d %6d %7.1f %8.3f\n", bps, th, 8, t8 * 1e3, bytes / (t8 * 1e-3) / 1e12);
      printf("  %9d %7d %6d %7.1f %8.3f\n", bps, th, 16, t16 * 1e3, bytes / (t16 * 1e-3) / 1e12);
    }
  CK(cudaFree(base));
  CK(cudaFree(out));
  return 0;
}
