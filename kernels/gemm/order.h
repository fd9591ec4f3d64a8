/*
 * kernels/gemm/order.h — the order in which a persistent GEMM visits its output tiles, shared by
 * host C (tables, tests) and device code (kernels/gemm/gemm.cu computes the grouped order on the fly).
 *
 * Tiles form a tiles_m x tiles_n grid (row-major tile index = tm * tiles_n + tn). Every function
 * here maps a position p in [0, tiles_m * tiles_n) to a tile, and each is a permutation of the
 * tiles (tests/cpu/test_gemm_order.c checks that for many grids, non-multiples included).
 *
 * Why an order at all: CTAs running at the same time should share A row-blocks and B
 * column-blocks in L2. The grouped raster walks `group` tile-rows at a time, column by column
 * (like CUTLASS's/Triton's GROUP_M swizzle); the Hilbert order follows a space-filling curve
 * (measured +~0.8% at 4096^3 in the fast.cu worklog). For overlapped ops the order is part of the
 * op (AllGather: start at the rank's own shard, rotate_m does that).
 */
#ifndef WEFT_GEMM_ORDER_H
#define WEFT_GEMM_ORDER_H

#if defined(__CUDACC__) || defined(__CUDACC_RTC__)
#define WEFT_GEMM_ORDER_HD static __host__ __device__ __forceinline__
#else
#define WEFT_GEMM_ORDER_HD static inline
#endif

/* Grouped raster: groups of `group` tile-rows (the last group may be shorter); inside a group the
 * tile-row index varies fastest, so consecutive positions share a B column-block. */
WEFT_GEMM_ORDER_HD void weft_gemm_order_grouped(int p, int tiles_m, int tiles_n, int group,
                                                int *tm, int *tn) {
  if (group < 1) group = 1;
  if (group > tiles_m) group = tiles_m;
  /* One group (decode-sized m) of 1, 2, 4 or 8 tile-rows: shifts, no division. A runtime
   * division is ~15 dependent instructions on the GEMM producer's path to its first load: the
   * divisions of this order and of the split's k range cost 0.3-1.0 us of a 10-15 us decode GEMM
   * on H100 (dev/gemm/README.md). */
  if (tiles_m == group && (tiles_m & (tiles_m - 1)) == 0) {
    int sh = 0;
    while ((1 << sh) < tiles_m) sh++;
    *tm = p & (tiles_m - 1);
    *tn = p >> sh;
    return;
  }
  int per_group = group * tiles_n;
  int g = p / per_group;
  int first_m = g * group;
  int rows = tiles_m - first_m;
  if (rows > group) rows = group;
  int r = p - g * per_group;
  *tm = first_m + r % rows;
  *tn = r / rows;
}

/* The grouped raster with the tile-rows rotated by rotate_m (0 <= rotate_m < tiles_m): position 0
 * is tile-row rotate_m. AG+GEMM passes the first tile-row of the rank's own shard. */
WEFT_GEMM_ORDER_HD void weft_gemm_order_grouped_rotated(int p, int tiles_m, int tiles_n, int group,
                                                        int rotate_m, int *tm, int *tn) {
  weft_gemm_order_grouped(p, tiles_m, tiles_n, group, tm, tn);
  int m = *tm + rotate_m;
  *tm = m >= tiles_m ? m - tiles_m : m;
}

/* Hilbert curve index d -> (x, y) on a 2^bits x 2^bits square (the classic iterative form). */
WEFT_GEMM_ORDER_HD void weft_gemm_order_hilbert_d2xy(int bits, long long d, int *x, int *y) {
  int rx, ry, t;
  int xx = 0, yy = 0;
  for (int s = 1; s < (1 << bits); s <<= 1) {
    rx = (int)(1 & (d / 2));
    ry = (int)(1 & (d ^ rx));
    if (ry == 0) {
      if (rx == 1) {
        xx = s - 1 - xx;
        yy = s - 1 - yy;
      }
      t = xx;
      xx = yy;
      yy = t;
    }
    xx += s * rx;
    yy += s * ry;
    d /= 4;
  }
  *x = xx;
  *y = yy;
}

/* Fills table[0 .. tiles_m*tiles_n) with row-major tile indices (tm * tiles_n + tn) in Hilbert
 * order: the curve over the smallest power-of-two square covering the grid, skipping points
 * outside it. Returns the number written (tiles_m * tiles_n). O(4^bits): a host-side table
 * builder (kernels/gemm/gemm.cu reads such a table with -DWEFT_GEMM_ORDER_TABLE=1). */
WEFT_GEMM_ORDER_HD int weft_gemm_order_hilbert_fill(int tiles_m, int tiles_n, int *table) {
  int bits = 0;
  while ((1 << bits) < tiles_m || (1 << bits) < tiles_n) bits++;
  long long cells = 1LL << (2 * bits);
  int n = 0;
  for (long long d = 0; d < cells; d++) {
    int x, y;
    weft_gemm_order_hilbert_d2xy(bits, d, &x, &y);
    if (x < tiles_m && y < tiles_n) table[n++] = x * tiles_n + y;
  }
  return n;
}

/* Fills table[] with the grouped (rotated) order as row-major tile indices. */
WEFT_GEMM_ORDER_HD int weft_gemm_order_grouped_fill(int tiles_m, int tiles_n, int group,
                                                    int rotate_m, int *table) {
  int n = tiles_m * tiles_n;
  for (int p = 0; p < n; p++) {
    int tm, tn;
    weft_gemm_order_grouped_rotated(p, tiles_m, tiles_n, group, rotate_m, &tm, &tn);
    table[p] = tm * tiles_n + tn;
  }
  return n;
}

#endif
