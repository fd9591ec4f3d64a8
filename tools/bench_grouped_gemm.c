/*
 * bench_grouped_gemm.c — `weft-bench grouped_gemm`: weft_grouped_gemm over a routing plan beside
 * cuBLAS's grouped GEMM (cublasGemmGroupedBatchedEx, one group an expert: each expert's own rows
 * of the same gathered tokens, without the plan's padding) and beside one dense cublasGemmEx of
 * the same useful FLOPs (tokens * topk rows), in the same process and run, interleaved, medians
 * of -n samples of BENCH_BATCH calls after -w warm-up samples, as `weft-bench gemm` times.
 *
 * A shape is T,N,K,E,TOPK: T tokens, each routed to TOPK of E experts whose weights are [N, K]
 * (-l nk) or [K, N] (-l kn). The routing is drawn once per shape from a fixed seed, uniform or
 * Zipf-skewed (-r uniform|zipf: expert e chosen with weight 1 / (e + 1)), every token's experts
 * distinct; weft_moe_route plans it and weft_moe_gather lays the tokens out, both outside the
 * timed calls. Each shape is checked once before it is timed: weft's C (its padding rows zero)
 * against cuBLAS's grouped C, both zeroed first, normalised error. TFLOP/s count the useful
 * FLOPs, 2 * T * TOPK * N * K; ratio = cuBLAS grouped time / weft time, dense = the dense GEMM's
 * time / weft time (above 1: weft faster).
 *
 * --dry-run prints each shape's routing (rows, the experts' smallest and largest loads, the empty
 * experts, a hash of the ids) without a GPU; bench/peers/torch_grouped_mm.py --dry-run prints the
 * same lines (tests/cpu/bench_routing.sh compares them).
 *
 * Default shapes: the MoE layers of TileLink, Table 4 (S = 8192 tokens, hidden H, expert
 * intermediate I, E experts, top-k: the first GEMM N = I, K = H and the second N = H, K = I); the
 * grouped GEMMs of Triton-distributed, Tables 4 and 5 (tokens a rank, in and out hidden, experts,
 * top-k); and the experts of open models at 4096 tokens (Mixtral-8x7B: 8 experts, top 2, hidden
 * 4096, intermediate 14336; Qwen3-30B-A3B: 128, top 8, 2048, 768; DeepSeek-V3: 256, top 8, 7168,
 * 2048), gate and up in one GEMM (N = 2I) and down (K = I).
 */
#include <cublas_v2.h>
#include <math.h>
#include <string.h>

#include "bench.h"

typedef struct gg_ctx {
  bench_t *b;
  cublasHandle_t blas;
  weft_moe_routing_t r;
  int n, k, kmajor, tokens, topk, experts;
  long long b_stride;
  weft_dtype_t in;
  CUdeviceptr a, bw, c, c_blas, c_dense;
  /* cuBLAS's grouped call: the non-empty experts' sizes (host) and pointers (device) */
  int groups, *m_arr, *n_arr, *k_arr, *lda_arr, *ldb_arr, *ldc_arr, *sizes;
  cublasOperation_t *ta, *tb;
  float *alpha, *beta;
  CUdeviceptr ptrs; /* [3][groups]: A (the weights), B (the tokens), C */
} gg_ctx_t;

/* run 0: cuBLAS grouped; 1: weft; 2: cuBLAS dense at equal FLOPs */
static void run(gg_ctx_t *x, int which, CUdeviceptr c) {
  cudaDataType t = x->in == WEFT_DTYPE_FP16 ? CUDA_R_16F : CUDA_R_16BF;
  if (which == 0) {
    const void *const *pa = (const void *const *)(uintptr_t)x->ptrs;
    const void *const *pb = pa + x->groups;
    void *const *pc = (void *const *)(uintptr_t)(x->ptrs + 2 * sizeof(void *) * (size_t)x->groups);
    /* row-major C_e[rows, n] = tokens_e op(W_e)  <=>  column-major C_e^T = op(W_e)^T tokens_e^T */
    CUBLAS_OK(cublasGemmGroupedBatchedEx(x->blas, x->ta, x->tb, x->m_arr, x->n_arr, x->k_arr,
                                         x->alpha, pa, t, x->lda_arr, pb, t, x->ldb_arr, x->beta,
                                         pc, t, x->ldc_arr, x->groups, x->sizes,
                                         CUBLAS_COMPUTE_32F));
    return;
  }
  if (which == 2) {
    float one = 1.f, zero = 0.f;
    int rows = x->tokens * x->topk;
    CUBLAS_OK(cublasGemmEx(x->blas, x->kmajor ? CUBLAS_OP_T : CUBLAS_OP_N, CUBLAS_OP_N, x->n, rows,
                           x->k, &one, (void *)(uintptr_t)x->bw, t, x->kmajor ? x->k : x->n,
                           (void *)(uintptr_t)x->a, t, x->k, &zero, (void *)(uintptr_t)x->c_dense,
                           t, x->n, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
    return;
  }
  OK(weft_grouped_gemm(x->b->comm, &x->r, (const void *)(uintptr_t)x->a, x->k,
                       (const void *)(uintptr_t)x->bw, x->kmajor ? x->k : x->n, x->b_stride,
                       (void *)(uintptr_t)c, x->n, x->n, x->k, x->in, x->in,
                       x->kmajor ? WEFT_GEMM_LAYOUT_NK : WEFT_GEMM_LAYOUT_KN, x->b->stream));
}

static void run_call(bench_t *b, void *ctx, int which) {
  (void)b;
  gg_ctx_t *x = ctx;
  run(x, which, which == 0 ? x->c_blas : x->c);
}

int main_grouped_gemm(int argc, char **argv) {
  bench_moe_opts_t o;
  bench_moe_options(&o, "grouped_gemm", argc, argv);
  int (*shapes)[5] = o.shapes, nshapes = o.nshapes, kmajor = o.kmajor, zipf = o.zipf;
  const char *dtype = o.dtype;
  if (!nshapes) {
    /* TileLink, Table 4: S, H, I, E, topk; both GEMMs of each layer */
    static const int tilelink[][5] = {{8192, 2048, 1536, 8, 2},  {8192, 2048, 1536, 32, 2},
                                      {8192, 2048, 1536, 32, 5}, {8192, 4096, 2048, 8, 2},
                                      {8192, 4096, 2048, 32, 2}, {8192, 4096, 2048, 32, 5}};
    for (int i = 0; i < 6; i++) {
      const int *l = tilelink[i];
      int up[5] = {l[0], l[2], l[1], l[3], l[4]}, down[5] = {l[0], l[1], l[2], l[3], l[4]};
      memcpy(shapes[nshapes++], up, sizeof up);
      memcpy(shapes[nshapes++], down, sizeof down);
    }
    /* Triton-distributed, Tables 4 and 5: tokens a rank, in hidden (K), out hidden (N), E, topk */
    static const int td[][5] = {{2048, 1408, 2048, 60, 4}, {2048, 4096, 14336, 8, 2},
                                {2048, 6144, 16384, 8, 2}, {2048, 2048, 1408, 64, 6},
                                {1024, 2048, 1536, 32, 5}, {1024, 4096, 2048, 64, 5}};
    for (int i = 0; i < 6; i++) memcpy(shapes[nshapes++], td[i], sizeof td[i]);
    /* open models at 4096 tokens: E, topk, hidden, intermediate */
    static const int models[][4] = {{8, 2, 4096, 14336}, {128, 8, 2048, 768}, {256, 8, 7168, 2048}};
    for (int i = 0; i < 3; i++) {
      const int *m = models[i];
      int up[5] = {4096, 2 * m[3], m[2], m[0], m[1]}, down[5] = {4096, m[2], m[3], m[0], m[1]};
      memcpy(shapes[nshapes++], up, sizeof up);
      memcpy(shapes[nshapes++], down, sizeof down);
    }
  }
  if (o.dry) { /* the shapes and their routings, no GPU (as torch_grouped_mm.py's) */
    bench_moe_dry_run("", shapes, nshapes, zipf, 1);
    return 0;
  }
  bench_t b;
  memset(&b, 0, sizeof b);
  b.opt.iters = o.iters, b.opt.warmup = o.warmup, b.opt.graph = o.graph, b.opt.json = o.json;
  b.opt.dtype = dtype;
  b.opt.check = 1;
  bench_init(&b, "grouped_gemm");
  gg_ctx_t x;
  memset(&x, 0, sizeof x);
  x.b = &b;
  CUdeviceptr blas_ws;
  bench_cublas_create(&b, &x.blas, &blas_ws);
  weft_kernel_t *k_fill, *k_diff;
  weft_module_t *mod = bench_data_load(&b, &k_fill, &k_diff);
  x.in = strcmp(dtype, "fp16") ? WEFT_DTYPE_BF16 : WEFT_DTYPE_FP16;
  x.kmajor = kmajor;
  int fp16 = x.in == WEFT_DTYPE_FP16;
  CUdeviceptr acc;
  CU(cuMemAlloc(&acc, 3 * sizeof(double)));
  if (b.rank == 0) {
    printf("# %s in and out, experts' weights %s, %s routing; times in us per call (median of %d "
           "samples of %d calls); TF: useful TFLOP/s; ratio = cuBLAS grouped / weft, dense = one "
           "cuBLAS GEMM of the same FLOPs / weft\n",
           dtype, kmajor ? "[N,K]" : "[K,N]", zipf ? "Zipf" : "uniform", o.iters, BENCH_BATCH);
    printf("#%6s %6s %6s %4s %4s %11s %9s %9s %9s %9s %7s %7s %9s\n", "T", "N", "K", "E", "topk",
           "grouped_us", "weft_us", "dense_us", "grp_TF", "weft_TF", "ratio", "dense", "err");
  }
  double worst = 1e9;
  for (int si = 0; si < nshapes; si++) {
    x.tokens = shapes[si][0], x.n = shapes[si][1], x.k = shapes[si][2];
    x.experts = shapes[si][3], x.topk = shapes[si][4];
    int tile = 128;
    size_t ws_bytes;
    long long max_rows;
    OK(weft_moe_routing_size(x.tokens, x.topk, x.experts, tile, &ws_bytes, &max_rows));
    long long entries = (long long)x.tokens * x.topk;
    x.b_stride = (long long)x.n * x.k;
    CUdeviceptr ids_d, ws, tok;
    CU(cuMemAlloc(&ids_d, (size_t)entries * 4));
    CU(cuMemAlloc(&ws, ws_bytes));
    CU(cuMemAlloc(&tok, (size_t)x.tokens * x.k * 2));
    CU(cuMemAlloc(&x.a, (size_t)max_rows * x.k * 2));
    CU(cuMemAlloc(&x.bw, (size_t)x.b_stride * x.experts * 2));
    size_t nc = (size_t)max_rows * x.n;
    CU(cuMemAlloc(&x.c, nc * 2));
    CU(cuMemAlloc(&x.c_blas, nc * 2));
    CU(cuMemAlloc(&x.c_dense, (size_t)entries * x.n * 2));
    int *ids = bench_calloc((size_t)entries, sizeof(int));
    bench_moe_ids(x.tokens, x.topk, x.experts, zipf, BENCH_MOE_SEED + (unsigned long long)si, ids);
    CU(cuMemcpyHtoD(ids_d, ids, (size_t)entries * 4));
    weft_launch_config_t lc = WEFT_LAUNCH_CONFIG_INIT;
    lc.grid[0] = 1024, lc.block[0] = 256;
    unsigned long long nt = (unsigned long long)x.tokens * x.k, nw = (unsigned long long)x.b_stride * x.experts;
    unsigned long long st = 0x1234ull * (si + 1), sw = 0x5678ull * (si + 1);
    void *ft[] = {&tok, &nt, &fp16, &st}, *fw[] = {&x.bw, &nw, &fp16, &sw};
    OK(weft_kernel_launch(k_fill, &lc, ft, b.stream));
    OK(weft_kernel_launch(k_fill, &lc, fw, b.stream));
    OK(weft_moe_route(b.comm, (const int32_t *)(uintptr_t)ids_d, x.tokens, x.topk, x.experts, tile,
                      (void *)(uintptr_t)ws, ws_bytes, &x.r, b.stream));
    OK(weft_moe_gather(b.comm, &x.r, (const void *)(uintptr_t)tok, x.k, x.in,
                       (void *)(uintptr_t)x.a, b.stream));
    OK(weft_stream_synchronize(b.comm, b.stream));
    /* cuBLAS's groups: the non-empty experts, from the plan */
    int *counts = bench_calloc((size_t)x.experts, sizeof(int));
    int *offsets = bench_calloc((size_t)x.experts + 1, sizeof(int));
    CU(cuMemcpyDtoH(counts, (CUdeviceptr)(uintptr_t)x.r.counts, sizeof(int) * (size_t)x.experts));
    CU(cuMemcpyDtoH(offsets, (CUdeviceptr)(uintptr_t)x.r.offsets,
                    sizeof(int) * ((size_t)x.experts + 1)));
    int g = 0;
    for (int e = 0; e < x.experts; e++) g += counts[e] > 0;
    x.groups = g;
    x.m_arr = bench_calloc((size_t)g, sizeof(int)), x.n_arr = bench_calloc((size_t)g, sizeof(int));
    x.k_arr = bench_calloc((size_t)g, sizeof(int)), x.lda_arr = bench_calloc((size_t)g, sizeof(int));
    x.ldb_arr = bench_calloc((size_t)g, sizeof(int)), x.ldc_arr = bench_calloc((size_t)g, sizeof(int));
    x.sizes = bench_calloc((size_t)g, sizeof(int));
    x.ta = bench_calloc((size_t)g, sizeof *x.ta), x.tb = bench_calloc((size_t)g, sizeof *x.tb);
    x.alpha = bench_calloc((size_t)g, sizeof(float)), x.beta = bench_calloc((size_t)g, sizeof(float));
    CUdeviceptr *hp = bench_calloc(3 * (size_t)g, sizeof(CUdeviceptr));
    for (int e = 0, i = 0; e < x.experts; e++) {
      if (!counts[e]) continue;
      x.ta[i] = kmajor ? CUBLAS_OP_T : CUBLAS_OP_N, x.tb[i] = CUBLAS_OP_N;
      x.m_arr[i] = x.n, x.n_arr[i] = counts[e], x.k_arr[i] = x.k;
      x.lda_arr[i] = kmajor ? x.k : x.n, x.ldb_arr[i] = x.k, x.ldc_arr[i] = x.n;
      x.sizes[i] = 1, x.alpha[i] = 1.f, x.beta[i] = 0.f;
      hp[i] = x.bw + (CUdeviceptr)((size_t)e * x.b_stride * 2);
      hp[g + i] = x.a + (CUdeviceptr)((size_t)offsets[e] * x.k * 2);
      hp[2 * g + i] = x.c_blas + (CUdeviceptr)((size_t)offsets[e] * x.n * 2);
      i++;
    }
    CU(cuMemAlloc(&x.ptrs, 3 * (size_t)(g ? g : 1) * sizeof(CUdeviceptr)));
    if (g) CU(cuMemcpyHtoD(x.ptrs, hp, 3 * (size_t)g * sizeof(CUdeviceptr)));
    /* the check: weft's C (padding rows zero) against cuBLAS's grouped C, both zeroed first */
    CU(cuMemsetD8Async(x.c, 0, nc * 2, b.stream));
    CU(cuMemsetD8Async(x.c_blas, 0, nc * 2, b.stream));
    run(&x, 0, x.c_blas);
    run(&x, 1, x.c);
    CU(cuMemsetD8Async(acc, 0, 3 * sizeof(double), b.stream));
    void *da[] = {&x.c, &x.c_blas, &nc, &fp16, &acc};
    OK(weft_kernel_launch(k_diff, &lc, da, b.stream));
    OK(weft_stream_synchronize(b.comm, b.stream));
    double h[3];
    CU(cuMemcpyDtoH(h, acc, sizeof h));
    double err = sqrt(h[0] / (h[1] > 0 ? h[1] : 1));
    int wrong = h[2] > 0 || !(err <= 1e-2);
    b.wrong += wrong;

    double us[3] = {0};
    bench_time_runs(&b, 3, run_call, &x, 0, us);
    double flop = 2.0 * (double)entries * x.n * x.k;
    double ratio = us[0] / us[1], dense = us[2] / us[1];
    if (ratio < worst) worst = ratio;
    if (b.rank == 0) {
      printf(" %6d %6d %6d %4d %4d %11.1f %9.1f %9.1f %9.1f %9.1f %6.3fx %6.3fx %9.2e%s\n",
             x.tokens, x.n, x.k, x.experts, x.topk, us[0], us[1], us[2], flop / us[0] * 1e-6,
             flop / us[1] * 1e-6, ratio, dense, err, wrong ? " WRONG" : "");
      fflush(stdout);
    }
    char name[96];
    snprintf(name, sizeof name, "%dx%dx%dx%dx%d", x.tokens, x.n, x.k, x.experts, x.topk);
    /* min_load: the least-loaded expert's tokens (the dense-rate target's shapes: >= 256) */
    const char *keys[] = {"T", "N", "K", "E", "topk", "min_load", "cublas_grouped_us", "weft_us",
                          "cublas_dense_us", "ratio", "dense_ratio", "err"};
    double vals[] = {x.tokens, x.n, x.k, x.experts, x.topk,
                     bench_moe_min_load(ids, entries, x.experts), us[0], us[1], us[2], ratio, dense,
                     err};
    bench_json_row(&b, "grouped_gemm", name, 12, keys, vals);
    CUdeviceptr bufs[] = {ids_d, ws, tok, x.a, x.bw, x.c, x.c_blas, x.c_dense, x.ptrs};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++) CU(cuMemFree(bufs[i]));
    free(ids), free(counts), free(offsets), free(hp);
    free(x.m_arr), free(x.n_arr), free(x.k_arr), free(x.lda_arr), free(x.ldb_arr), free(x.ldc_arr);
    free(x.sizes), free(x.ta), free(x.tb), free(x.alpha), free(x.beta);
  }
  if (b.rank == 0) printf("# lowest ratio to cuBLAS grouped %.3fx\n", worst);
  CU(cuMemFree(acc));
  OK(weft_module_unload(mod));
  cublasDestroy(x.blas);
  if (blas_ws) CU(cuMemFree(blas_ws));
  bench_finish(&b);
  return 0;
}
