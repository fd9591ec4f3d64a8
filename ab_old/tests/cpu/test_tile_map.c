/*
 * test_tile_map.c — weft/tile_map.h compiled as host C: the static (affine) mapping's signal and
 * owner arithmetic, and the dynamic (table) mapping reading its lookup tables, checked against
 * direct computation for many shapes.
 */
#include <stdio.h>
#include <stdlib.h>

#include "weft/tile_map.h"

int main(void) {
  int fails = 0;
  for (int tiles = 1; tiles <= 300; tiles += 7)
    for (int per_sig = 1; per_sig <= 5; per_sig++)
      for (int ranks = 1; ranks <= 9; ranks++) {
        int per_rank = (tiles + ranks - 1) / ranks;
        weft_tile_map_t m = weft_tile_map_affine(per_sig, 3, per_rank);
        for (int t = 0; t < tiles; t++) {
          if (weft_tile_signal(&m, t) != t / per_sig + 3) fails++;
          int r = weft_tile_rank(&m, t);
          if (r != t / per_rank || r < 0 || r >= ranks) fails++;
        }
      }
  int sig[64], rank[64];
  for (int t = 0; t < 64; t++) sig[t] = (t * 37) % 64, rank[t] = (t * 5) % 3;
  weft_tile_map_t tab = weft_tile_map_table(sig, rank);
  for (int t = 0; t < 64; t++)
    if (weft_tile_signal(&tab, t) != sig[t] || weft_tile_rank(&tab, t) != rank[t]) fails++;
  printf("%s (%d mismatches)\n", fails ? "FAILED" : "ok", fails);
  return fails ? 1 : 0;
}
