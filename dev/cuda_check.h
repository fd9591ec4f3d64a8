/*
 * dev/cuda_check.h — the exit-on-error checks of the standalone nvcc-built dev programs
 * (dev/gemm/placement.cu and gemm_dev.cu, dev/collectives/nvlink_sm.cu and bidir.cu,
 * dev/overlap/red_sm.cu): CK(x) for CUDA runtime calls, CU(x) for driver calls (link -lcuda
 * where it is used). A failed call prints where and why and exits with DEV_CHECK_EXIT (1 unless
 * the program defines it first: gemm_dev.cu exits with 2, as its cuBLAS and NVRTC checks do).
 * The drivers that CMake builds against libweft (dev/overlap) take overlap_dev.h's checks.
 */
#ifndef WEFT_DEV_CUDA_CHECK_H
#define WEFT_DEV_CUDA_CHECK_H

#include <cuda.h>
#include <stdio.h>
#include <stdlib.h>

#ifndef DEV_CHECK_EXIT
#define DEV_CHECK_EXIT 1
#endif

#define CK(x)                                                                                    \
  do {                                                                                           \
    cudaError_t e_ = (x);                                                                        \
    if (e_ != cudaSuccess) {                                                                     \
      fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_));        \
      exit(DEV_CHECK_EXIT);                                                                      \
    }                                                                                            \
  } while (0)
#define CU(x)                                                                                    \
  do {                                                                                           \
    CUresult r_ = (x);                                                                           \
    if (r_ != CUDA_SUCCESS) {                                                                    \
      const char *s_ = "?";                                                                      \
      cuGetErrorString(r_, &s_);                                                                 \
      fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #x, s_);                            \
      exit(DEV_CHECK_EXIT);                                                                      \
    }                                                                                            \
  } while (0)

#endif
