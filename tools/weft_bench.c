/*
 * weft-bench — benchmarks with same-run baselines, nccl-tests conventions.
 * Usage: weftrun -n N weft-bench <suite> [-b min] [-e max] [-f factor] [-n iters] [-w warmup]
 *                                       [-c check] [-d dtype] [-a algo] [-J file.json]
 * Suites: primitives (barrier, signal ping-pong, put bandwidth), allgather (beside NCCL), gemm
 * (beside cuBLAS).
 */
#include <stdio.h>
#include <string.h>

int main_primitives(int argc, char **argv);
int main_allgather(int argc, char **argv);
int main_gemm(int argc, char **argv);

static const struct {
  const char *name;
  int (*main)(int, char **);
  const char *what;
} suites[] = {
    {"primitives", main_primitives, "barrier_all latency, signal ping-pong, put bandwidth"},
    {"allgather", main_allgather, "weft_allgather beside ncclAllGather (-a auto|ce|sm|ll)"},
    {"gemm", main_gemm, "weft_gemm beside cuBLAS (-s M,N,K, -l nk|kn, -d bf16|fp16, --hooks)"},
};

int main(int argc, char **argv) {
  if (argc >= 2)
    for (size_t i = 0; i < sizeof suites / sizeof suites[0]; i++)
      if (!strcmp(argv[1], suites[i].name)) return suites[i].main(argc - 2, argv + 2);
  fprintf(stderr, "usage: weftrun -n N weft-bench <suite> [options]\nsuites:\n");
  for (size_t i = 0; i < sizeof suites / sizeof suites[0]; i++)
    fprintf(stderr, "  %-12s %s\n", suites[i].name, suites[i].what);
  return 2;
}
