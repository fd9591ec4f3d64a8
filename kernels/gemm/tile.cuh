/*
 * kernels/gemm/tile.cuh — the work decomposition of weft's GEMM (kernels/gemm/gemm.cu):
 * weft_gemm_decode maps work item p of the persistent grid to this CTA's tile (its origin and
 * row-major index), the tile's k-blocks and split: cluster tiles in the grouped order computed on
 * the device (kernels/gemm/order.h), in the host's table (WEFT_GEMM_ORDER_TABLE) or, with
 * WEFT_GEMM_AR_COLS, the tile columns from a rotation on; k_splits items a tile with
 * WEFT_GEMM_SPLITK (the CTAs of a cluster with WEFT_GEMM_CLUSTER_K), and for the last tail_tiles
 * tiles only with WEFT_GEMM_TAIL. The producer thread, the waiter, the storers and the consumers
 * each decode the same items.
 *
 * Expects nothing before it: includes kernels/gemm/config.cuh (the defines) and
 * kernels/gemm/order.h.
 */
#ifndef WEFT_KERNELS_GEMM_TILE_CUH
#define WEFT_KERNELS_GEMM_TILE_CUH

#include "kernels/gemm/order.h"
#include "kernels/gemm/config.cuh"

/* ---------------------------------------------------------------------------------------- */
/* work decomposition                                                                        */
/* ---------------------------------------------------------------------------------------- */

typedef struct weft_gemm_work {
  int m0, n0;     /* this CTA's tile origin */
  int tile;       /* row-major index of this CTA's tile (tm * tiles_n + tn), split-K counters */
  int kb0, kb1;   /* k-blocks [kb0, kb1) of 64 */
  int split;
  int splits;     /* the tile's splits (TAIL: 1, or k_splits for a tail tile) */
  int slot;       /* TAIL: the tail tile's counter and workspace slot */
} weft_gemm_work_t;

__device__ __forceinline__ weft_gemm_work_t weft_gemm_decode(int p, int M, int N, int K,
                                                                   const int *order_table,
                                                                   int rotate_m, int k_splits,
                                                                   int first_tail, int cta_rank) {
  weft_gemm_work_t w;
  int tiles_n = (N + WEFT_GEMM_BN - 1) / WEFT_GEMM_BN;
  int mn = p, s = 0, splits = 1;
  w.slot = 0;
#if WEFT_GEMM_SPLITK && WEFT_GEMM_CLUSTER_K > 1
  s = cta_rank; /* the cluster's CTAs are the tile's splits */
  splits = WEFT_GEMM_CLUSTER_K;
#elif WEFT_GEMM_SPLITK
  mn = p / k_splits;
  s = p - mn * k_splits;
  splits = k_splits;
#elif WEFT_GEMM_TAIL
  /* the whole tiles first, then k_splits items for each tail tile from item first_tail on
   * (computed once by the caller: the TMA thread has 40 registers) */
  if (p >= first_tail) {
    const int q = p - first_tail, t = q / k_splits;
    mn = first_tail + t;
    s = q - t * k_splits;
    splits = k_splits;
    w.slot = t * WEFT_GEMM_CLUSTER_M + (WEFT_GEMM_CLUSTER_M > 1 ? cta_rank : 0);
  }
#endif
  (void)first_tail;
  int ctm, tn;
#if WEFT_GEMM_ORDER_TABLE
  int code = order_table[mn];
  ctm = code / tiles_n;
  tn = code - ctm * tiles_n;
  (void)rotate_m;
#elif WEFT_GEMM_AR_COLS
  /* one tile row; the columns from rotate_m on */
  (void)order_table;
  ctm = 0;
  tn = mn + rotate_m;
  if (tn >= tiles_n) tn -= tiles_n;
#else
  (void)order_table;
  int tiles_m = (M + WEFT_GEMM_BM - 1) / WEFT_GEMM_BM;
  int ctiles_m = (tiles_m + WEFT_GEMM_CLUSTER_M - 1) / WEFT_GEMM_CLUSTER_M;
  weft_gemm_order_grouped_rotated(mn, ctiles_m, tiles_n, WEFT_GEMM_GROUP, rotate_m, &ctm, &tn);
#endif
  int tm = ctm * WEFT_GEMM_CLUSTER_M + (WEFT_GEMM_CLUSTER_M > 1 ? cta_rank : 0);
  w.m0 = tm * WEFT_GEMM_BM;
  w.n0 = tn * WEFT_GEMM_BN;
  w.tile = tm * tiles_n + tn;
  int nkb = (K + WEFT_GEMM_BK - 1) / WEFT_GEMM_BK;
  /* 32-bit where the products fit (any k below 2.9M): the 64-bit divisions were a call each,
   * on the producer's path to its first load (as is every division: none for one split) */
  if (splits == 1) {
    w.kb0 = 0;
    w.kb1 = nkb;
  } else if (nkb < 46341) {
    w.kb0 = (int)((unsigned)(s * nkb) / (unsigned)splits);
    w.kb1 = (int)((unsigned)((s + 1) * nkb) / (unsigned)splits);
  } else {
    w.kb0 = (int)((long long)s * nkb / splits);
    w.kb1 = (int)((long long)(s + 1) * nkb / splits);
  }
  (void)k_splits;
  w.split = s;
  w.splits = splits;
  return w;
}

#if WEFT_GEMM_GROUP_WAIT
/* AllGather + MoE's tile order (kernels/gemm/config.cuh, WEFT_GEMM_GROUP_WAIT): the item's tile
 * row is the order's entry at the decoded one (a permutation of the rows in use:
 * weft_moe_arrival_order), so that the tiles whose tokens arrive first run first. */
__device__ __forceinline__ void weft_gemm_group_reorder(weft_gemm_work_t *w, const int *order,
                                                        int N) {
  const int tiles_n = (N + WEFT_GEMM_BN - 1) / WEFT_GEMM_BN, tm = order[w->m0 / WEFT_GEMM_BM];
  w->m0 = tm * WEFT_GEMM_BM;
  w->tile = tm * tiles_n + w->n0 / WEFT_GEMM_BN;
}
#endif

#endif
