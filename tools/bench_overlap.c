/*
 * bench_overlap.c — `weft-bench ag_gemm | gemm_rs | gemm_ar`: the overlapped tensor-parallel ops
 * beside cuBLAS + NCCL in the same process and run, on the same random data, interleaved (sample
 * i of every run before sample i + 1 of any), medians of -n samples of BENCH_BATCH calls after a
 * host barrier, the slowest rank's. Per shape (M, N, K of the whole layer, split over the ranks as
 * in DITRON, Appendix C, Tables 1 and 2): the GEMM alone (cuBLAS), the communication alone (NCCL),
 * cuBLAS + NCCL in sequence, weft's op, the exposed communication (weft - GEMM alone), the speedup
 * (cuBLAS + NCCL / weft) and weft's share of the overlap bound (max(GEMM alone, comm alone) /
 * weft). Each shape is checked once first: weft's output (poisoned before) against cuBLAS + NCCL's,
 * normalised error <= 1e-2, non-finite values counted as wrong (non-zero exit).
 *
 *   ag_gemm: A [M/ws, K] per rank, B [K, N/ws] (-l kn, the default, as in bench/peers) or
 *            [N/ws, K] (-l nk), C [M, N/ws];
 *            NCCL AllGather of A, then the GEMM on the gathered A.
 *   gemm_rs: A [M, K/ws], B [K/ws, N] or [N, K/ws], out [M/ws, N]; the GEMM, then NCCL
 *            ReduceScatter of the [M, N] partial.
 *   gemm_ar: the same GEMM, then NCCL AllReduce of the partial: out [M, N].
 * Options: -s M,N,K (repeatable; default the layer shapes of DITRON, Appendix C, Tables 1 and 2,
 * gemm_ar the GEMM+RS shapes at M = 8192 and M = 128), -l nk|kn, -d bf16|fp16, -a auto|ce|sm|seq
 * (gemm_rs sm: the fused scatter; gemm_ar sm: the SM consumer), --autotune (AUTO with
 * weft_comm_set_autotune: each shape's plan timed on its check call), -n, -w, -J file.json.
 */
#include <cublas_v2.h>
#include <math.h>
#include <string.h>
#include <time.h>

#include "bench.h"

enum { OV_AG, OV_RS, OV_AR };
enum { RUN_GEMM, RUN_COMM, RUN_BASELINE, RUN_WEFT, RUNS };

typedef struct ov {
  int op, kmajor, fp16;
  weft_dtype_t in;
  weft_algo_t algo;
  cublasHandle_t blas;
  ncclComm_t nc;
  /* the local GEMM: C[gm, gn] = A[gm, gk] op(B) */
  int gm, gn, gk, ldb;
  int m_rank; /* ag_gemm: rows per rank */
  CUdeviceptr a, bw, afull, partial, ref;
  void *sym, *out_sym; /* weft: ag_gemm's gathered A / the workspace; gemm_ar's c */
  CUdeviceptr out;     /* weft's output (out_sym for gemm_ar) */
  size_t out_elems, ref_elems;
} ov_t;

/* The baseline's GEMM: row-major C[gm, gn] = A op(B), fp32 accumulation. */
static void cublas_gemm(ov_t *x, CUdeviceptr a, CUdeviceptr c) {
  float one = 1.f, zero = 0.f;
  cudaDataType t = x->fp16 ? CUDA_R_16F : CUDA_R_16BF;
  CUBLAS_OK(cublasGemmEx(x->blas, x->kmajor ? CUBLAS_OP_T : CUBLAS_OP_N, CUBLAS_OP_N, x->gn,
                         x->gm, x->gk, &one, (void *)(uintptr_t)x->bw, t, x->ldb,
                         (void *)(uintptr_t)a, t, x->gk, &zero, (void *)(uintptr_t)c, t, x->gn,
                         CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
}

static void nccl_comm(bench_t *b, ov_t *x) {
  ncclDataType_t t = x->fp16 ? ncclFloat16 : ncclBfloat16;
  cudaStream_t s = (cudaStream_t)b->stream;
  void *p = (void *)(uintptr_t)x->partial, *r = (void *)(uintptr_t)x->ref;
  if (x->op == OV_AG)
    NCCL_OK(ncclAllGather((void *)(uintptr_t)x->a, (void *)(uintptr_t)x->afull,
                          (size_t)x->m_rank * x->gk, t, x->nc, s));
  else if (x->op == OV_RS)
    NCCL_OK(ncclReduceScatter(p, r, x->ref_elems, t, ncclSum, x->nc, s));
  else
    NCCL_OK(ncclAllReduce(p, r, x->ref_elems, t, ncclSum, x->nc, s));
}

static void weft_op(bench_t *b, ov_t *x) {
  weft_gemm_layout_t l = x->kmajor ? WEFT_GEMM_LAYOUT_NK : WEFT_GEMM_LAYOUT_KN;
  void *a = (void *)(uintptr_t)x->a, *bw = (void *)(uintptr_t)x->bw, *out = (void *)(uintptr_t)x->out;
  if (x->op == OV_AG)
    OK(weft_ag_gemm(b->comm, a, x->sym, bw, x->ldb, out, x->gn, x->m_rank, x->gn, x->gk,
                    x->in, x->in, l, x->algo, b->stream));
  else if (x->op == OV_RS)
    OK(weft_gemm_rs(b->comm, a, x->gk, bw, x->ldb, out, x->sym, x->gm, x->gn, x->gk,
                    x->in, x->in, l, x->algo, b->stream));
  else
    OK(weft_gemm_ar(b->comm, a, x->gk, bw, x->ldb, out, x->sym, x->gm, x->gn, x->gk,
                    x->in, x->in, l, x->algo, b->stream));
}

static void run(bench_t *b, void *ctx, int which) {
  ov_t *x = ctx;
  /* the baseline's GEMM reads the gathered A (ag_gemm) or writes the partial (gemm_rs/_ar) */
  CUdeviceptr ga = x->op == OV_AG ? x->afull : x->a, gc = x->op == OV_AG ? x->ref : x->partial;
  switch (which) {
  case RUN_GEMM: cublas_gemm(x, ga, gc); break;
  case RUN_COMM: nccl_comm(b, x); break;
  case RUN_BASELINE:
    if (x->op == OV_AG) nccl_comm(b, x), cublas_gemm(x, ga, gc);
    else cublas_gemm(x, ga, gc), nccl_comm(b, x);
    break;
  default: weft_op(b, x);
  }
}

static void usage(const char *suite) { bench_usage_exit(suite); }

static int main_overlap(int op, const char *suite, int argc, char **argv) {
  static bench_mm_opts_t o = {.kmajor = 0, .dtype = "bf16", .iters = 20, .warmup = 5};
  const char *algo = NULL;
  int tune = 0;
  for (int i = 0; i < argc;) /* --autotune stands alone; the others take a value */
    if (!strcmp(argv[i], "--autotune")) {
      tune = 1;
      memmove(argv + i, argv + i + 1, (size_t)(argc - i - 1) * sizeof *argv);
      argc--;
    } else {
      i++;
    }
  for (int i = 0; i < argc; i += 2) {
    if (i + 1 >= argc) usage(suite);
    int r = bench_mm_option(&o, argv[i], argv[i + 1]);
    if (r < 0 || (!r && strcmp(argv[i], "-a"))) usage(suite);
    if (!r) algo = argv[i + 1];
  }
  if (!bench_mm_check(&o)) usage(suite);
  int (*shapes)[3] = o.shapes, nshapes = o.nshapes, kmajor = o.kmajor;
  const char *dtype = o.dtype;
  if (!nshapes) {
    /* DITRON, Appendix C, Tables 1 and 2 (M, N, K of the layer) */
    static const int ag[][3] = {{8192, 11008, 4096}, {8192, 14336, 4096}, {8192, 28672, 8192},
                                {8192, 53248, 16384}, {8192, 29568, 8192}};
    static const int rs[][3] = {{8192, 4096, 11008}, {8192, 4096, 14336}, {8192, 8192, 28672},
                                {8192, 16384, 53248}, {8192, 8192, 29568}};
    for (int i = 0; i < 5; i++) memcpy(shapes[nshapes++], op == OV_AG ? ag[i] : rs[i], sizeof ag[i]);
    if (op == OV_AR)
      for (int i = 0; i < 5; i++) memcpy(shapes[nshapes], rs[i], sizeof rs[i]), shapes[nshapes++][0] = 128;
  }
  /* the largest shapes' symmetric buffers (gathered A, or partials + staging + c) */
  setenv("WEFT_HEAP_SIZE", "3G", 0);
  bench_t b;
  memset(&b, 0, sizeof b);
  b.opt.iters = o.iters, b.opt.warmup = o.warmup, b.opt.graph = o.graph, b.opt.json = o.json, b.opt.dtype = dtype,
  b.opt.algo = algo;
  b.opt.check = 1; /* every shape is checked once (the header's -c, bench_finish's verdict) */
  bench_init(&b, suite);
  int ws = b.world;
  ov_t x;
  memset(&x, 0, sizeof x);
  x.op = op, x.kmajor = kmajor, x.fp16 = !strcmp(dtype, "fp16");
  x.in = x.fp16 ? WEFT_DTYPE_FP16 : WEFT_DTYPE_BF16;
  x.algo = bench_parse_algo(algo);
  if (tune && x.algo != WEFT_ALGO_AUTO) {
    fprintf(stderr, "weft-bench %s: --autotune chooses the algorithm: drop -a\n", suite);
    exit(2);
  }
  if (tune) OK(weft_comm_set_autotune(b.comm, 1));
  x.nc = bench_nccl_init(&b);
  CUdeviceptr blas_ws;
  bench_cublas_create(&b, &x.blas, &blas_ws);
  weft_kernel_t *k_fill, *k_diff;
  weft_module_t *mod = bench_data_load(&b, &k_fill, &k_diff);
  CUdeviceptr acc;
  CU(cuMemAlloc(&acc, 3 * sizeof(double)));
  if (b.rank == 0) {
    printf("# %s, %s, B %s, algorithm %s; ms per call (median of %d samples of %d calls, slowest "
           "rank); GEMM = cuBLAS alone, comm = NCCL alone; exposed = weft - GEMM; bound = "
           "max(GEMM, comm) / weft\n",
           suite, dtype, kmajor ? "[N,K]" : "[K,N]",
           tune ? "auto, autotuned on the check call (WEFT_DEBUG=INFO names each winner)"
                : algo ? algo : "auto",
           o.iters, BENCH_BATCH);
    printf("#%6s %6s %6s | %8s %8s %11s %8s | %8s %8s %7s | %8s\n", "M", "N", "K", "GEMM", "comm",
           "cuBLAS+NCCL", "weft", "exposed", "speedup", "bound", "err");
  }
  double log_speedup = 0;
  int counted = 0;
  for (int si = 0; si < nshapes; si++) {
    int M = shapes[si][0], N = shapes[si][1], K = shapes[si][2];
    if ((op != OV_AR && M % ws) || (op == OV_AG ? N : K) % ws) { /* gemm_ar: every rank all M */
      fprintf(stderr, "weft-bench %s: shape %d,%d,%d does not split over %d ranks\n", suite, M, N,
              K, ws);
      exit(2);
    }
    x.gm = M, x.gn = op == OV_AG ? N / ws : N, x.gk = op == OV_AG ? K : K / ws;
    x.m_rank = M / ws;
    x.ldb = kmajor ? x.gk : x.gn;
    size_t na = (size_t)(op == OV_AG ? x.m_rank : M) * x.gk, nb = (size_t)x.gn * x.gk;
    size_t nc = (size_t)x.gm * x.gn;
    x.ref_elems = op == OV_RS ? nc / ws : nc;
    x.out_elems = x.ref_elems;
    CU(cuMemAlloc(&x.a, na * 2));
    CU(cuMemAlloc(&x.bw, nb * 2));
    CU(cuMemAlloc(&x.ref, x.ref_elems * 2));
    x.afull = x.partial = 0;
    if (op == OV_AG) {
      CU(cuMemAlloc(&x.afull, (size_t)M * x.gk * 2));
      OK(weft_malloc(b.comm, (size_t)M * x.gk * 2, &x.sym));
      CU(cuMemAlloc(&x.out, x.out_elems * 2));
    } else {
      size_t wsb;
      CU(cuMemAlloc(&x.partial, nc * 2));
      OK(weft_gemm_rs_workspace_size(b.comm, M, x.gn, x.in, &wsb));
      OK(weft_malloc(b.comm, wsb, &x.sym));
      if (op == OV_AR) {
        OK(weft_malloc(b.comm, x.out_elems * 2, &x.out_sym));
        x.out = (CUdeviceptr)(uintptr_t)x.out_sym;
      } else {
        CU(cuMemAlloc(&x.out, x.out_elems * 2));
      }
    }
    weft_launch_config_t lc = WEFT_LAUNCH_CONFIG_INIT;
    lc.grid[0] = 1024, lc.block[0] = 256;
    unsigned long long sa = ((unsigned long long)time(NULL) * 0x9E3779B9ull + (unsigned)si) ^
                            (0x1234567ull * (unsigned long long)(b.rank + 1));
    unsigned long long sb = sa * 31 + 7;
    void *fa[] = {&x.a, &na, &x.fp16, &sa}, *fb[] = {&x.bw, &nb, &x.fp16, &sb};
    OK(weft_kernel_launch(k_fill, &lc, fa, b.stream));
    OK(weft_kernel_launch(k_fill, &lc, fb, b.stream));
    /* check once: weft's output (poisoned) against cuBLAS + NCCL's */
    CU(cuMemsetD8Async(x.out, 0xFF, x.out_elems * 2, b.stream));
    OK(weft_stream_synchronize(b.comm, b.stream));
    OK(weft_comm_barrier(b.comm));
    run(&b, &x, RUN_BASELINE);
    run(&b, &x, RUN_WEFT);
    CU(cuMemsetD8Async(acc, 0, 3 * sizeof(double), b.stream));
    unsigned long long n = x.out_elems;
    void *da[] = {&x.out, &x.ref, &n, &x.fp16, &acc};
    OK(weft_kernel_launch(k_diff, &lc, da, b.stream));
    double h[3];
    OK(weft_stream_synchronize(b.comm, b.stream));
    CU(cuMemcpyDtoH(h, acc, sizeof h));
    double err = bench_max_across_ranks(&b, sqrt(h[0] / (h[1] > 0 ? h[1] : 1)));
    int wrong = h[2] > 0 || !(err <= 1e-2);
    b.wrong += wrong;

    double us[RUNS];
    bench_time_runs(&b, RUNS, run, &x, 1, us);
    double ms[RUNS];
    for (int r = 0; r < RUNS; r++) ms[r] = us[r] * 1e-3;
    double bound = ms[RUN_GEMM] > ms[RUN_COMM] ? ms[RUN_GEMM] : ms[RUN_COMM];
    double speedup = ms[RUN_BASELINE] / ms[RUN_WEFT], share = bound / ms[RUN_WEFT];
    log_speedup += log(speedup), counted++;
    if (b.rank == 0) {
      printf(" %6d %6d %6d | %8.3f %8.3f %11.3f %8.3f | %8.3f %7.3fx %6.1f%% | %8.2e%s\n", M, N, K,
             ms[RUN_GEMM], ms[RUN_COMM], ms[RUN_BASELINE], ms[RUN_WEFT], ms[RUN_WEFT] - ms[RUN_GEMM],
             speedup, 100 * share, err, wrong ? " WRONG" : "");
      fflush(stdout);
    }
    const char *keys[] = {"M", "N", "K", "gemm_ms", "comm_ms", "baseline_ms", "weft_ms",
                          "exposed_ms", "speedup", "bound_share", "err", "wrong"};
    double vals[] = {M, N, K, ms[RUN_GEMM], ms[RUN_COMM], ms[RUN_BASELINE], ms[RUN_WEFT],
                     ms[RUN_WEFT] - ms[RUN_GEMM], speedup, share, err, wrong};
    bench_json_row(&b, suite, "shape", (int)(sizeof keys / sizeof keys[0]), keys, vals);

    OK(weft_stream_synchronize(b.comm, b.stream));
    OK(weft_comm_barrier(b.comm)); /* no peer still writes into the symmetric buffers */
    CU(cuMemFree(x.a));
    CU(cuMemFree(x.bw));
    CU(cuMemFree(x.ref));
    if (x.afull) CU(cuMemFree(x.afull));
    if (x.partial) CU(cuMemFree(x.partial));
    if (op == OV_AR) OK(weft_free(b.comm, x.out_sym));
    else CU(cuMemFree(x.out));
    OK(weft_free(b.comm, x.sym));
  }
  if (b.rank == 0 && counted)
    printf("# geometric-mean speedup over cuBLAS+NCCL: %.3fx (%d shapes)\n", exp(log_speedup / counted),
           counted);
  CU(cuMemFree(acc));
  OK(weft_module_unload(mod));
  cublasDestroy(x.blas);
  if (blas_ws) CU(cuMemFree(blas_ws));
  ncclCommDestroy(x.nc);
  bench_finish(&b);
  return 0;
}

int main_ag_gemm(int argc, char **argv) { return main_overlap(OV_AG, "ag_gemm", argc, argv); }
int main_gemm_rs(int argc, char **argv) { return main_overlap(OV_RS, "gemm_rs", argc, argv); }
int main_gemm_ar(int argc, char **argv) { return main_overlap(OV_AR, "gemm_ar", argc, argv); }
