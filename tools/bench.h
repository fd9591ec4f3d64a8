/*
 * bench.h — what every weft-bench suite shares: nccl-tests style options (-b -e -f -n -w -c -d -a
 * -J), the header (versions, each rank's device), timing with CUDA events, results gathered to
 * rank 0, and the JSON file. Tools exit on error (support.h's OK, CU, NCCL_OK and CUBLAS_OK);
 * the library never does.
 */
#ifndef WEFT_BENCH_H
#define WEFT_BENCH_H

#include <cuda.h>
#include <nccl.h>
#include <stdio.h>
#include <stdlib.h>

#include "support.h" /* the check macros (OK, CU, NCCL_OK, CUBLAS_OK): tests/support.h */
#include "tools.h"

typedef struct bench_opts {
  size_t min_bytes, max_bytes;
  double factor;     /* -f: size multiplier */
  int iters, warmup; /* -n, -w */
  int graph;         /* -G 1: each sample is one CUDA graph of the batch (launch costs out) */
  int check;         /* -c: checked calls of each op a size (1; primitives once; 0 none) */
  const char *dtype; /* -d */
  const char *algo;  /* -a */
  const char *op;    /* -o: the reductions' operator (NULL: sum) */
  const char *json;  /* -J */
} bench_opts_t;

typedef struct bench {
  weft_comm_t *comm;
  int rank, world;
  CUstream stream;
  bench_opts_t opt;
  FILE *json;
  int json_rows;
  int wrong;            /* total wrong values seen */
  double busbw_sum[2];  /* weft's and NCCL's busbw over the collective rows: the footer's average */
  int busbw_rows;
} bench_t;

#ifdef CUBLAS_V2_H_
/* The baseline's cuBLAS handle on the bench's stream, with the workspace that cuBLAS's
 * documentation recommends for Hopper and that PyTorch gives it there: 32 MiB (cublasSetWorkspace;
 * WEFT_BENCH_CUBLAS_WORKSPACE_MIB overrides it, 0 leaves cuBLAS's own), so that the baseline is
 * configured as users' is. (On an H200 at weft-bench gemm's default shapes the two ran the same,
 * 2026-11-26: bench/results/2026-11-27-gemm-h200.md, "[K, N] B: tile widths and the cuBLAS
 * workspace".) *ws: the workspace (0 if none), for
 * cuMemFree after cublasDestroy. */
static inline void bench_cublas_create(bench_t *b, cublasHandle_t *h, CUdeviceptr *ws) {
  const char *e = getenv("WEFT_BENCH_CUBLAS_WORKSPACE_MIB");
  size_t mib = e ? (size_t)strtoul(e, NULL, 10) : 32;
  CUBLAS_OK(cublasCreate(h));
  CUBLAS_OK(cublasSetStream(*h, (cudaStream_t)b->stream));
  *ws = 0;
  if (mib) {
    CU(cuMemAlloc(ws, mib << 20));
    CUBLAS_OK(cublasSetWorkspace(*h, (void *)(uintptr_t)*ws, mib << 20));
    if (b->rank == 0) printf("# cuBLAS workspace %zu MiB\n", mib);
  } else if (b->rank == 0) {
    printf("# cuBLAS workspace: cuBLAS's own\n");
  }
}
#endif

/* The suite's usage (weft_bench.c's table) on stderr, then exit(2): a bad option. */
void bench_usage_exit(const char *suite);
/* -T: every wait's deadline in seconds (WEFT_TIMEOUT_MS for this process; set before init). */
void bench_set_timeout(const char *seconds);
/* Parses the common options from argv (after the suite name); unknown options are an error. */
void bench_parse(bench_t *b, int argc, char **argv, size_t def_min, size_t def_max);
/* Initialises the communicator and stream and prints the header on rank 0. */
void bench_init(bench_t *b, const char *suite);
void bench_finish(bench_t *b);
/* A wrong count as its column's text in buf (16 bytes): the number, or N/A where -c 0 left the
 * outputs unchecked; bench_wrong_json: the JSON's value, -1 for N/A. */
const char *bench_wrong_text(const bench_t *b, int wrong, char *buf);
double bench_wrong_json(const bench_t *b, int wrong);

/* Median of n doubles (sorts in place). */
double bench_median(double *v, int n);
/* The largest value across ranks (the slowest rank sets the step time). */
double bench_max_across_ranks(bench_t *b, double v);

/* One call of run `which` of a suite, on b->stream. */
typedef void (*bench_call_fn)(struct bench *b, void *ctx, int which);
/* Times nruns runs interleaved (sample i of every run before sample i + 1 of any), each sample in
 * a fresh random order: in a fixed order the same kernel measured 1-2% apart in two places (H100),
 * and with the order rotated every sample each run still followed the same run: on a long GEMM
 * the same kernel measured 2.7-3.7% apart as the run after cuBLAS and as a later one, 0.2-1.0%
 * in random order (H200, 8192x6656x16384, dev/gemm/README.md). -w warm-up
 * then -n samples each, a sample being BENCH_BATCH calls back to back between two events
 * (nccl-tests' way; with -G 1 the batch is captured once per run as a CUDA graph and each
 * sample launches it), after a host barrier of the ranks when `barrier`. us[r]: the median in
 * microseconds per call, the largest across ranks. */
#define BENCH_BATCH 10
void bench_time_runs(struct bench *b, int nruns, bench_call_fn call, void *ctx, int barrier,
                     double *us);

/* One JSON row: {"suite":..., "name":..., key/value pairs...}; values are doubles. */
void bench_json_row(bench_t *b, const char *suite, const char *name, int nkv, const char **keys,
                    const double *values);

/* The options of the matrix suites (gemm, ag_gemm, gemm_rs, gemm_ar). */
#define BENCH_MAX_SHAPES 128
typedef struct bench_mm_opts {
  int shapes[BENCH_MAX_SHAPES][3], nshapes; /* -s M,N,K (repeatable) */
  int kmajor;                               /* -l nk (1) | kn (0) */
  const char *dtype;                        /* -d bf16 | fp16 */
  int iters, warmup;                        /* -n, -w */
  int graph;                                /* -G */
  const char *json;                         /* -J */
} bench_mm_opts_t;
/* Applies option opt with value v: 1 when it is one of the above, 0 when it is not, -1 for a bad
 * value. bench_mm_check: 0 when the options together are inconsistent. */
int bench_mm_option(bench_mm_opts_t *o, const char *opt, const char *v);
int bench_mm_check(const bench_mm_opts_t *o);

/* The benchmarks' data kernels, loaded on b's GPU (weft_module_unload the module when done):
 * fill(p, n, fp16, seed) draws n uniform values in [-1, 1) rounded to bf16 or fp16;
 * diff(x, y, n, fp16, acc) adds sum (x - y)^2, sum y^2 and the count of non-finite x to
 * acc[0..2] (16-bit x and y). */
weft_module_t *bench_data_load(bench_t *b, weft_kernel_t **fill, weft_kernel_t **diff);

/* ---- collectives beside NCCL (bench_collectives.c) ---------------------------------------- */

/* NCCL over the same ranks, its NVLink multicast off
 * (docs/architecture.md, "NVLink multicast is off"). */
ncclComm_t bench_nccl_init(bench_t *b);
/* -a: auto, ce, sm, ll, two_shot, ring, seq (overlapped ops: sequential). */
weft_algo_t bench_parse_algo(const char *name);
/* -d: the weft and NCCL types of a dtype name (uint8, int32, fp16, bf16, fp32, fp64). */
void bench_parse_dtype(const char *name, weft_dtype_t *wt, ncclDataType_t *nt);
/* -o: the weft and NCCL operators of a reduction's name (sum, prod, max, min, avg; NULL: sum). */
void bench_parse_op(const char *name, weft_red_op_t *wo, ncclRedOp_t *no);
/* calloc, or exit with a message (the benchmarks' host arrays). */
void *bench_calloc(size_t count, size_t size);
/* n pseudo-random bytes from seed (every byte varies, none is always zero). */
void bench_fill(void *h, size_t n, unsigned seed);

/* The MoE suites' routings (grouped_gemm, moe_layer; bench/peers/torch_grouped_mm.py draws the
 * same): shape i's from seed BENCH_MOE_SEED + i, topk distinct experts for each token, uniform or
 * by weights 1 / (e + 1) (zipf), from an xorshift generator. */
#define BENCH_MOE_SEED 0x5EED0000ull
void bench_moe_ids(int tokens, int topk, int experts, int zipf, unsigned long long seed, int *ids);
/* --dry-run of an MoE suite: each shape (s[0]xs[1]x..., experts s[3], topk s[4]) after prefix,
 * with its routing of s[0] * token_factor tokens: its rows, expert loads and a hash of every id
 * in order. */
void bench_moe_dry_run(const char *prefix, int (*shapes)[5], int nshapes, int zipf,
                       int token_factor);
/* The MoE suites' options: -s T,X,Y,E,TOPK (repeatable; X, Y the suite's two widths), -l nk|kn,
 * -r uniform|zipf, -d bf16|fp16, -n, -w, -G, -J, -T, --dry-run; the usage on anything else. */
#define BENCH_MOE_MAX_SHAPES 64
typedef struct bench_moe_opts {
  int shapes[BENCH_MOE_MAX_SHAPES][5];
  int nshapes, kmajor, zipf, iters, warmup, graph, dry;
  const char *dtype, *json;
} bench_moe_opts_t;
void bench_moe_options(bench_moe_opts_t *o, const char *suite, int argc, char **argv);
/* The routing weights of an MoE suite's shape i: entries floats in (0, 1], the same on every
 * rank (an xorshift sequence from the shape's index). */
void bench_moe_weights(long long entries, int shape_index, float *w);
/* The smallest expert load of a routing (the dense-rate target's condition). */
int bench_moe_min_load(const int *ids, long long entries, int experts);

/* A collective suite's call function takes which = 2 * in_place + (0: weft, 1: NCCL); the
 * suites whose ops have no in-place form (alltoall, alltoallv) only 0 and 1. */
#define BENCH_WHICH(in_place, nccl) (2 * (in_place) + (nccl))
#define BENCH_WHICH_IN_PLACE(which) ((which) >> 1)
#define BENCH_WHICH_NCCL(which) ((which) & 1)

/* One form of a collective at one size, out of place or in place (nccl-tests prints both):
 * weft's and NCCL's median times (us) and this rank's wrong counts. */
typedef struct bench_coll_pair {
  double us_w, us_n;
  int wrong_w, wrong_n;
} bench_coll_pair_t;

/* bench_time_runs of weft and NCCL out of place and, with in_place, in place too, all
 * interleaved, with barriers: the times of p[0] (and p[1]). */
void bench_time_pairs(bench_t *b, bench_call_fn call, void *ctx, int in_place,
                      bench_coll_pair_t *p);
/* The checked calls of a size: once everything so far is done (the inputs' uploads and the
 * outputs' poisoning) and every rank is there, one call of weft and one of NCCL, in place or
 * not, synchronised. */
void bench_call_pair_once(bench_t *b, bench_call_fn call, void *ctx, int in_place);
/* The table of a collective suite: header, then one row per size (bus_factor as nccl-tests: AR
 * 2(n-1)/n, AG/RS/A2A (n-1)/n): out of place, then in place unless ip is NULL (no such form).
 * Rows go to the JSON file too and weft's wrong values to the exit status. */
void bench_coll_header(bench_t *b, const char *suite, int in_place);
void bench_coll_row(bench_t *b, const char *suite, size_t bytes, size_t count, const char *type,
                    double bus_factor, const bench_coll_pair_t *oop, const bench_coll_pair_t *ip);

#endif
