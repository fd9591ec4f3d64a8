/*
 * bench_gemm.c — `weft-bench gemm`: weft_gemm beside cuBLAS (cublasGemmEx, fp32 compute) in the
 * same process and run, on the same random data, interleaved (sample i of every run before sample
 * i+1 of any), medians of -n samples of BENCH_BATCH calls after -w warm-up samples; TFLOP/s and
 * the ratio (cuBLAS time / weft time: > 1 means weft is faster). Each shape is checked once
 * first, every weft run apart (the heuristic's, --hooks' and --config's): its C (poisoned
 * before) against cuBLAS's, normalised error, NaN counted as wrong (the err column is the
 * heuristic's; another run's is printed beside its time where it is wrong).
 * Shapes: 8192^3, the per-GPU shapes of DITRON's layers (Appendix C, Tables 1 and 2) at TP=4 and
 * their TP=8 halves, and decode (m = 1, 16, 64, 128 with those n, k); or -s M,N,K (repeatable).
 * --hooks adds, per shape, the same GEMM with the overlap hooks compiled in and their signals
 * already set (wait; notify after each sub-tile's store, released at system scope; the same at gpu
 * scope; wait and notify), and prints
 * each one's cost against the plain kernel. --config BM=128,BN=192,ST=4,CL=2,EPI=3[,G=8,KS=2,TS=4] (repeatable,
 * for tuning the heuristic) adds that tile configuration as a run on every shape; HK=1..4 in it
 * compiles one of those hooks in (1 wait, 2 notify, 3 notify.gpu, 4 wait and notify), so that a
 * hook's cost can be told apart from a configuration's (the split tail's, say: TS=0 against 4).
 * Inputs are cold by default: consecutive calls (of every run alike) cycle through enough
 * distinct random copies of A and B to cover BENCH_GEMM_FOOTPRINT bytes, so that a shape whose
 * operands fit in L2 (the decode shapes' 11-29 MB of weights, L2 being 50 MB on H100/H200) still
 * reads them from memory, as a model's layers do; --hot reuses one copy (L2-resident timings).
 */
#include <cublas_v2.h>
#include <math.h>
#include <string.h>

#include "bench.h"

#define MAX_RUNS 14
#define MAX_SETS 32
#define BENCH_GEMM_FOOTPRINT (256ull << 20) /* over 4x the L2 of an H100 or H200 */

typedef struct gemm_ctx {
  bench_t *b;
  cublasHandle_t blas;
  weft_gemm_problem_t p;
  CUdeviceptr a[MAX_SETS], bm[MAX_SETS], c, cref;
  int nsets, next; /* input copies; the one the next timed call reads */
  /* run 0: cuBLAS; 1: weft; 2..: weft with hooks[r] and/or the configuration cfg[r] */
  const weft_gemm_hooks_t *hooks[MAX_RUNS];
  const weft_gemm_config_t *cfg[MAX_RUNS];
  const char *name[MAX_RUNS];
  int nruns;
} gemm_ctx_t;

/* One call of run `which` on input copy `set`. */
static void run(gemm_ctx_t *x, int which, int set, CUdeviceptr c) {
  const weft_gemm_problem_t *p = &x->p;
  void *a = (void *)(uintptr_t)x->a[set], *bm = (void *)(uintptr_t)x->bm[set];
  if (which == 0) {
    float one = 1.f, zero = 0.f;
    cudaDataType t = p->in == WEFT_DTYPE_FP16 ? CUDA_R_16F : CUDA_R_16BF;
    /* row-major C[m,n] = A op(B)  <=>  column-major C^T[n,m] = op(B)^T A^T */
    CUBLAS_OK(cublasGemmEx(x->blas, p->b_kmajor ? CUBLAS_OP_T : CUBLAS_OP_N, CUBLAS_OP_N, p->n,
                           p->m, p->k, &one, bm, t, (int)p->ldb, a, t, (int)p->lda, &zero,
                           (void *)(uintptr_t)c, t, (int)p->ldc, CUBLAS_COMPUTE_32F,
                           CUBLAS_GEMM_DEFAULT));
    return;
  }
  OK(weft_gemm_launch(x->b->comm, p, x->cfg[which], x->hooks[which], a, bm,
                      (void *)(uintptr_t)c, x->b->stream));
}

static void run_call(bench_t *b, void *ctx, int which) {
  (void)b;
  gemm_ctx_t *x = ctx;
  run(x, which, x->next, x->c);
  x->next = (x->next + 1) % x->nsets;
}

static void usage(void) { bench_usage_exit("gemm"); }

/* --config's value into *c, its hook (HK: 0 none, 1..4 the --hooks runs') into *hook and its SM
 * count (SM: the persistent grid's SMs, weft_gemm_hooks_t.sms; 0 all) into *sms. */
static void parse_config(const char *s, weft_gemm_config_t *c, int *hook, int *sms) {
  *c = (weft_gemm_config_t){.bm = 128, .bn = 256, .stages = 4, .cluster = 2, .epi_bufs = 2,
                            .group = 8, .k_splits = 1};
  char key[8];
  int v, used;
  while (sscanf(s, "%7[A-Z]=%d%n", key, &v, &used) == 2) {
    if (!strcmp(key, "BM")) c->bm = v;
    else if (!strcmp(key, "BN")) c->bn = v;
    else if (!strcmp(key, "ST")) c->stages = v;
    else if (!strcmp(key, "CL")) c->cluster = v;
    else if (!strcmp(key, "EPI")) c->epi_bufs = v;
    else if (!strcmp(key, "G")) c->group = v;
    else if (!strcmp(key, "KS")) c->splitk = 1, c->k_splits = v;
    else if (!strcmp(key, "KC")) c->splitk_cluster = v;
    else if (!strcmp(key, "AR")) c->a_rows = v;
    else if (!strcmp(key, "TS")) c->tail_splits = v;
    else if (!strcmp(key, "SW")) c->swap_ab = v;
    else if (!strcmp(key, "HK") && v >= 0 && v <= 4) *hook = v;
    else if (!strcmp(key, "SM") && v >= 0) *sms = v;
    else usage();
    s += used;
    if (*s != ',') break;
    s++;
  }
  if (*s) usage();
}

int main_gemm(int argc, char **argv) {
  bench_t b;
  static weft_gemm_config_t configs[MAX_RUNS];
  static char config_names[MAX_RUNS][64];
  int config_hooks[MAX_RUNS] = {0}, config_sms[MAX_RUNS] = {0}, nconfigs = 0;
  static weft_gemm_hooks_t config_h[MAX_RUNS];
  static bench_mm_opts_t o = {.kmajor = 1, .dtype = "bf16", .iters = 20, .warmup = 5};
  int hooks = 0, hot = 0;
  for (int i = 0; i < argc; i++) {
    const char *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (!strcmp(argv[i], "--hooks")) {
      hooks = 1;
      continue;
    }
    if (!strcmp(argv[i], "--hot")) {
      hot = 1;
      continue;
    }
    if (!v) usage();
    if (!strcmp(argv[i], "--config") && nconfigs < MAX_RUNS - 6) {
      parse_config(v, &configs[nconfigs], &config_hooks[nconfigs], &config_sms[nconfigs]);
      snprintf(config_names[nconfigs++], sizeof config_names[0], "%s", v);
    } else if (bench_mm_option(&o, argv[i], v) <= 0) {
      usage();
    }
    i++;
  }
  if (!bench_mm_check(&o)) usage();
  int (*shapes)[3] = o.shapes, nshapes = o.nshapes, kmajor = o.kmajor, iters = o.iters;
  const char *dtype = o.dtype;
  if (!nshapes) {
    /* 8192^3; the per-GPU shapes of DITRON's layers (Appendix C) at TP=4 (AG+GEMM: n / 4;
     * GEMM+RS: k / 4) and TP=8 */
    static const int nk[][2] = {{11008, 4096}, {14336, 4096}, {28672, 8192}, {53248, 16384},
                                {29568, 8192}};
    shapes[nshapes][0] = shapes[nshapes][1] = shapes[nshapes][2] = 8192, nshapes++;
    for (int tp = 4; tp <= 8; tp *= 2)
      for (int i = 0; i < 5; i++) {
        int ag[3] = {8192, nk[i][0] / tp, nk[i][1]};
        int rs[3] = {8192, nk[i][1], nk[i][0] / tp};
        memcpy(shapes[nshapes++], ag, sizeof ag);
        memcpy(shapes[nshapes++], rs, sizeof rs);
      }
    if (!hooks) {
      /* decode: m = 1, 16, 64, 128 with the (n, k) pairs of the TP=4 and TP=8 shapes */
      static const int ms[] = {1, 16, 64, 128};
      for (int j = 0; j < 4; j++)
        for (int i = 1; i <= 20; i++) {
          shapes[nshapes][0] = ms[j];
          shapes[nshapes][1] = shapes[i][1];
          shapes[nshapes][2] = shapes[i][2];
          nshapes++;
        }
    }
  }
  memset(&b, 0, sizeof b);
  b.opt.iters = iters, b.opt.warmup = o.warmup, b.opt.graph = o.graph, b.opt.json = o.json, b.opt.dtype = dtype;
  b.opt.check = 1; /* every shape is checked once (the header's -c, bench_finish's verdict) */
  bench_init(&b, "gemm");

  gemm_ctx_t x;
  memset(&x, 0, sizeof x);
  x.b = &b;
  CUdeviceptr blas_ws;
  bench_cublas_create(&b, &x.blas, &blas_ws);
  weft_kernel_t *k_fill, *k_diff;
  weft_module_t *mod = bench_data_load(&b, &k_fill, &k_diff);
  weft_dtype_t in = strcmp(dtype, "fp16") ? WEFT_DTYPE_BF16 : WEFT_DTYPE_FP16;
  int fp16 = in == WEFT_DTYPE_FP16;

  /* hook signals: one per 128 rows, all already at the expected epoch; notify counters */
  int max_m = 0;
  for (int i = 0; i < nshapes; i++) max_m = shapes[i][0] > max_m ? shapes[i][0] : max_m;
  int nsig = (max_m + 127) / 128;
  CUdeviceptr sig, ctr, acc;
  CU(cuMemAlloc(&sig, (size_t)nsig * 8));
  CU(cuMemAlloc(&ctr, (size_t)nsig * 8));
  CU(cuMemAlloc(&acc, 3 * sizeof(double)));
  CU(cuMemsetD32Async(sig, 1, (size_t)nsig * 2, b.stream)); /* every word 1: >= 1 */
  CU(cuMemsetD8Async(ctr, 0, (size_t)nsig * 8, b.stream));
  x.name[0] = "cuBLAS", x.name[1] = "weft";
  x.nruns = 2;
  weft_gemm_hooks_t wait = {.wait_signals = (const uint64_t *)(uintptr_t)sig, .wait_rows = 128,
                            .wait_expected = 1};
  weft_gemm_hooks_t notify = {.notify_counters = (uint64_t *)(uintptr_t)ctr, .notify_rows = 128,
                              .notify_sys = 1};
  weft_gemm_hooks_t notify_gpu = notify;
  notify_gpu.notify_sys = 0;
  weft_gemm_hooks_t both = notify;
  both.wait_signals = wait.wait_signals, both.wait_rows = 128, both.wait_expected = 1;
  const weft_gemm_hooks_t *h[] = {NULL, &wait, &notify, &notify_gpu, &both};
  if (hooks) {
    const char *names[] = {"wait", "notify", "notify.gpu", "wait+notify"};
    for (int i = 0; i < 4; i++) x.hooks[x.nruns] = h[i + 1], x.name[x.nruns++] = names[i];
  }
  for (int i = 0; i < nconfigs; i++) {
    const weft_gemm_hooks_t *hk = h[config_hooks[i]];
    if (config_sms[i]) { /* the same hooks on fewer SMs */
      if (hk) config_h[i] = *hk;
      config_h[i].sms = config_sms[i];
      hk = &config_h[i];
    }
    x.cfg[x.nruns] = &configs[i], x.hooks[x.nruns] = hk, x.name[x.nruns++] = config_names[i];
  }

  if (b.rank == 0) {
    printf("# %s in, %s out, B %s; times in us per call (median of %d samples of %d calls, slowest "
           "rank); ratio = cuBLAS time / weft time\n# inputs %s\n",
           dtype, dtype, kmajor ? "[N,K]" : "[K,N]", iters, BENCH_BATCH,
           hot ? "hot (--hot: one copy of A and B, L2-resident where they fit)"
               : "cold (calls cycle through copies of A and B covering 256 MB)");
    printf("#%6s %6s %6s %10s %10s %9s %9s %7s %9s", "M", "N", "K", "cuBLAS_us", "weft_us",
           "cuBLAS_TF", "weft_TF", "ratio", "err");
    for (int r = 2; r < x.nruns; r++) printf(" | %s: us, vs weft", x.name[r]);
    printf("\n");
  }
  double worst = 1e9;
  for (int si = 0; si < nshapes; si++) {
    int M = shapes[si][0], N = shapes[si][1], K = shapes[si][2];
    weft_gemm_problem_t p = {M, N, K, K, kmajor ? K : N, N, in, in, kmajor, 0};
    x.p = p;
    size_t na = (size_t)M * K, nb = (size_t)N * K, nc = (size_t)M * N;
    unsigned long long sets = hot ? 1 : (BENCH_GEMM_FOOTPRINT + (na + nb) * 2 - 1) / ((na + nb) * 2);
    x.nsets = sets < MAX_SETS ? (int)sets : MAX_SETS, x.next = 0;
    weft_launch_config_t lc = WEFT_LAUNCH_CONFIG_INIT;
    lc.grid[0] = 1024, lc.block[0] = 256;
    unsigned long long seed = 0x1234567ull * (unsigned long long)(si + 1) ^ (unsigned long long)time(NULL);
    for (int s = 0; s < x.nsets; s++) {
      CU(cuMemAlloc(&x.a[s], na * 2));
      CU(cuMemAlloc(&x.bm[s], nb * 2));
      unsigned long long seed_a = seed * (2 * s + 1) + 1, seed_b = seed * (2 * s + 2) + 7;
      void *fa[] = {&x.a[s], &na, &fp16, &seed_a}, *fb[] = {&x.bm[s], &nb, &fp16, &seed_b};
      OK(weft_kernel_launch(k_fill, &lc, fa, b.stream));
      OK(weft_kernel_launch(k_fill, &lc, fb, b.stream));
    }
    CU(cuMemAlloc(&x.c, nc * 2));
    CU(cuMemAlloc(&x.cref, nc * 2));
    OK(weft_gemm_problem_check(b.comm, &p, (void *)(uintptr_t)x.a[0],
                               (void *)(uintptr_t)x.bm[0], (void *)(uintptr_t)x.c));
    /* check once, every weft run (the heuristic's, each hook's and --config's): its C
     * (poisoned) against cuBLAS's */
    run(&x, 0, 0, x.cref);
    double errs[MAX_RUNS] = {0};
    int wrongs[MAX_RUNS] = {0};
    for (int r = 1; r < x.nruns; r++) {
      CU(cuMemsetD8Async(x.c, 0xFF, nc * 2, b.stream));
      run(&x, r, 0, x.c);
      CU(cuMemsetD8Async(acc, 0, 3 * sizeof(double), b.stream));
      void *da[] = {&x.c, &x.cref, &nc, &fp16, &acc};
      OK(weft_kernel_launch(k_diff, &lc, da, b.stream));
      double h[3];
      OK(weft_stream_synchronize(b.comm, b.stream));
      CU(cuMemcpyDtoH(h, acc, sizeof h));
      errs[r] = sqrt(h[0] / (h[1] > 0 ? h[1] : 1));
      wrongs[r] = h[2] > 0 || !(errs[r] <= 1e-2);
      b.wrong += wrongs[r];
    }
    double err = errs[1];
    int wrong = wrongs[1];

    double us[MAX_RUNS] = {0};
    bench_time_runs(&b, x.nruns, run_call, &x, 0, us);
    double flop = 2.0 * M * N * K;
    double ratio = us[0] / us[1];
    if (ratio < worst) worst = ratio;
    if (b.rank == 0) {
      printf(" %6d %6d %6d %10.1f %10.1f %9.1f %9.1f %6.3fx %9.2e%s", M, N, K, us[0], us[1],
             flop / us[0] * 1e-6, flop / us[1] * 1e-6, ratio, err, wrong ? " WRONG" : "");
      for (int r = 2; r < x.nruns; r++) {
        printf(" | %8.1f %+6.2f%%", us[r], 100 * (us[r] / us[1] - 1));
        if (wrongs[r]) printf(" WRONG (err %.2e)", errs[r]);
      }
      printf("\n");
      fflush(stdout);
    }
    char name[64];
    snprintf(name, sizeof name, "%dx%dx%d", M, N, K);
    const char *keys[7 + MAX_RUNS] = {"M", "N", "K", "cublas_us", "weft_us", "ratio", "err"};
    double vals[7 + MAX_RUNS] = {M, N, K, us[0], us[1], ratio, err};
    for (int r = 2; r < x.nruns; r++) keys[5 + r] = x.name[r], vals[5 + r] = us[r];
    bench_json_row(&b, "gemm", name, 5 + x.nruns, keys, vals);
    for (int s = 0; s < x.nsets; s++) {
      CU(cuMemFree(x.a[s]));
      CU(cuMemFree(x.bm[s]));
    }
    CU(cuMemFree(x.c));
    CU(cuMemFree(x.cref));
  }
  if (b.rank == 0) printf("# lowest ratio %.3fx\n", worst);
  CU(cuMemFree(sig));
  CU(cuMemFree(ctr));
  CU(cuMemFree(acc));
  OK(weft_module_unload(mod));
  cublasDestroy(x.blas);
  if (blas_ws) CU(cuMemFree(blas_ws));
  bench_finish(&b);
  return 0;
}
