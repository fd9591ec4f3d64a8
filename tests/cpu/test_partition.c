/*
 * test_partition.c — the resource partition of src/ops/ops.c (weft_ops_comm_sms): how many SMs an
 * SM-side consumer takes from the GEMM beside it. Checked over the GEMM + AllReduce shapes of
 * DITRON, Appendix C, Table 2 (m = 8192 and m = 128; TP = 2, 4, 8; bf16) and a sweep of sizes:
 *  - the count lies in [2, sms / 4]; WEFT_COMM_SMS's override is returned as given (below sms);
 *  - more bytes to move beside the same GEMM never gives fewer SMs;
 *  - a memory-bound GEMM (m = 128), whose consumer works after it, gets at least as many SMs as
 *    the compute-bound one of the same n and k (m = 8192), whose consumer keeps pace with it.
 */
#include <stdio.h>

#include "ops/ops.h"
#include "support.h"

/* weft_gemm_ar's arguments for m x n x k (k per rank) at world ranks, bf16, 128 x 256 tiles. */
static int ar_sms(int sms, long long m, long long n, long long k, int world, double scale) {
  double out = 2.0 * m * n;
  return weft_ops_comm_sms(sms, 0, m, n, m > 128 ? 128 : 64, m > 128 ? 256 : 128, 2.0 * m * n * k,
                           2.0 * (m * k + n * k) + out, scale * out * (world - 1) / world);
}

int main(void) {
  test_fail_cap = 30;
  static const long long shapes[][2] = {{4096, 11008}, {4096, 14336}, {8192, 28672},
                                        {16384, 53248}, {8192, 29568}};
  const int sms_list[] = {132, 114, 78};
  for (size_t si = 0; si < sizeof sms_list / sizeof sms_list[0]; si++) {
    int sms = sms_list[si];
    EXPECT(weft_ops_comm_sms(sms, 7, 8192, 4096, 128, 256, 1e12, 1e9, 1e8) == 7, "override 7");
    EXPECT(weft_ops_comm_sms(sms, 1000, 8192, 4096, 128, 256, 1e12, 1e9, 1e8) == sms - 1,
           "override above the SMs");
    for (int world = 2; world <= 8; world *= 2)
      for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
        long long n = shapes[i][0], k = shapes[i][1] / world;
        int big = ar_sms(sms, 8192, n, k, world, 1.0), small = ar_sms(sms, 128, n, k, world, 1.0);
        printf("sms %3d world %d n %5lld k %5lld: m 8192 -> %2d SMs, m 128 -> %2d SMs\n", sms, world,
               n, k, big, small);
        EXPECT(big >= 2 && big <= sms / 4 && small >= 2 && small <= sms / 4,
               "sms %d world %d n %lld: %d / %d outside [2, %d]", sms, world, n, big, small,
               sms / 4);
        EXPECT(small >= big, "sms %d world %d n %lld k %lld: m 128 gets %d SMs, m 8192 %d", sms,
               world, n, k, small, big);
        int last = 0;
        for (double scale = 0.01; scale < 100; scale *= 1.5) {
          int g = ar_sms(sms, 8192, n, k, world, scale);
          EXPECT(g >= last, "sms %d world %d n %lld: %.2fx the bytes gives %d SMs, less gave %d",
                 sms, world, n, scale, g, last);
          EXPECT(g >= 2 && g <= sms / 4, "sms %d: %d SMs", sms, g);
          last = g;
        }
      }
  }
  printf("%s\n", test_failures ? "FAILED" : "all checks passed");
  return test_failures != 0;
}
