/*
 * gemm_test.h — the device side of the GEMM tests (test_gemm.c, test_overlap.c), compiled by the
 * JIT: random fills rounded to bf16/fp16 (support.h's FILL_KERNEL_SRC), a float64 reference GEMM
 * (accumulating, for sums over ranks), a comparison that counts non-finite values and changed
 * padding, and a delay kernel for stragglers.
 */
#ifndef WEFT_GEMM_TEST_H
#define WEFT_GEMM_TEST_H

#include <math.h>

#include "support.h" /* FILL_KERNEL_SRC, OK, CU */

static const char *gemm_test_src =
    "#include <weft/device.cuh>\n"
    "__device__ float ld_in(const unsigned short *p, unsigned long long i, int fp16) {\n"
    "  unsigned short h = p[i];\n"
    "  if (!fp16) return __uint_as_float((unsigned)h << 16);\n"
    "  float f; asm(\"cvt.f32.f16 %0, %1;\" : \"=f\"(f) : \"h\"(h)); return f;\n"
    "}\n"
    "__device__ double ld_out(const void *c, unsigned long long i, int out) {\n"
    "  if (out == 2) return ((const float *)c)[i];\n"
    "  return ld_in((const unsigned short *)c, i, out == 1);\n"
    "}\n"
    /* fill: uniform in [-1, 1), rounded to the input type: rows x ld elements, padding included */
    FILL_KERNEL_SRC
    /* ref (+)= A op(B) in float64; accumulate: add to what ref holds (sums over ranks) */
    "extern \"C\" __global__ void reference(double *ref, const unsigned short *a, const unsigned short *b,\n"
    "                                      int m, int n, int k, long long lda, long long ldb,\n"
    "                                      int kmajor, int fp16, int accumulate) {\n"
    "  for (unsigned long long i = blockIdx.x * blockDim.x + threadIdx.x; i < (unsigned long long)m * n;\n"
    "       i += gridDim.x * blockDim.x) {\n"
    "    int r = (int)(i / n), c = (int)(i % n);\n"
    "    double s = 0;\n"
    "    for (int x = 0; x < k; x++)\n"
    "      s += (double)ld_in(a, (unsigned long long)r * lda + x, fp16) *\n"
    "           (double)ld_in(b, kmajor ? (unsigned long long)c * ldb + x : (unsigned long long)x * ldb + c, fp16);\n"
    "    ref[i] = accumulate ? ref[i] + s : s;\n"
    "  }\n"
    "}\n"
    /* acc: [0] sum (c - ref)^2, [1] sum ref^2; bad: [0] NaN or inf in C, [1] padding changed */
    "extern \"C\" __global__ void compare(const void *c, const double *ref, int m, int n, long long ldc,\n"
    "                                    int out, double *acc, unsigned long long *bad) {\n"
    "  double e = 0, r2 = 0;\n"
    "  unsigned long long nan = 0, pad = 0;\n"
    "  for (unsigned long long i = blockIdx.x * blockDim.x + threadIdx.x; i < (unsigned long long)m * ldc;\n"
    "       i += gridDim.x * blockDim.x) {\n"
    "    int col = (int)(i % ldc);\n"
    "    if (col >= n) {\n"
    "      if (out == 2 ? ((const unsigned *)c)[i] != 0xFFFFFFFFu : ((const unsigned short *)c)[i] != 0xFFFF) pad++;\n"
    "      continue;\n"
    "    }\n"
    "    double v = ld_out(c, i, out), x = ref[(i / ldc) * n + col];\n"
    "    if (!(v == v) || v - v != 0) { nan++; continue; }\n"
    "    e += (v - x) * (v - x);\n"
    "    r2 += x * x;\n"
    "  }\n"
    "  atomicAdd(&acc[0], e); atomicAdd(&acc[1], r2);\n"
    "  if (nan) atomicAdd(&bad[0], nan);\n"
    "  if (pad) atomicAdd(&bad[1], pad);\n"
    "}\n"
    /* a straggler: spins for ns nanoseconds */
    "extern \"C\" __global__ void delay(unsigned long long ns) {\n"
    "  unsigned long long t0 = weft_globaltimer();\n"
    "  while (weft_globaltimer() - t0 < ns) {}\n"
    "}\n";

/* A grid-stride kernel of gemm_test_src over the whole GPU, on stream s. */
static inline void gemm_test_launch(weft_kernel_t *k, void **args, CUstream s) {
  weft_launch_config_t c = WEFT_LAUNCH_CONFIG_INIT;
  c.grid[0] = 528;
  c.block[0] = 256;
  OK(weft_kernel_launch(k, &c, args, s));
}

/* Runs `compare` (k_cmp, from gemm_test_src) of c ([m, ldc], columns n.. poisoned) against ref
 * ([m, n] float64) on stream s and waits: returns ||c - ref|| / ||ref||; bad[0] counts
 * non-finite values of c, bad[1] changed padding. Needs gpu_test.h first (the internals that
 * support.h's OK and CU name). */
static inline double gemm_test_compare(weft_comm_t *comm, weft_kernel_t *k_cmp, CUstream s,
                                       CUdeviceptr c, CUdeviceptr ref, int m, int n, long long ldc,
                                       weft_dtype_t out, unsigned long long bad[2]) {
  CUdeviceptr acc, cnt;
  CU(cuMemAlloc(&acc, 16));
  CU(cuMemAlloc(&cnt, 16));
  CU(cuMemsetD8Async(acc, 0, 16, s));
  CU(cuMemsetD8Async(cnt, 0, 16, s));
  int o = out == WEFT_DTYPE_FP32 ? 2 : out == WEFT_DTYPE_FP16;
  void *args[] = {&c, &ref, &m, &n, &ldc, &o, &acc, &cnt};
  gemm_test_launch(k_cmp, args, s);
  OK(weft_stream_synchronize(comm, s));
  double h[2];
  CU(cuMemcpyDtoH(h, acc, 16));
  CU(cuMemcpyDtoH(bad, cnt, 16));
  CU(cuMemFree(acc));
  CU(cuMemFree(cnt));
  return h[1] > 0 ? sqrt(h[0] / h[1]) : sqrt(h[0]);
}

#endif
