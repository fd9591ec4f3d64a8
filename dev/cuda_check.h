/*
 * dev/cuda_check.h — CK(x): the CUDA runtime check of the standalone nvcc-built dev programs
 * (dev/gemm/placement.cu, dev/collectives/nvlink_sm.cu, dev/overlap/red_sm.cu; gemm_dev.cu keeps
 * its own, beside its driver and NVRTC checks, all exiting with status 2). A failed call prints
 * where and why and exits with status 1.
 */
#ifndef WEFT_DEV_CUDA_CHECK_H
#define WEFT_DEV_CUDA_CHECK_H

#include <stdio.h>
#include <stdlib.h>

#define CK(x)                                                                                    \
  do {                                                                                           \
    cudaError_t e_ = (x);                                                                        \
    if (e_ != cudaSuccess) {                                                                     \
      fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_));        \
      exit(1);                                                                                   \
    }                                                                                            \
  } while (0)

#endif
