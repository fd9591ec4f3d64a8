/*
 * weft-bench — benchmarks with same-run baselines, nccl-tests conventions.
 * Usage: weftrun -n N weft-bench <suite> [-b min] [-e max] [-f factor] [-n iters] [-w warmup]
 *                                       [-G 0|1] [-c check] [-d dtype] [-a algo] [-J file.json]
 * Suites: primitives (barrier, signal ping-pong, put bandwidth), allgather, reduce_scatter,
 * allreduce, alltoall and alltoallv (each beside NCCL), gemm (beside cuBLAS), ag_gemm, gemm_rs
 * and gemm_ar (the overlapped ops beside cuBLAS + NCCL).
 */
#include <stdio.h>
#include <string.h>

int main_primitives(int argc, char **argv);
int main_allgather(int argc, char **argv);
int main_gemm(int argc, char **argv);
int main_reduce_scatter(int argc, char **argv);
int main_allreduce(int argc, char **argv);
int main_alltoall(int argc, char **argv);
int main_alltoallv(int argc, char **argv);
int main_ag_gemm(int argc, char **argv);
int main_gemm_rs(int argc, char **argv);
int main_gemm_ar(int argc, char **argv);

static const struct {
  const char *name;
  int (*main)(int, char **);
  const char *what;
} suites[] = {
    {"primitives", main_primitives, "barrier_all latency, signal ping-pong, put bandwidth"},
    {"allgather", main_allgather, "weft_allgather beside ncclAllGather (-a auto|ce|sm|ll)"},
    {"gemm", main_gemm, "weft_gemm beside cuBLAS (-s M,N,K, -l nk|kn, -d bf16|fp16, --hooks)"},
    {"reduce_scatter", main_reduce_scatter,
     "weft_reduce_scatter beside ncclReduceScatter (-a auto|ce|sm; -d fp16|bf16|fp32)"},
    {"allreduce", main_allreduce,
     "weft_allreduce beside ncclAllReduce (-a auto|sm|two_shot|ll; -d fp16|bf16|fp32)"},
    {"alltoall", main_alltoall, "weft_alltoall beside grouped ncclSend/ncclRecv (-a auto|sm|ll; -d any)"},
    {"alltoallv", main_alltoallv,
     "weft_alltoallv beside grouped ncclSend/ncclRecv, skewed per-pair counts (-a auto|sm|ll; -d any)"},
    {"ag_gemm", main_ag_gemm, "weft_ag_gemm beside NCCL AllGather + cuBLAS (-s M,N,K, -l, -d, -a auto|ce|seq, --autotune)"},
    {"gemm_rs", main_gemm_rs, "weft_gemm_rs beside cuBLAS + NCCL ReduceScatter (same options; -a sm: fused scatter)"},
    {"gemm_ar", main_gemm_ar, "weft_gemm_ar beside cuBLAS + NCCL AllReduce (same options; -a sm: SM consumer)"},
};

int main(int argc, char **argv) {
  setvbuf(stdout, NULL, _IOLBF, 0); /* rows reach a log as they are measured, also if killed */
  if (argc >= 2)
    for (size_t i = 0; i < sizeof suites / sizeof suites[0]; i++)
      if (!strcmp(argv[1], suites[i].name)) return suites[i].main(argc - 2, argv + 2);
  /* asked for (-h, --help): the usage on stdout and success; otherwise on stderr, an error */
  int asked = argc >= 2 && (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help"));
  FILE *to = asked ? stdout : stderr;
  fprintf(to, "usage: weftrun -n N weft-bench <suite> [options]\nsuites:\n");
  for (size_t i = 0; i < sizeof suites / sizeof suites[0]; i++)
    fprintf(to, "  %-15s %s\n", suites[i].name, suites[i].what);
  return asked ? 0 : 2;
}
