/*
 * weft-bench — benchmarks with same-run baselines, nccl-tests conventions.
 * Usage: weftrun -n N weft-bench <suite> [options]; `weft-bench <suite> -h` lists a suite's.
 * Suites: primitives (barrier, signal ping-pong, put bandwidth), allgather, reduce_scatter,
 * allreduce, alltoall and alltoallv (each beside NCCL), gemm (beside cuBLAS), grouped_gemm (beside
 * cuBLAS's grouped GEMM), moe_layer (fused and unfused; PyTorch's in bench/peers), ag_moe, moe_rs
 * and moe_ar (the tensor-parallel MoE ops beside NCCL and the unfused steps), ag_gemm, gemm_rs and
 * gemm_ar (the overlapped ops beside cuBLAS + NCCL).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main_primitives(int argc, char **argv);
int main_allgather(int argc, char **argv);
int main_gemm(int argc, char **argv);
int main_grouped_gemm(int argc, char **argv);
int main_moe_layer(int argc, char **argv);
int main_ag_moe(int argc, char **argv);
int main_moe_rs(int argc, char **argv);
int main_moe_ar(int argc, char **argv);
int main_reduce_scatter(int argc, char **argv);
int main_allreduce(int argc, char **argv);
int main_alltoall(int argc, char **argv);
int main_alltoallv(int argc, char **argv);
int main_ag_gemm(int argc, char **argv);
int main_gemm_rs(int argc, char **argv);
int main_gemm_ar(int argc, char **argv);

/* The option synopses: the size sweeps' (bench_parse) and the matrix suites' (bench_mm_option) */
#define SWEEP_OPTS                                                                      \
  "[-b min] [-e max] [-f factor] [-n iters] [-w warmup] [-G 0|1] [-c checks] [-d type] [-a algo] " \
  "[-o op] " \
  "[-T seconds] [-J file.json]"
#define MM_OPTS \
  "[-s M,N,K]... [-l nk|kn] [-d bf16|fp16] [-n iters] [-w warmup] [-G 0|1] [-T seconds] " \
  "[-J file.json]"
#define OVERLAP_OPTS MM_OPTS " [-a auto|ce|sm|seq|ll|two_shot] [--autotune]"

static const struct {
  const char *name;
  int (*main)(int, char **);
  const char *what, *opts;
} suites[] = {
    {"primitives", main_primitives, "barrier_all latency, signal ping-pong, put bandwidth",
     SWEEP_OPTS},
    {"allgather", main_allgather, "weft_allgather beside ncclAllGather (-a auto|ce|sm|ll)",
     SWEEP_OPTS},
    {"gemm", main_gemm, "weft_gemm beside cuBLAS",
     MM_OPTS " [--hooks] [--hot] [--config BM=,BN=,ST=,CL=,EPI=,G=,KS=,KC=,AR=,TS=,SW=,HK=,SM=]..."},
    {"grouped_gemm", main_grouped_gemm,
     "weft_grouped_gemm over an MoE routing beside cuBLAS's grouped GEMM and a dense GEMM of "
     "equal FLOPs",
     "[-s T,N,K,E,TOPK]... [-l nk|kn] [-r uniform|zipf] [-d bf16|fp16] [-n iters] [-w warmup] "
     "[-G 0|1] [-T seconds] [-J file.json] [--dry-run]"},
    {"moe_layer", main_moe_layer,
     "an MoE layer's experts on one GPU (routing, gather, both grouped GEMMs, activation, "
     "combine), fused and unfused",
     "[-s T,H,I,E,TOPK]... [-r uniform|zipf] [-d bf16|fp16] [-n iters] [-w warmup] [-G 0|1] "
     "[-T seconds] [-J file.json] [--dry-run]"},
    {"ag_moe", main_ag_moe,
     "weft_ag_moe (AllGather + MoE) beside NCCL AllGather + the unfused grouped GEMM and activation",
     "[-s M,H,I,E,TOPK]... [-r uniform|zipf] [-d bf16|fp16] [-n iters] [-w warmup] [-G 0|1] "
     "[-T seconds] [-J file.json] [--dry-run]"},
    {"moe_rs", main_moe_rs,
     "weft_moe_rs (MoE + ReduceScatter) beside the unfused grouped GEMM and combine + NCCL "
     "ReduceScatter",
     "[-s M,H,I,E,TOPK]... [-r uniform|zipf] [-d bf16|fp16] [-n iters] [-w warmup] [-G 0|1] "
     "[-T seconds] [-J file.json] [--dry-run]"},
    {"moe_ar", main_moe_ar,
     "weft_moe_ar (MoE + AllReduce) beside the unfused grouped GEMM and combine + NCCL AllReduce",
     "[-s M,H,I,E,TOPK]... [-r uniform|zipf] [-d bf16|fp16] [-n iters] [-w warmup] [-G 0|1] "
     "[-T seconds] [-J file.json] [--dry-run]"},
    {"reduce_scatter", main_reduce_scatter,
     "weft_reduce_scatter beside ncclReduceScatter (-a auto|ce|sm; -d fp16|bf16|fp32)", SWEEP_OPTS},
    {"allreduce", main_allreduce,
     "weft_allreduce beside ncclAllReduce (-a auto|sm|two_shot|ll; -d fp16|bf16|fp32)", SWEEP_OPTS},
    {"alltoall", main_alltoall,
     "weft_alltoall beside grouped ncclSend/ncclRecv (-a auto|sm|ll; -d any)", SWEEP_OPTS},
    {"alltoallv", main_alltoallv,
     "weft_alltoallv beside grouped ncclSend/ncclRecv, skewed per-pair counts (-a auto|sm|ll; -d any)",
     SWEEP_OPTS},
    {"ag_gemm", main_ag_gemm, "weft_ag_gemm beside NCCL AllGather + cuBLAS (-a auto|ce|seq)",
     OVERLAP_OPTS},
    {"gemm_rs", main_gemm_rs, "weft_gemm_rs beside cuBLAS + NCCL ReduceScatter (-a sm: fused scatter)",
     OVERLAP_OPTS},
    {"gemm_ar", main_gemm_ar, "weft_gemm_ar beside cuBLAS + NCCL AllReduce (-a sm|ll|two_shot: SM consumer, LL or two-shot epilogue)",
     OVERLAP_OPTS},
};

static const char legend[] =
    "options (nccl-tests' letters where it has the option):\n"
    "  -b, -e SIZE  smallest and largest size in bytes (K, M, G suffixes)\n"
    "  -f FACTOR    each size this many times the one before (> 1)\n"
    "  -s M,N,K     a shape, repeatable (default: LLM layer shapes)\n"
    "  -l nk|kn     B stored [n, k] or [k, n] (grouped_gemm: each expert's weights)\n"
    "  -s T,N,K,E,TOPK  grouped_gemm: T tokens to TOPK of E experts of [N, K] weights\n"
    "  -s T,H,I,E,TOPK  moe_layer: hidden H, expert intermediate I (W1 [E, 2I, H], W2 [E, H, I])\n"
    "  -s M,H,I,E,TOPK  ag_moe, moe_rs, moe_ar: M tokens a rank (moe_ar: on every rank), I over\n"
    "               the ranks\n"
    "  -r ROUTING   grouped_gemm, moe_layer: uniform (default) or zipf (expert e chosen by\n"
    "               1 / (e + 1))\n"
    "  -d TYPE      the data type\n"
    "  -a ALGO      weft's algorithm (auto: weft chooses)\n"
    "  -o OP        reduce_scatter, allreduce: the operator, sum (default), prod, max, min, avg\n"
    "  -n, -w N     timed and warm-up samples, a sample being 10 calls back to back\n"
    "  -G 0|1       1: each sample replays its calls as one CUDA graph\n"
    "  -c N         calls of each op checked a size, every element, each on fresh data, before\n"
    "               the size is timed (default 1; primitives: once for any N > 0; 0: none)\n"
    "  -T SECONDS   every wait's deadline (WEFT_TIMEOUT_MS): a hang fails the run, saying what\n"
    "               it waited for\n"
    "  -J FILE      the rows also as JSON\n"
    "  --autotune   each shape's plans timed as the whole op on its checked call, the fastest kept\n"
    "  --hooks      gemm: also the kernels with the overlap hooks compiled in\n"
    "  --hot        gemm: one copy of the operands (L2-resident timings)\n"
    "  --config     gemm: a tile configuration as a run of its own, repeatable\n"
    "The matrix suites check each shape once, weft's output against cuBLAS (+ NCCL)'s.\n";

/* The usage of `suite` (NULL: every suite) to `to`. */
static void usage(FILE *to, const char *suite) {
  for (size_t i = 0; i < sizeof suites / sizeof suites[0]; i++)
    if (suite && !strcmp(suite, suites[i].name)) {
      fprintf(to, "usage: weftrun -n N weft-bench %s %s\n  %s\n%s", suite, suites[i].opts,
              suites[i].what, legend);
      return;
    }
  fprintf(to, "usage: weftrun -n N weft-bench <suite> [options] (<suite> -h: its options)\n"
              "suites:\n");
  for (size_t i = 0; i < sizeof suites / sizeof suites[0]; i++)
    fprintf(to, "  %-15s %s\n", suites[i].name, suites[i].what);
}

void bench_usage_exit(const char *suite) {
  usage(stderr, suite);
  exit(2);
}

static int is_help(const char *a) { return !strcmp(a, "-h") || !strcmp(a, "--help"); }

int main(int argc, char **argv) {
  setvbuf(stdout, NULL, _IOLBF, 0); /* rows reach a log as they are measured, also if killed */
  if (argc >= 2)
    for (size_t i = 0; i < sizeof suites / sizeof suites[0]; i++)
      if (!strcmp(argv[1], suites[i].name)) {
        for (int a = 2; a < argc; a++)
          if (is_help(argv[a])) {
            usage(stdout, argv[1]);
            return 0;
          }
        return suites[i].main(argc - 2, argv + 2);
      }
  /* asked for: the usage on stdout and success; otherwise on stderr, an error */
  int asked = argc >= 2 && is_help(argv[1]);
  usage(asked ? stdout : stderr, NULL);
  return asked ? 0 : 2;
}
