/*
 * bench_moe_layer.c — `weft-bench moe_layer`: one MoE layer's experts on one GPU, from the
 * router's ids and weights to the combined output, two ways in the same process and run,
 * interleaved, medians of -n samples of BENCH_BATCH calls after -w warm-up samples:
 *   fused:   weft_moe_route, weft_grouped_gemm_silu_mul (the gate-and-up GEMM, gathering the
 *            tokens in its loads, with the activation in its epilogue), weft_grouped_gemm_combine
 *            (the down GEMM with the weighted top-k combine in its epilogue);
 *   unfused: weft_moe_route, weft_moe_gather, weft_grouped_gemm, weft_moe_silu_mul,
 *            weft_grouped_gemm, weft_moe_combine.
 * PyTorch's layer on torch._grouped_mm (bench/peers/torch_moe_layer.py) takes the same shapes and
 * routings; bench/tables.py sets the two side by side.
 *
 * A shape is T,H,I,E,TOPK: T tokens, each routed to TOPK of E experts (the routing of
 * `weft-bench grouped_gemm`, bench_moe_ids), hidden size H, expert intermediate size I: W1
 * [E, 2I, H] (gate rows, then up), W2 [E, H, I]. The routing weights are drawn in (0, 1], fp32.
 * Each shape is checked once before it is timed: the fused layer's output against the unfused
 * one's, normalised error. TFLOP/s count the useful FLOPs, 6 * T * TOPK * H * I.
 *
 * Default shapes: the MoE layers of TileLink, Table 4 (S = 8192 tokens), and the experts of open
 * models at 4096 tokens (Mixtral-8x7B, Qwen3-30B-A3B, DeepSeek-V3), as torch_moe_layer.py's.
 */
#include <math.h>
#include <string.h>

#include "bench.h"

typedef struct layer_ctx {
  bench_t *b;
  int tokens, hidden, inter, experts, topk, tile;
  weft_dtype_t in;
  size_t ws_bytes;
  weft_moe_routing_t r;
  CUdeviceptr ids, weights, ws, x, w1, w2, a, gu, act, y, out, out_unfused;
} layer_ctx_t;

#define P(d) ((void *)(uintptr_t)(d))

static void layer(layer_ctx_t *x, int fused, CUdeviceptr out) {
  weft_comm_t *comm = x->b->comm;
  weft_stream_t s = x->b->stream;
  int h = x->hidden, i = x->inter;
  OK(weft_moe_route(comm, (const int32_t *)P(x->ids), x->tokens, x->topk, x->experts, x->tile,
                    P(x->ws), x->ws_bytes, &x->r, s));
  if (fused) { /* (the first GEMM gathers the tokens in its loads) */
    OK(weft_grouped_gemm_silu_mul(comm, &x->r, P(x->x), h, P(x->w1), h, 2LL * i * h, P(x->act), i,
                                  i, h, x->in, x->in, WEFT_GEMM_LAYOUT_NK, s));
    OK(weft_grouped_gemm_combine(comm, &x->r, P(x->act), i, P(x->w2), i, (long long)h * i,
                                 P(x->weights), WEFT_DTYPE_FP32, P(out), h, h, i, x->in, x->in,
                                 WEFT_GEMM_LAYOUT_NK, s));
    return;
  }
  OK(weft_moe_gather(comm, &x->r, P(x->x), h, x->in, P(x->a), s));
  OK(weft_grouped_gemm(comm, &x->r, P(x->a), h, P(x->w1), h, 2LL * i * h, P(x->gu), 2 * i, 2 * i,
                       h, x->in, x->in, WEFT_GEMM_LAYOUT_NK, s));
  OK(weft_moe_silu_mul(comm, &x->r, P(x->gu), i, x->in, P(x->act), s));
  OK(weft_grouped_gemm(comm, &x->r, P(x->act), i, P(x->w2), i, (long long)h * i, P(x->y), h, h, i,
                       x->in, x->in, WEFT_GEMM_LAYOUT_NK, s));
  OK(weft_moe_combine(comm, &x->r, P(x->y), P(x->weights), WEFT_DTYPE_FP32, h, x->in, P(out), s));
}

/* which 0: unfused; 1: fused */
static void run_call(bench_t *b, void *ctx, int which) {
  (void)b;
  layer_ctx_t *x = ctx;
  layer(x, which, which ? x->out : x->out_unfused);
}

int main_moe_layer(int argc, char **argv) {
  bench_moe_opts_t o;
  bench_moe_options(&o, "moe_layer", argc, argv);
  if (!o.nshapes) {
    /* TileLink, Table 4 (S, H, I, E, topk); Mixtral-8x7B, Qwen3-30B-A3B, DeepSeek-V3 at 4096 */
    static const int defaults[][5] = {
        {8192, 2048, 1536, 8, 2},  {8192, 2048, 1536, 32, 2}, {8192, 2048, 1536, 32, 5},
        {8192, 4096, 2048, 8, 2},  {8192, 4096, 2048, 32, 2}, {8192, 4096, 2048, 32, 5},
        {4096, 4096, 14336, 8, 2}, {4096, 2048, 768, 128, 8}, {4096, 7168, 2048, 256, 8}};
    for (size_t i = 0; i < sizeof defaults / sizeof defaults[0]; i++)
      memcpy(o.shapes[o.nshapes++], defaults[i], sizeof defaults[i]);
  }
  if (o.dry) { /* the shapes and their routings, no GPU (as torch_moe_layer.py's) */
    bench_moe_dry_run("", o.shapes, o.nshapes, o.zipf, 1);
    return 0;
  }
  bench_t b;
  memset(&b, 0, sizeof b);
  b.opt.iters = o.iters, b.opt.warmup = o.warmup, b.opt.graph = o.graph, b.opt.json = o.json;
  b.opt.dtype = o.dtype;
  b.opt.check = 1;
  bench_init(&b, "moe_layer");
  weft_kernel_t *k_fill, *k_diff;
  weft_module_t *mod = bench_data_load(&b, &k_fill, &k_diff);
  layer_ctx_t x;
  memset(&x, 0, sizeof x);
  x.b = &b;
  x.in = strcmp(o.dtype, "fp16") ? WEFT_DTYPE_BF16 : WEFT_DTYPE_FP16;
  x.tile = 128;
  int fp16 = x.in == WEFT_DTYPE_FP16;
  CUdeviceptr acc;
  CU(cuMemAlloc(&acc, 3 * sizeof(double)));
  if (b.rank == 0) {
    printf("# %s, W1 [E, 2I, H] and W2 [E, H, I], %s routing, weights fp32; times in us per layer "
           "(median of %d samples of %d calls), routing included; TF: useful TFLOP/s; fused/unfused "
           "= unfused time / fused time; err: fused against unfused\n",
           o.dtype, o.zipf ? "Zipf" : "uniform", o.iters, BENCH_BATCH);
    printf("#%6s %6s %6s %4s %4s %11s %9s %9s %9s %8s %9s\n", "T", "H", "I", "E", "topk",
           "unfused_us", "fused_us", "unf_TF", "fused_TF", "ratio", "err");
  }
  for (int si = 0; si < o.nshapes; si++) {
    const int *sh = o.shapes[si];
    x.tokens = sh[0], x.hidden = sh[1], x.inter = sh[2], x.experts = sh[3], x.topk = sh[4];
    long long max_rows, entries = (long long)x.tokens * x.topk;
    OK(weft_moe_routing_size(x.tokens, x.topk, x.experts, x.tile, &x.ws_bytes, &max_rows));
    size_t h = (size_t)x.hidden, i = (size_t)x.inter, t = (size_t)x.tokens, e = (size_t)x.experts;
    CU(cuMemAlloc(&x.ids, (size_t)entries * 4));
    CU(cuMemAlloc(&x.weights, (size_t)entries * 4));
    CU(cuMemAlloc(&x.ws, x.ws_bytes));
    CU(cuMemAlloc(&x.x, t * h * 2));
    CU(cuMemAlloc(&x.w1, e * 2 * i * h * 2));
    CU(cuMemAlloc(&x.w2, e * h * i * 2));
    CU(cuMemAlloc(&x.a, (size_t)max_rows * h * 2));
    CU(cuMemAlloc(&x.gu, (size_t)max_rows * 2 * i * 2));
    CU(cuMemAlloc(&x.act, (size_t)max_rows * i * 2));
    CU(cuMemAlloc(&x.y, (size_t)max_rows * h * 2));
    CU(cuMemAlloc(&x.out, t * h * 2));
    CU(cuMemAlloc(&x.out_unfused, t * h * 2));
    int *ids = bench_calloc((size_t)entries, sizeof(int));
    float *w = bench_calloc((size_t)entries, sizeof(float));
    bench_moe_ids(x.tokens, x.topk, x.experts, o.zipf, BENCH_MOE_SEED + (unsigned long long)si,
                  ids);
    bench_moe_weights(entries, si, w);
    CU(cuMemcpyHtoD(x.ids, ids, (size_t)entries * 4));
    CU(cuMemcpyHtoD(x.weights, w, (size_t)entries * 4));
    /* x and both weight sets uniform in [-1, 1) */
    weft_launch_config_t lc = WEFT_LAUNCH_CONFIG_INIT;
    lc.grid[0] = 1024, lc.block[0] = 256;
    unsigned long long nx = t * h, n1 = e * 2 * i * h, n2 = e * h * i;
    unsigned long long sx = 0x1234ull * (si + 1), s1 = 0x5678ull * (si + 1), s2 = 0x9abcull * (si + 1);
    void *fx[] = {&x.x, &nx, &fp16, &sx}, *f1[] = {&x.w1, &n1, &fp16, &s1};
    void *f2[] = {&x.w2, &n2, &fp16, &s2};
    OK(weft_kernel_launch(k_fill, &lc, fx, b.stream));
    OK(weft_kernel_launch(k_fill, &lc, f1, b.stream));
    OK(weft_kernel_launch(k_fill, &lc, f2, b.stream));
    /* the check: fused against unfused, both outputs poisoned first */
    CU(cuMemsetD8Async(x.out, 0xff, t * h * 2, b.stream));
    CU(cuMemsetD8Async(x.out_unfused, 0xff, t * h * 2, b.stream));
    run_call(&b, &x, 0);
    run_call(&b, &x, 1);
    CU(cuMemsetD8Async(acc, 0, 3 * sizeof(double), b.stream));
    size_t nout = t * h;
    void *da[] = {&x.out, &x.out_unfused, &nout, &fp16, &acc};
    OK(weft_kernel_launch(k_diff, &lc, da, b.stream));
    OK(weft_stream_synchronize(b.comm, b.stream));
    double hd[3];
    CU(cuMemcpyDtoH(hd, acc, sizeof hd));
    double err = sqrt(hd[0] / (hd[1] > 0 ? hd[1] : 1));
    int wrong = hd[2] > 0 || !(err <= 1e-2);
    b.wrong += wrong;

    double us[2] = {0};
    bench_time_runs(&b, 2, run_call, &x, 0, us);
    double flop = 6.0 * (double)entries * x.hidden * x.inter;
    if (b.rank == 0) {
      printf(" %6d %6d %6d %4d %4d %11.1f %9.1f %9.1f %9.1f %7.3fx %9.2e%s\n", x.tokens, x.hidden,
             x.inter, x.experts, x.topk, us[0], us[1], flop / us[0] * 1e-6, flop / us[1] * 1e-6,
             us[0] / us[1], err, wrong ? " WRONG" : "");
      fflush(stdout);
    }
    char name[96];
    snprintf(name, sizeof name, "%dx%dx%dx%dx%d", x.tokens, x.hidden, x.inter, x.experts, x.topk);
    const char *keys[] = {"T", "H", "I", "E", "topk", "weft_unfused_us", "weft_us", "err"};
    double vals[] = {x.tokens, x.hidden, x.inter, x.experts, x.topk, us[0], us[1], err};
    bench_json_row(&b, "moe_layer", name, 8, keys, vals);
    CUdeviceptr bufs[] = {x.ids, x.weights, x.ws, x.x,   x.w1,  x.w2,
                          x.a,   x.gu,      x.act, x.y, x.out, x.out_unfused};
    for (size_t q = 0; q < sizeof bufs / sizeof bufs[0]; q++) CU(cuMemFree(bufs[q]));
    free(ids), free(w);
  }
  CU(cuMemFree(acc));
  OK(weft_module_unload(mod));
  bench_finish(&b);
  return 0;
}
