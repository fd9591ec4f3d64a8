/*
 * bench_moe_tp.c — `weft-bench ag_moe`, `moe_rs` and `moe_ar`: the tensor-parallel MoE ops at
 * every rank of the job, beside the same steps unfused and unoverlapped with NCCL's collective
 * (NCCL + unfused: ncclAllGather, weft_moe_gather, weft_grouped_gemm, weft_moe_silu_mul for
 * AllGather + MoE; weft_grouped_gemm, weft_moe_combine, ncclReduceScatter or ncclAllReduce for
 * MoE + ReduceScatter / AllReduce), in the same process and run, interleaved, medians of -n
 * samples of BENCH_BATCH calls after -w warm-up samples, a host barrier before each sample, the
 * slowest rank's times. PyTorch's ops on torch._grouped_mm and torch.distributed
 * (bench/peers/torch_moe_tp.py) take the same shapes and routings.
 *
 * A shape is M,H,I,E,TOPK: M tokens a rank (moe_ar: M tokens on every rank), hidden H, expert
 * intermediate size I in all, I / world of it on each rank (W1 [E, 2 I / world, H]: gate rows,
 * then up; W2 [E, H, I / world]), E experts, TOPK. The routing of all the tokens is
 * bench_moe_ids' from seed BENCH_MOE_SEED + the shape's index (-r uniform|zipf), the same on every
 * rank; the routing weights are drawn in (0, 1], fp32. AllGather + MoE's calls plan the routing
 * (weft_moe_route) inside the timed call, as PyTorch's sort does; MoE + ReduceScatter /
 * AllReduce take a plan made before. Each shape is checked once before it is timed: weft's
 * output against NCCL + unfused's (normalised error, the largest over ranks). ratio = NCCL +
 * unfused time / weft time.
 *
 * Default shapes: ag_moe, Triton-distributed, Table 4 (tokens a rank, in hidden H, out hidden I,
 * experts, topk); moe_rs, Triton-distributed, Table 5 (1024 tokens a rank; its in hidden is I, its
 * out hidden H); moe_ar, Ditron, Table 3 (8192 tokens), then decode sizes of its first two
 * models.
 */
#include <math.h>
#include <string.h>

#include "bench.h"

enum { TP_AG, TP_RS, TP_AR };
static const char *tp_names[] = {"ag_moe", "moe_rs", "moe_ar"};

typedef struct tp_ctx {
  bench_t *b;
  ncclComm_t nc;
  int op, m, tokens, h, inter, experts, topk, tile;
  weft_dtype_t in;
  size_t ws_bytes, red_bytes;
  weft_moe_routing_t r;
  /* every op: the ids of every token, the plan's workspace, this rank's weights (W1 or W2) */
  CUdeviceptr ids, ws, w;
  /* AllGather + MoE: this rank's tokens, the gathered ones (weft's: symmetric), the plan-ordered
   * tokens, the gate-and-up product, the activations (weft's and the baseline's) */
  CUdeviceptr x, x_all, a, gu, act, act_base;
  void *x_gathered;
  /* MoE + ReduceScatter / AllReduce: the activations, the routing weights, the baseline's expert
   * outputs and combine, both outputs (weft's moe_ar output: symmetric), the partials' workspace */
  CUdeviceptr weights, y, comb, out, out_base;
  void *red, *out_sym;
} tp_ctx_t;

#define P(d) ((void *)(uintptr_t)(d))

/* which 0: weft (AUTO); 1: NCCL + unfused */
static void run_call(bench_t *b, void *ctx, int which) {
  tp_ctx_t *x = ctx;
  weft_comm_t *comm = b->comm;
  weft_stream_t s = b->stream;
  ncclDataType_t nt = x->in == WEFT_DTYPE_FP16 ? ncclFloat16 : ncclBfloat16;
  int h = x->h, i = x->inter;
  if (x->op == TP_AG) {
    OK(weft_moe_route(comm, (const int32_t *)P(x->ids), x->tokens, x->topk, x->experts, x->tile,
                      P(x->ws), x->ws_bytes, &x->r, s));
    if (which == 0) {
      OK(weft_ag_moe(comm, &x->r, P(x->x), x->x_gathered, P(x->w), h, 2LL * i * h, P(x->act), i,
                     x->m, i, h, x->in, x->in, WEFT_GEMM_LAYOUT_NK, WEFT_ALGO_AUTO, s));
      return;
    }
    NCCL_OK(ncclAllGather(P(x->x), P(x->x_all), (size_t)x->m * h, nt, x->nc, (CUstream)s));
    OK(weft_moe_gather(comm, &x->r, P(x->x_all), h, x->in, P(x->a), s));
    OK(weft_grouped_gemm(comm, &x->r, P(x->a), h, P(x->w), h, 2LL * i * h, P(x->gu), 2 * i, 2 * i,
                         h, x->in, x->in, WEFT_GEMM_LAYOUT_NK, s));
    OK(weft_moe_silu_mul(comm, &x->r, P(x->gu), i, x->in, P(x->act_base), s));
    return;
  }
  void *out = x->op == TP_AR ? x->out_sym : P(x->out);
  if (which == 0) {
    if (x->op == TP_RS)
      OK(weft_moe_rs(comm, &x->r, P(x->act), i, P(x->w), i, (long long)h * i, P(x->weights),
                     WEFT_DTYPE_FP32, out, x->red, h, i, x->in, x->in, WEFT_GEMM_LAYOUT_NK,
                     WEFT_ALGO_AUTO, s));
    else
      OK(weft_moe_ar(comm, &x->r, P(x->act), i, P(x->w), i, (long long)h * i, P(x->weights),
                     WEFT_DTYPE_FP32, out, x->red, h, i, x->in, x->in, WEFT_GEMM_LAYOUT_NK,
                     WEFT_ALGO_AUTO, s));
    return;
  }
  OK(weft_grouped_gemm(comm, &x->r, P(x->act), i, P(x->w), i, (long long)h * i, P(x->y), h, h, i,
                       x->in, x->in, WEFT_GEMM_LAYOUT_NK, s));
  OK(weft_moe_combine(comm, &x->r, P(x->y), P(x->weights), WEFT_DTYPE_FP32, h, x->in, P(x->comb),
                      s));
  if (x->op == TP_RS)
    NCCL_OK(ncclReduceScatter(P(x->comb), P(x->out_base), (size_t)x->m * h, nt, ncclSum, x->nc,
                              (CUstream)s));
  else
    NCCL_OK(ncclAllReduce(P(x->comb), P(x->out_base), (size_t)x->tokens * h, nt, ncclSum, x->nc,
                          (CUstream)s));
}

/* The suites' default shapes (M, H, I, E, TOPK) */
static int tp_defaults(int op, int (*shapes)[5]) {
  static const int ag[][5] = {
      {256, 2048, 1408, 60, 4},  {512, 2048, 1408, 60, 4},   {1024, 2048, 1408, 60, 4},
      {2048, 2048, 1408, 60, 4}, {256, 14336, 4096, 8, 2},   {512, 14336, 4096, 8, 2},
      {1024, 14336, 4096, 8, 2}, {2048, 14336, 4096, 8, 2},  {256, 16384, 6144, 8, 2},
      {512, 16384, 6144, 8, 2},  {1024, 16384, 6144, 8, 2},  {2048, 16384, 6144, 8, 2},
      {512, 1408, 2048, 64, 6},  {1024, 1408, 2048, 64, 6},  {2048, 1408, 2048, 64, 6}};
  static const int rs[][5] = {
      {1024, 2048, 1536, 8, 2},  {1024, 2048, 1536, 32, 2}, {1024, 2048, 1536, 64, 2},
      {1024, 2048, 1536, 32, 5}, {1024, 2048, 1536, 64, 5}, {1024, 4096, 2048, 8, 2},
      {1024, 4096, 2048, 32, 2}, {1024, 4096, 2048, 64, 2}, {1024, 4096, 2048, 32, 5},
      {1024, 4096, 2048, 64, 5}};
  static const int ar[][5] = {
      {8192, 2048, 1408, 60, 4}, {8192, 14336, 4096, 8, 2}, {8192, 16384, 6144, 8, 2},
      {8192, 1408, 2048, 64, 6}, {16, 2048, 1408, 60, 4},   {64, 2048, 1408, 60, 4},
      {128, 14336, 4096, 8, 2}};
  const int(*d)[5] = op == TP_AG ? ag : op == TP_RS ? rs : ar;
  int n = op == TP_AG ? 15 : op == TP_RS ? 10 : 7;
  memcpy(shapes, d, sizeof(int) * 5 * (size_t)n);
  return n;
}

static int main_tp(int op, int argc, char **argv) {
  bench_moe_opts_t o;
  bench_moe_options(&o, tp_names[op], argc, argv);
  if (!o.nshapes) o.nshapes = tp_defaults(op, o.shapes);
  if (o.dry) { /* the routings, no GPU, at the world size WEFT_BENCH_WORLD names (default 2) */
    const char *w = getenv("WEFT_BENCH_WORLD");
    char prefix[32];
    snprintf(prefix, sizeof prefix, "%s ", tp_names[op]);
    bench_moe_dry_run(prefix, o.shapes, o.nshapes, o.zipf, op == TP_AR ? 1 : w ? atoi(w) : 2);
    return 0;
  }
  bench_t b;
  memset(&b, 0, sizeof b);
  b.opt.iters = o.iters, b.opt.warmup = o.warmup, b.opt.graph = o.graph, b.opt.json = o.json;
  b.opt.dtype = o.dtype;
  b.opt.check = 1;
  bench_init(&b, tp_names[op]);
  ncclComm_t nc = bench_nccl_init(&b);
  weft_kernel_t *k_fill, *k_diff;
  weft_module_t *mod = bench_data_load(&b, &k_fill, &k_diff);
  weft_dtype_t in = strcmp(o.dtype, "fp16") ? WEFT_DTYPE_BF16 : WEFT_DTYPE_FP16;
  int fp16 = in == WEFT_DTYPE_FP16, world = b.world;
  CUdeviceptr acc;
  CU(cuMemAlloc(&acc, 3 * sizeof(double)));
  if (b.rank == 0) {
    printf("# %s at %d ranks, %s, %s routing; us per call (median of %d samples of %d calls, the "
           "slowest rank); ratio = NCCL + unfused / weft; err: weft against NCCL + unfused\n",
           tp_names[op], world, o.dtype, o.zipf ? "Zipf" : "uniform", o.iters, BENCH_BATCH);
    printf("#%6s %6s %6s %4s %4s %10s %12s %8s %9s\n", "M", "H", "I", "E", "topk", "weft_us",
           "baseline_us", "ratio", "err");
  }
  for (int si = 0; si < o.nshapes; si++) {
    const int *sh = o.shapes[si];
    tp_ctx_t x; /* this shape's call and buffers */
    memset(&x, 0, sizeof x);
    x.b = &b, x.nc = nc, x.op = op, x.in = in;
    x.m = sh[0], x.h = sh[1], x.experts = sh[3], x.topk = sh[4];
    x.tokens = op == TP_AR ? x.m : x.m * world;
    if (sh[2] % world || (sh[2] / world) % 8) {
      if (b.rank == 0)
        printf("# %dx%dx%dx%dx%d: I %d does not split into multiples of 8 over %d ranks, skipped\n",
               sh[0], sh[1], sh[2], sh[3], sh[4], sh[2], world);
      continue;
    }
    x.inter = sh[2] / world;
    long long entries = (long long)x.tokens * x.topk, max_rows;
    x.tile = entries < 128LL * x.experts ? 64 : 128;
    OK(weft_moe_routing_size(x.tokens, x.topk, x.experts, x.tile, &x.ws_bytes, &max_rows));
    size_t h = (size_t)x.h, in = (size_t)x.inter, e = (size_t)x.experts, t = (size_t)x.tokens;
    size_t m = (size_t)x.m, rows = (size_t)max_rows, es = 2;
    int *ids = bench_calloc((size_t)entries, sizeof(int));
    bench_moe_ids(x.tokens, x.topk, x.experts, o.zipf, BENCH_MOE_SEED + (unsigned long long)si,
                  ids);
    CU(cuMemAlloc(&x.ids, (size_t)entries * 4));
    CU(cuMemcpyHtoD(x.ids, ids, (size_t)entries * 4));
    CU(cuMemAlloc(&x.ws, x.ws_bytes));
    weft_launch_config_t lc = WEFT_LAUNCH_CONFIG_INIT;
    lc.grid[0] = 1024, lc.block[0] = 256;
    unsigned long long seed = 0x1234ull * (si + 1) + (unsigned long long)b.rank * 7919ull;
    size_t out_n = op == TP_AG ? rows * in : (op == TP_RS ? m : t) * h;
    CUdeviceptr mine, theirs; /* weft's output and the baseline's, compared */
    if (op == TP_AG) {
      unsigned long long nx = m * h, nw = e * 2 * in * h;
      CU(cuMemAlloc(&x.x, m * h * es));
      CU(cuMemAlloc(&x.w, nw * es));
      CU(cuMemAlloc(&x.x_all, t * h * es));
      CU(cuMemAlloc(&x.a, rows * h * es));
      CU(cuMemAlloc(&x.gu, rows * 2 * in * es));
      CU(cuMemAlloc(&x.act, rows * in * es));
      CU(cuMemAlloc(&x.act_base, rows * in * es));
      OK(weft_malloc(b.comm, t * h * es, &x.x_gathered));
      unsigned long long s1 = seed + 1, s2 = seed + 2;
      void *fx[] = {&x.x, &nx, &fp16, &s1}, *fw[] = {&x.w, &nw, &fp16, &s2};
      OK(weft_kernel_launch(k_fill, &lc, fx, b.stream));
      OK(weft_kernel_launch(k_fill, &lc, fw, b.stream));
      /* (both activations zeroed: the plan's padding rows and rows past it compare equal) */
      CU(cuMemsetD8Async(x.act, 0, rows * in * es, b.stream));
      CU(cuMemsetD8Async(x.act_base, 0, rows * in * es, b.stream));
      mine = x.act, theirs = x.act_base;
    } else {
      unsigned long long na = rows * in, nw = e * h * in;
      CU(cuMemAlloc(&x.act, na * es));
      CU(cuMemAlloc(&x.w, nw * es));
      CU(cuMemAlloc(&x.weights, (size_t)entries * 4));
      CU(cuMemAlloc(&x.y, rows * h * es));
      CU(cuMemAlloc(&x.comb, t * h * es));
      CU(cuMemAlloc(&x.out, m * h * es));
      CU(cuMemAlloc(&x.out_base, (op == TP_RS ? m : t) * h * es));
      OK(weft_moe_reduce_workspace_size(b.comm, x.tokens, x.h, x.in, &x.red_bytes));
      OK(weft_malloc(b.comm, x.red_bytes, &x.red));
      OK(weft_malloc(b.comm, t * h * es, &x.out_sym));
      float *w = bench_calloc((size_t)entries, sizeof(float));
      bench_moe_weights(entries, si, w); /* the same on every rank */
      CU(cuMemcpyHtoD(x.weights, w, (size_t)entries * 4));
      free(w);
      unsigned long long s1 = seed + 1, s2 = seed + 2;
      void *fa[] = {&x.act, &na, &fp16, &s1}, *fw[] = {&x.w, &nw, &fp16, &s2};
      OK(weft_kernel_launch(k_fill, &lc, fa, b.stream));
      OK(weft_kernel_launch(k_fill, &lc, fw, b.stream));
      OK(weft_moe_route(b.comm, (const int32_t *)P(x.ids), x.tokens, x.topk, x.experts, x.tile,
                        P(x.ws), x.ws_bytes, &x.r, b.stream));
      mine = op == TP_AR ? (CUdeviceptr)(uintptr_t)x.out_sym : x.out, theirs = x.out_base;
    }
    OK(weft_stream_synchronize(b.comm, b.stream));
    run_call(&b, &x, 0);
    run_call(&b, &x, 1);
    CU(cuMemsetD8Async(acc, 0, 3 * sizeof(double), b.stream));
    void *da[] = {&mine, &theirs, &out_n, &fp16, &acc};
    OK(weft_kernel_launch(k_diff, &lc, da, b.stream));
    OK(weft_stream_synchronize(b.comm, b.stream));
    double hd[3];
    CU(cuMemcpyDtoH(hd, acc, sizeof hd));
    double err = bench_max_across_ranks(&b, sqrt(hd[0] / (hd[1] > 0 ? hd[1] : 1)));
    int wrong = hd[2] > 0 || !(err <= 1e-2);
    b.wrong += wrong;

    double us[2] = {0};
    bench_time_runs(&b, 2, run_call, &x, 1, us);
    if (b.rank == 0) {
      printf(" %6d %6d %6d %4d %4d %10.1f %12.1f %7.3fx %9.2e%s\n", sh[0], sh[1], sh[2], sh[3],
             sh[4], us[0], us[1], us[1] / us[0], err, wrong ? " WRONG" : "");
      fflush(stdout);
    }
    char name[96];
    snprintf(name, sizeof name, "%dx%dx%dx%dx%d", sh[0], sh[1], sh[2], sh[3], sh[4]);
    const char *keys[] = {"M", "H", "I", "E", "topk", "weft_us", "baseline_us", "ratio", "err"};
    double vals[] = {sh[0], sh[1], sh[2], sh[3], sh[4], us[0], us[1], us[1] / us[0], err};
    bench_json_row(&b, tp_names[op], name, 9, keys, vals);
    OK(weft_stream_synchronize(b.comm, b.stream));
    OK(weft_comm_barrier(b.comm)); /* no peer still reads or writes a symmetric buffer */
    CUdeviceptr bufs[] = {x.ids, x.ws, x.w, x.x, x.x_all, x.a, x.gu, x.act, x.act_base,
                          x.weights, x.y, x.comb, x.out, x.out_base};
    for (size_t q = 0; q < sizeof bufs / sizeof bufs[0]; q++)
      if (bufs[q]) CU(cuMemFree(bufs[q]));
    if (x.x_gathered) OK(weft_free(b.comm, x.x_gathered));
    if (x.red) OK(weft_free(b.comm, x.red));
    if (x.out_sym) OK(weft_free(b.comm, x.out_sym));
    free(ids);
  }
  CU(cuMemFree(acc));
  OK(weft_module_unload(mod));
  ncclCommDestroy(nc);
  bench_finish(&b);
  return 0;
}

int main_ag_moe(int argc, char **argv) { return main_tp(TP_AG, argc, argv); }
int main_moe_rs(int argc, char **argv) { return main_tp(TP_RS, argc, argv); }
int main_moe_ar(int argc, char **argv) { return main_tp(TP_AR, argc, argv); }
