/*
 * kernels/gemm/ll.cuh — the LL epilogue of weft's GEMM (kernels/gemm/gemm.cu; WEFT_GEMM_LL,
 * GEMM + AllReduce's LL form): C's 8-byte words go as flagged 16-byte LL lines into this rank's
 * slot of every rank's LL area, which weft_red_ll (kernels/reduce.cu) then sums. Also
 * WEFT_GEMM_OUT_GROUP, the direct-store epilogue's store of one accumulator column group
 * (kernels/gemm/epilogue_direct.cuh): weft_gemm_ll_group with LL, weft_gemm_store_group
 * (kernels/gemm/store.cuh) without; it names the kernel's c, M, N and ldc, and with LL the
 * consumer's lld.
 *
 * Expects nothing before it: includes kernels/gemm/config.cuh (the defines) and
 * kernels/gemm/store.cuh.
 */
#ifndef WEFT_KERNELS_GEMM_LL_CUH
#define WEFT_KERNELS_GEMM_LL_CUH

#include "kernels/gemm/config.cuh"
#include "kernels/gemm/store.cuh"

#if WEFT_GEMM_LL
/* Where the LL epilogue's lines go (see WEFT_GEMM_LL): this rank's slot of this call's parity in
 * this rank's area; rank q's copy is (q - rank) * peer_stride bytes away. */
typedef struct weft_gemm_ll {
  unsigned char *slot;
  long long peer_stride;
  u32 flag;
  int rank, world;
} weft_gemm_ll_t;

__device__ __forceinline__ weft_gemm_ll_t weft_gemm_ll_dst(void *area, const u64 *epoch, u64 slot,
                                                          long long peer_stride, int rank,
                                                          int world) {
  const u64 e = *(const volatile u64 *)epoch + 1;
  weft_gemm_ll_t d;
  d.slot = (unsigned char *)area + ((e & 1) * (u64)world + (u64)rank) * slot;
  d.peer_stride = peer_stride, d.flag = (u32)e, d.rank = rank, d.world = world;
  return d;
}

/* Line `line` (8 payload bytes lo | hi << 32) into every rank's copy, this rank's first: the
 * line of weft/ll.cuh's weft_ll_store16, written out here because that header brings in
 * weft/sync.cuh's waits, whose failure report is a call, and a call reachable in this kernel
 * serialises its wgmmas. */
__device__ __forceinline__ void weft_gemm_ll_line(const weft_gemm_ll_t *d, u64 line, u32 lo,
                                                  u32 hi) {
  unsigned char *at = d->slot + line * 16;
  for (int k = 0; k < d->world; k++) {
    const int q = d->rank + k < d->world ? d->rank + k : d->rank + k - d->world;
    unsigned char *to = at + (q - d->rank) * d->peer_stride;
    asm volatile("st.volatile.global.v4.u32 [%0], {%1, %2, %3, %4};" ::"l"(to), "r"(lo),
                 "r"(d->flag), "r"(hi), "r"(d->flag)
                 : "memory");
  }
}

/* weft_gemm_store_group's LL form: the same fragment as LL lines. Every lane of the warp must
 * call it (16-bit C: the halves are swapped between lane pairs first). */
__device__ __forceinline__ void weft_gemm_ll_group(const weft_gemm_ll_t *d, int M, int N, u64 ldc,
                                                   int row, int col, float f0, float f1, float f2,
                                                   float f3) {
#if WEFT_GEMM_OUT == 2
  if (col >= N) return; /* N even: col + 1 < N too */
  if (row < M)
    weft_gemm_ll_line(d, ((u64)row * ldc + col) / 2, __float_as_uint(f0), __float_as_uint(f1));
  if (row + 8 < M)
    weft_gemm_ll_line(d, ((u64)(row + 8) * ldc + col) / 2, __float_as_uint(f2),
                      __float_as_uint(f3));
#else
  /* the even lane holds cols col, col + 1 and the odd one col + 2, col + 3 of rows row and
   * row + 8: the even lane sends the row + 8 half, the odd one the row half */
  const u32 p0 = weft_gemm_pack(f0, f1), p1 = weft_gemm_pack(f2, f3);
  const int odd = threadIdx.x & 1;
  const u32 got = __shfl_xor_sync(0xffffffffu, odd ? p0 : p1, 1);
  const int r = odd ? row + 8 : row, c0 = odd ? col - 2 : col; /* c0 % 4 == 0 */
  if (r < M && c0 < N)
    weft_gemm_ll_line(d, ((u64)r * ldc + c0) / 4, odd ? got : p0, odd ? p1 : got);
#endif
}
#define WEFT_GEMM_OUT_GROUP(row, col, f0, f1, f2, f3) \
  weft_gemm_ll_group(&lld, M, N, ldc, row, col, f0, f1, f2, f3)
#else
#define WEFT_GEMM_OUT_GROUP(row, col, f0, f1, f2, f3) \
  weft_gemm_store_group(c, M, N, ldc, row, col, f0, f1, f2, f3)
#endif

#endif
