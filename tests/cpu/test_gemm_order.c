/*
 * test_gemm_order.c — kernels/gemm/order.h compiled as host C: every tile-order function (grouped,
 * grouped rotated, Hilbert table, grouped table) must visit each tile of a tiles_m x tiles_n grid
 * exactly once, for many grids (squares, thin, non-multiples of the group) and groups; and the
 * grouped order is the one its comment defines (every path of it, the shift-only one of a single
 * group too), position by position against an enumeration of that definition.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/gemm/order.h"

static int check_perm(const int *table, int n, const char *what, int tm, int tn, int g) {
  static unsigned char seen[1 << 16];
  if (n < 0 || n > (int)sizeof seen) {
    fprintf(stderr, "%s: %d tiles exceed the test's table\n", what, n);
    return 1;
  }
  memset(seen, 0, (size_t)n);
  for (int p = 0; p < n; p++) {
    if (table[p] < 0 || table[p] >= n || seen[table[p]]) {
      fprintf(stderr, "%s: not a permutation (tiles %dx%d group %d) at position %d -> %d\n", what,
              tm, tn, g, p, table[p]);
      return 1;
    }
    seen[table[p]] = 1;
  }
  return 0;
}

/* The grouped raster by its definition: groups of `group` tile-rows (the last one shorter), each
 * walked column by column with the tile-row varying fastest. */
static void grouped_reference(int tm, int tn, int group, int *table) {
  if (group < 1) group = 1;
  int p = 0;
  for (int first = 0; first < tm; first += group)
    for (int y = 0; y < tn; y++)
      for (int x = first; x < first + group && x < tm; x++) table[p++] = x * tn + y;
}

int main(void) {
  static int table[1 << 16], want[1 << 16];
  int fails = 0, cases = 0;
  const int dims[] = {1, 2, 3, 5, 7, 8, 11, 16, 17, 29, 32, 33, 64, 65, 100, 127, 128};
  const int groups[] = {1, 2, 3, 4, 8, 16, 40};
  int nd = (int)(sizeof dims / sizeof dims[0]), ng = (int)(sizeof groups / sizeof groups[0]);
  for (int a = 0; a < nd; a++)
    for (int b = 0; b < nd; b++) {
      int tm = dims[a], tn = dims[b], n = tm * tn;
      for (int gi = 0; gi < ng; gi++) {
        int g = groups[gi];
        for (int rot = 0; rot < tm; rot += (tm > 4 ? tm / 3 : 1)) {
          for (int p = 0; p < n; p++) {
            int x = -1, y = -1;
            if (rot == 0)
              weft_gemm_order_grouped(p, tm, tn, g, &x, &y);
            else
              weft_gemm_order_grouped_rotated(p, tm, tn, g, rot, &x, &y);
            table[p] = (x < 0 || x >= tm || y < 0 || y >= tn) ? -1 : x * tn + y;
          }
          fails += check_perm(table, n, "grouped", tm, tn, g);
          if (rot == 0) {
            grouped_reference(tm, tn, g, want);
            if (memcmp(table, want, (size_t)n * sizeof *table)) {
              fprintf(stderr, "grouped: not the defined order (tiles %dx%d group %d)\n", tm, tn, g);
              fails++;
            }
            cases++;
          }
          if (weft_gemm_order_grouped_fill(tm, tn, g, rot, table) != n) fails++;
          fails += check_perm(table, n, "grouped_fill", tm, tn, g);
          cases += 2;
        }
      }
      if (weft_gemm_order_hilbert_fill(tm, tn, table) != n) {
        fprintf(stderr, "hilbert_fill: wrong count for %dx%d\n", tm, tn);
        fails++;
      } else {
        fails += check_perm(table, n, "hilbert", tm, tn, 0);
      }
      cases++;
    }
  /* Hilbert locality: on a power-of-two square, consecutive tiles are neighbours. */
  weft_gemm_order_hilbert_fill(32, 32, table);
  for (int p = 1; p < 32 * 32; p++) {
    int d = abs(table[p] / 32 - table[p - 1] / 32) + abs(table[p] % 32 - table[p - 1] % 32);
    if (d != 1) {
      fprintf(stderr, "hilbert: step %d is not to a neighbour\n", p);
      fails++;
      break;
    }
  }
  printf("%s (%d cases, %d failures)\n", fails ? "FAILED" : "ok", cases, fails);
  return fails ? 1 : 0;
}
