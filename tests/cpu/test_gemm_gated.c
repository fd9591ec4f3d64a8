/*
 * test_gemm_gated.c — kernels/gemm/gated.h compiled as host C: for every tile width the grouped
 * kernel takes (BN 128 to 256 in steps of 16, 64- and 128-row tiles: a warpgroup's block of BN or
 * BN / 2 columns) and many gate-and-up widths n (multiples of 16, and halves no multiple of the
 * block), every tile's warpgroup block loads, for each of its output columns c below n / 2, gate
 * column c at block column j and up column n / 2 + c at block column j + wg_n / 2, and no block
 * column reads a gate or up column of another output column inside the halves; every output column
 * is some tile's.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/gemm/gated.h"

int main(void) {
  int failures = 0, checked = 0;
  static unsigned char covered[1 << 16];
  for (int bm = 64; bm <= 128; bm *= 2)
    for (int bn = 128; bn <= 256; bn += 16) {
      int wg_n = bm == 128 ? bn : bn / 2, half = wg_n / 2;
      if (wg_n % 16) continue;
      for (int n = 16; n <= 5000; n += n < 600 ? 16 : 208) {
        int inter = n / 2, tiles_n = (n + bn - 1) / bn;
        memset(covered, 0, (size_t)inter);
        for (int tn = 0; tn < tiles_n; tn++)
          for (int cw = 0; cw < bn / wg_n; cw++) {
            int n0 = tn * bn, col_off = cw * wg_n, out0 = (n0 + col_off) / 2;
            for (int j = 0; j < half; j++) {
              int c = out0 + j; /* the output column of block columns j and j + half */
              int g = weft_gemm_gated_source(col_off + j, half, n0, n);
              int u = weft_gemm_gated_source(col_off + j + half, half, n0, n);
              checked++;
              if (c < inter) {
                covered[c]++;
                if (g != c || u != inter + c) {
                  if (failures++ < 10)
                    printf("FAIL BM %d BN %d n %d tile %d block %d column %d: gate %d up %d, want "
                           "%d and %d\n", bm, bn, n, tn, cw, j, g, u, c, inter + c);
                }
              }
            }
          }
        for (int c = 0; c < inter; c++)
          if (covered[c] != 1 && failures++ < 10)
            printf("FAIL BM %d BN %d n %d: output column %d computed %d times\n", bm, bn, n, c,
                   covered[c]);
      }
    }
  printf("%d block columns checked, %d failures\n%s\n", checked, failures, failures ? "FAILED" : "ok");
  return failures ? 1 : 0;
}
