/*
 * test_allgather_grid.c — the SM AllGather's grid (weft_ops_ag_sm_grid, src/ops/ops.h), which
 * kernels/allgather.cu's weft_ag_sm splits as (world - 1) x slices blocks for the peers and
 * `local` for the own copy: for world sizes 1 to WEFT_MAX_LOCAL_RANKS, SM counts from 1 to 200 and
 * sizes from 1 byte to 1 GiB (powers of two and their neighbours), every rank has 1 to
 * WEFT_AG_SM_UNITS blocks (so each adds at least one of the WEFT_AG_SM_UNITS a call), at most
 * about 256 KiB of chunk to a block where that allows one, the own copy as many blocks as a peer up
 * to 8, then a quarter of them, the grid within the SMs wherever they hold a block a rank, and
 * the most slices that fit (one more a peer would not).
 */
#include <stdio.h>

#include "ops/ops.h"
#include "support.h"

int main(void) {
  test_fail_cap = 20;
  for (int world = 1; world <= WEFT_MAX_LOCAL_RANKS; world++)
    for (int sms = 1; sms <= 200; sms++)
      for (int e = 0; e <= 30; e++)
        for (int d = -1; d <= 1; d++) {
          size_t bytes = ((size_t)1 << e) + (size_t)d;
          if (bytes == 0) continue;
          unsigned s, l;
          weft_ops_ag_sm_grid(bytes, world, sms, &s, &l);
          size_t peers = (size_t)world - 1, grid = peers * s + l;
          char at[96];
          snprintf(at, sizeof at, "world %d, %d SMs, %zu bytes: %u slices, %u local", world, sms,
                   bytes, s, l);
          EXPECT(s >= 1 && s <= WEFT_AG_SM_UNITS, "%s: slices out of range", at);
          EXPECT(l >= 1 && l <= WEFT_AG_SM_UNITS, "%s: local out of range", at);
          EXPECT(s == 1 || s <= bytes / (256u << 10), "%s: under 256 KiB a block", at);
          EXPECT(l == (s < 8 ? s : s / 4 > 8 ? s / 4 : 8), "%s: the own copy's share", at);
          if ((size_t)sms >= (size_t)world) EXPECT(grid <= (size_t)sms, "%s: grid %zu", at, grid);
          /* the largest count that fits: one more slice a peer no longer would */
          if (s < WEFT_AG_SM_UNITS && s < (bytes >> 18)) {
            size_t s1 = (size_t)s + 1, l1 = s1 < 8 ? s1 : s1 / 4 > 8 ? s1 / 4 : 8;
            EXPECT(peers * s1 + l1 > (size_t)sms, "%s: %zu slices would fit", at, s1);
          }
        }
  printf("%d checks, %d failures\n", test_checks, test_failures);
  return test_failures ? 1 : 0;
}
