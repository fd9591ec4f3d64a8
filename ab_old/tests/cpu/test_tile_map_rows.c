/*
 * test_tile_map_rows.c — the row queries of weft/tile_map.h compiled as host C (the same code the
 * kernels run): the affine rule covers [0, total_rows) exactly once with full tiles and one cut
 * last tile, for many heights and totals; a MoE-like table of uneven segments answers from its
 * tables; a map without rows answers 0; the row fields leave the signal and rank queries as they
 * were.
 */
#include <stdio.h>
#include <stdlib.h>

#include "weft/tile_map.h"

int main(void) {
  int fails = 0;
  for (int h = 1; h <= 70; h += 3)
    for (long long total = 1; total <= 1000; total += 37) {
      int tiles = (int)((total + h - 1) / h);
      weft_tile_map_t m = weft_tile_map_with_rows(weft_tile_map_affine(2, 5, 3), h, total, NULL, NULL);
      long long next = 0;
      for (int t = 0; t < tiles; t++) {
        int rows = weft_tile_rows(&m, t);
        if (weft_tile_row0(&m, t) != next) fails++;
        if (rows != (t < tiles - 1 ? h : (int)(total - (long long)(tiles - 1) * h))) fails++;
        if (rows <= 0 || rows > h) fails++;
        if (weft_tile_signal(&m, t) != t / 2 + 5 || weft_tile_rank(&m, t) != t / 3) fails++;
        next += rows;
      }
      if (next != total) fails++;
      if (weft_tile_rows(&m, tiles) != 0) fails++; /* past the end */
    }
  /* no cut: every tile is full */
  weft_tile_map_t full = weft_tile_map_with_rows(weft_tile_map_affine(1, 0, 1), 128, 0, NULL, NULL);
  if (weft_tile_row0(&full, 7) != 7 * 128 || weft_tile_rows(&full, 1000) != 128) fails++;
  /* no rows at all */
  weft_tile_map_t none = weft_tile_map_affine(1, 0, 1);
  if (weft_tile_row0(&none, 3) != 0 || weft_tile_rows(&none, 3) != 0) fails++;
  /* a table of uneven segments */
  int sig[50], rank[50], row0[50], rows[50], r = 0, n = 0;
  unsigned x = 12345;
  while (r < 1000 && n < 50) {
    x = x * 1103515245u + 12345u;
    int hh = 1 + (int)((x >> 16) % 40);
    if (r + hh > 1000 || n == 49) hh = 1000 - r;
    sig[n] = 49 - n, rank[n] = n % 3, row0[n] = r, rows[n] = hh, r += hh, n++;
  }
  weft_tile_map_t tab = weft_tile_map_with_rows(weft_tile_map_table(sig, rank), 0, 0, row0, rows);
  long long covered = 0;
  for (int t = 0; t < n; t++) {
    if (weft_tile_row0(&tab, t) != covered || weft_tile_rows(&tab, t) != rows[t]) fails++;
    if (weft_tile_signal(&tab, t) != sig[t] || weft_tile_rank(&tab, t) != rank[t]) fails++;
    covered += weft_tile_rows(&tab, t);
  }
  if (covered != 1000) fails++;
  printf("%s (%d mismatches)\n", fails ? "FAILED" : "ok", fails);
  return fails ? 1 : 0;
}
