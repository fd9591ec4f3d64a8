/*
 * test_scatter_slots.c — the fused scatter's slot arithmetic (GEMM + ReduceScatter, WEFT_ALGO_SM;
 * kernels/gemm/config.cuh WEFT_GEMM_SCATTER), against brute force for 1..16 ranks and segments of 1..2100
 * rows: a slot of weft_gemm_scatter_rows(seg) rows holds every 64-row block that touches its
 * segment, stored from block floor(q * seg / 64) on (the kernel's rows, r - 64 * floor(q * seg /
 * 64), stay inside the slot); the segment itself starts at slot row (q * seg) % 64 and ends inside
 * the slot (where gemm_rs.c's reduction reads it); and the owner's count of sub-tile rows, the
 * blocks ceil(hi / 64) - floor(lo / 64), equals the 64-row sub-tiles that touch [lo, hi).
 */
#include <stdio.h>

#include "ops/gemm/gemm.h"

int main(void) {
  long long checked = 0, failures = 0;
  for (int world = 1; world <= 16; world++)
    for (int seg = 1; seg <= 2100; seg++) {
      int rows = weft_gemm_scatter_rows(seg), m = world * seg;
      for (int q = 0; q < world; q++) {
        long long lo = (long long)q * seg, hi = lo + seg, base = lo / 64 * 64;
        /* brute force: the sub-tiles (64-row blocks of C, rows < m) that touch [lo, hi), and the
         * slot rows the kernel writes for them */
        long long touch = 0, top = 0;
        for (long long r = 0; r < m; r += 64) {
          if (r + 64 <= lo || r >= hi) continue;
          touch++;
          if (r - base + 64 > top) top = r - base + 64;
        }
        long long count = (hi + 63) / 64 - lo / 64;
        checked++;
        if (top > rows || count != touch || lo - base + seg > rows || lo - base != lo % 64) {
          if (failures++ < 10)
            printf("FAIL world %d seg %d rank %d: slot %d rows, kernel writes up to %lld, segment "
                   "ends at %lld; count %lld, sub-tiles %lld\n",
                   world, seg, q, rows, top, lo - base + seg, count, touch);
        }
      }
    }
  printf("%lld segments checked, %lld failures\n", checked, failures);
  return failures ? 1 : 0;
}
