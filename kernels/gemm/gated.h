/*
 * kernels/gemm/gated.h — where the gated epilogue's B columns come from (kernels/gemm/config.cuh,
 * WEFT_GEMM_GATED), shared by the kernel's loads (kernels/gemm/mainloop_load.cuh) and host C
 * (tests/cpu/test_gemm_gated.c checks the mapping for every tile width).
 *
 * B's n columns (rows of [n, k] B) are two halves, gate then up, n / 2 each; output column c is
 * silu(gate column c) * (up column n / 2 + c). A tile at B column n0 (a multiple of BN) holds the
 * output columns from n0 / 2; each warpgroup's block of wg_n tile columns is its wg_n / 2 output
 * columns' gate columns, then their up columns, so that one thread's accumulators hold both
 * halves of an output column, wg_n / 2 columns apart.
 */
#ifndef WEFT_GEMM_GATED_H
#define WEFT_GEMM_GATED_H

#if defined(__CUDACC__) || defined(__CUDACC_RTC__)
#define WEFT_GEMM_GATED_HD static __host__ __device__ __forceinline__
#else
#define WEFT_GEMM_GATED_HD static inline
#endif

/* The B column (in [0, n), or past the halves' ends: zeros or columns no output keeps) that tile
 * column col of the tile at B column n0 loads, half = wg_n / 2. */
WEFT_GEMM_GATED_HD int weft_gemm_gated_source(int col, int half, int n0, int n) {
  return ((col / half) & 1) * (n / 2) + n0 / 2 + col / (2 * half) * half + col % half;
}

#endif
