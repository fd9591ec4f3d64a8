/*
 * test_grouped_gemm.c — weft_grouped_gemm over weft_moe_route's plans on one GPU, against a
 * float64 reference computed from the tokens and the router's ids (not from the plan): for
 * uniform, skewed, all-to-one-expert and mostly-empty routings, tokens that are no multiple of
 * the tile, 64- and 128-row plan tiles, widths that are no multiple of the GEMM's tiles, [n, k]
 * and [k, n] experts, bf16 and fp16 in, bf16 and fp32 out: every row in use within a normalised
 * error of 1e-2 (bf16 out; 1e-4 fp32), padding rows zero, C's rows past the plan's and its
 * columns past n as poisoned; then the routing, gather and GEMM captured in one CUDA graph and
 * replayed on new ids. The same for the fused forms: weft_grouped_gemm_silu_mul (straight from
 * the tokens, silu(gate) * up of B's two halves) and weft_grouped_gemm_combine (each row scaled by its routing weight and
 * added into its token's row of out, whose columns past n stay poisoned), weights in fp32, bf16
 * and fp16. A whole MoE layer, from the unfused steps (the gate-and-up grouped GEMM,
 * weft_moe_silu_mul, the down grouped GEMM, weft_moe_combine) and from the two fused GEMMs (no
 * gather),
 * against a float64 reference from the tokens, ids, router weights and both weight sets; and an
 * invalid expert id, after which the GEMM writes nothing.
 */
// weft-test: ranks=1 timeout=600
#include "gpu_test.h"

#include "gemm_test.h"
#include "moe_test.h"

/* epi: 0 weft_grouped_gemm, 1 weft_grouped_gemm_silu_mul (B's n columns: gate and up halves),
 * 2 weft_grouped_gemm_combine (routing weights of dtype wdtype) */
typedef struct grouped_case {
  int tokens, topk, experts, tile, kind, n, k, kmajor, fp16, out32, graph, epi;
  weft_dtype_t wdtype;
} grouped_case_t;

static const char *kinds[] = {"uniform", "skewed", "one expert", "three experts"};
static const char *epis[] = {"", ", silu_mul", ", combine"};

/* n routing weights drawn in (0, 1], as wdtype at dev and as the floats they are at host */
static void draw_weights(unsigned long long *seed, long long n, weft_dtype_t wdtype, float *host,
                         CUdeviceptr dev) {
  unsigned short *h16 = malloc((size_t)(n ? n : 1) * 2);
  if (!h16) exit(1);
  for (long long i = 0; i < n; i++) {
    float f = (float)(1 + test_rand(seed) % 1000) / 1000.f;
    if (wdtype == WEFT_DTYPE_BF16) { /* rounded to bf16 by truncation: the value it holds */
      uint32_t u;
      memcpy(&u, &f, 4);
      h16[i] = (unsigned short)(u >> 16), u &= 0xffff0000u;
      memcpy(&f, &u, 4);
    } else if (wdtype == WEFT_DTYPE_FP16) { /* (0, 1]: normal halves, 10 mantissa bits */
      int e;
      float m = frexpf(f, &e); /* f = m 2^e, m in [0.5, 1) */
      int mant = (int)(m * 2048.f);  /* 11 bits with the implicit one, truncated */
      f = ldexpf((float)mant / 2048.f, e);
      h16[i] = (unsigned short)(((e - 1 + 15) << 10) | (mant & 0x3ff));
    }
    host[i] = f;
  }
  if (n) {
    if (wdtype == WEFT_DTYPE_FP32)
      CU(cuMemcpyHtoD(dev, host, (size_t)n * 4));
    else
      CU(cuMemcpyHtoD(dev, h16, (size_t)n * 2));
  }
  free(h16);
}

static int draw_expert(const grouped_case_t *c, unsigned long long *seed, int j) {
  unsigned long long r = test_rand(seed);
  switch (c->kind) {
  case 0: return (int)(r % (unsigned)c->experts);
  case 1: return (int)((r % (unsigned)c->experts) * (test_rand(seed) % 1000) / 1000);
  case 2: return (c->experts - 1 + j) % c->experts;
  default: return (int)(r % (unsigned)(c->experts < 3 ? c->experts : 3));
  }
}

static void draw_ids(const grouped_case_t *c, unsigned long long *seed, int *ids) {
  for (int t = 0; t < c->tokens; t++)
    for (int j = 0; j < c->topk; j++) {
      int e = draw_expert(c, seed, j);
      for (int q = 0; q < j; q++) /* a token's slots choose distinct experts */
        if (ids[t * c->topk + q] == e) e = (e + 1) % c->experts, q = -1;
      ids[t * c->topk + j] = e;
    }
}

static int run_case(weft_comm_t *comm, weft_kernel_t *k_fill, weft_kernel_t *const k_ref[3],
                    weft_kernel_t *k_cmp, const grouped_case_t *c, unsigned long long *seed) {
  weft_dtype_t in = c->fp16 ? WEFT_DTYPE_FP16 : WEFT_DTYPE_BF16;
  weft_dtype_t out = c->out32 ? WEFT_DTYPE_FP32 : in;
  static const char *wnames[] = {"", "fp16", "bf16", "fp32"};
  snprintf(test_context, sizeof test_context,
           "%d tokens x top-%d of %d experts (%s), tile %d, n %d k %d, %s B, %s -> %s%s%s%s%s",
           c->tokens, c->topk, c->experts, kinds[c->kind], c->tile, c->n, c->k,
           c->kmajor ? "[n, k]" : "[k, n]", c->fp16 ? "fp16" : "bf16",
           c->out32 ? "fp32" : c->fp16 ? "fp16" : "bf16", epis[c->epi],
           c->epi == 2 ? " with weights in " : "", c->epi == 2 ? wnames[c->wdtype] : "",
           c->graph ? ", graph" : "");
  int before = test_failures;
  long long entries = (long long)c->tokens * c->topk, max_rows;
  size_t ws_bytes;
  OK(weft_moe_routing_size(c->tokens, c->topk, c->experts, c->tile, &ws_bytes, &max_rows));
  /* C: the plan's rows of n columns (of n / 2 for the gated form), or the tokens' rows */
  int cn = c->epi == 1 ? c->n / 2 : c->n;
  long long crows = c->epi == 2 ? c->tokens : max_rows;
  int ldc = cn + 8, ldb = c->kmajor ? c->k : c->n + 8; /* padded strides */
  long long b_stride = (long long)(c->kmajor ? c->n : c->k) * ldb + 64;
  size_t osz = c->out32 ? 4 : 2;
  CUdeviceptr d_ids, d_ws, d_x, d_a, d_b, d_c, d_ref, d_w, d_wf;
  CU(cuMemAlloc(&d_ids, (size_t)(entries ? entries : 1) * 4));
  CU(cuMemAlloc(&d_w, (size_t)(entries ? entries : 1) * 4));  /* the weights, as wdtype */
  CU(cuMemAlloc(&d_wf, (size_t)(entries ? entries : 1) * 4)); /* and as floats */
  CU(cuMemAlloc(&d_ws, ws_bytes));
  CU(cuMemAlloc(&d_x, (size_t)(c->tokens ? c->tokens : 1) * c->k * 2));
  CU(cuMemAlloc(&d_a, (size_t)(max_rows ? max_rows : 1) * c->k * 2));
  CU(cuMemAlloc(&d_b, (size_t)b_stride * c->experts * 2));
  CU(cuMemAlloc(&d_c, (size_t)(crows ? crows : 1) * ldc * osz));
  CU(cuMemAlloc(&d_ref, (size_t)(crows ? crows : 1) * cn * 8));
  int *ids = malloc((size_t)(entries ? entries : 1) * sizeof(int));
  float *wts = malloc((size_t)(entries ? entries : 1) * sizeof(float));
  unsigned char *hc = malloc((size_t)(crows ? crows : 1) * ldc * osz);
  if (!ids || !wts || !hc) {
    fprintf(stderr, "host allocation failed\n");
    exit(1);
  }
  CUstream s;
  CU(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
  CUgraphExec exec = NULL;
  weft_moe_routing_t r; /* the graph's replays keep the captured plan's arrays */
  weft_gemm_layout_t layout = c->kmajor ? WEFT_GEMM_LAYOUT_NK : WEFT_GEMM_LAYOUT_KN;
  for (int rep = 0; rep < (c->graph ? 2 : 1); rep++) {
    draw_ids(c, seed, ids);
    if (entries) CU(cuMemcpyHtoDAsync(d_ids, ids, (size_t)entries * 4, s));
    /* fresh inputs: x, every expert's matrix (with its padding), the weights; C poisoned */
    unsigned long long nx = (unsigned long long)c->tokens * c->k;
    unsigned long long nb = (unsigned long long)b_stride * c->experts;
    unsigned long long sx = test_rand(seed), sb = test_rand(seed);
    int f16 = c->fp16;
    void *fx[] = {&d_x, &nx, &f16, &sx}, *fb[] = {&d_b, &nb, &f16, &sb};
    gemm_test_launch(k_fill, fx, s);
    gemm_test_launch(k_fill, fb, s);
    if (c->epi == 2) draw_weights(seed, entries, c->wdtype, wts, d_w);
    if (crows) CU(cuMemsetD8Async(d_c, 0xff, (size_t)crows * ldc * osz, s));
    if (!exec) {
      CUgraph g = NULL;
      if (c->graph) CU(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
      OK(weft_moe_route(comm, (const int32_t *)(uintptr_t)d_ids, c->tokens, c->topk, c->experts,
                        c->tile, (void *)(uintptr_t)d_ws, ws_bytes, &r, (weft_stream_t)s));
      OK(weft_moe_gather(comm, &r, (const void *)(uintptr_t)d_x, c->k, in,
                         (void *)(uintptr_t)d_a, (weft_stream_t)s));
      const void *a = (const void *)(uintptr_t)d_a, *b = (const void *)(uintptr_t)d_b;
      void *cc = (void *)(uintptr_t)d_c;
      if (c->epi == 0)
        OK(weft_grouped_gemm(comm, &r, a, c->k, b, ldb, b_stride, cc, ldc, c->n, c->k, in, out,
                             layout, (weft_stream_t)s));
      else if (c->epi == 1) /* (from the tokens: its loads gather them) */
        OK(weft_grouped_gemm_silu_mul(comm, &r, (const void *)(uintptr_t)d_x, c->k, b, ldb,
                                      b_stride, cc, ldc, cn, c->k, in, out, layout,
                                      (weft_stream_t)s));
      else
        OK(weft_grouped_gemm_combine(comm, &r, a, c->k, b, ldb, b_stride,
                                     (const void *)(uintptr_t)d_w, c->wdtype, cc, ldc, c->n, c->k,
                                     in, out, layout, (weft_stream_t)s));
      if (c->graph) {
        CU(cuStreamEndCapture(s, &g));
        CU(cuGraphInstantiate(&exec, g, 0));
        CU(cuGraphDestroy(g));
      }
    }
    if (exec) CU(cuGraphLaunch(exec, s));
    OK(weft_stream_synchronize(comm, (weft_stream_t)s));
    int tiles;
    CU(cuMemcpyDtoH(&tiles, (CUdeviceptr)(uintptr_t)r.tiles, sizeof tiles));
    int rows = tiles * c->tile;
    int n = c->n, k = c->k, topk = c->topk, kmaj = c->kmajor, tokens = c->tokens;
    long long ldb_l = ldb;
    CUdeviceptr d_re = (CUdeviceptr)(uintptr_t)r.row_entry;
    /* the reference of C's rows: the plan's rows in use, or every token */
    int ref_rows = c->epi == 2 ? tokens : rows;
    if (c->epi == 2 && entries) CU(cuMemcpyHtoD(d_wf, wts, (size_t)entries * 4)); /* as floats */
    void *fr0[] = {&d_ref, &d_x, &d_b, &d_re, &d_ids, &rows, &n,
                   &k,     &topk, &ldb_l, &b_stride, &kmaj, &f16};
    void *fr1[] = {&d_ref, &d_x, &d_b, &d_re, &d_ids, &rows, &cn,
                   &k,     &topk, &ldb_l, &b_stride, &kmaj, &f16};
    void *fr2[] = {&d_ref, &d_x, &d_b, &d_ids, &d_wf, &tokens, &n,
                   &k,     &topk, &ldb_l, &b_stride, &kmaj, &f16};
    void **fr[] = {fr0, fr1, fr2};
    if (ref_rows) gemm_test_launch(k_ref[c->epi], fr[c->epi], s);
    unsigned long long bad[2] = {0, 0};
    double err = ref_rows ? gemm_test_compare(comm, k_cmp, s, d_c, d_ref, ref_rows, cn, ldc, out,
                                              bad)
                          : 0;
    double tol = c->out32 ? 1e-4 : 1e-2;
    EXPECT(err <= tol, "normalised error %.3g over the %d rows (tolerance %g)", err, ref_rows,
           tol);
    EXPECT(!bad[0], "%llu non-finite elements", bad[0]);
    EXPECT(!bad[1], "%llu elements of C's columns past its %d changed", bad[1], cn);
    /* the rows past the plan's: untouched */
    if (c->epi != 2 && max_rows > rows) {
      CU(cuMemcpyDtoH(hc, d_c + (size_t)rows * ldc * osz, (size_t)(max_rows - rows) * ldc * osz));
      size_t changed = 0;
      for (size_t i = 0; i < (size_t)(max_rows - rows) * ldc * osz; i++) changed += hc[i] != 0xff;
      EXPECT(!changed, "%zu bytes of the rows past the plan's %d written", changed, rows);
    }
  }
  if (exec) CU(cuGraphExecDestroy(exec));
  CU(cuStreamDestroy(s));
  CUdeviceptr all[] = {d_ids, d_ws, d_x, d_a, d_b, d_c, d_ref, d_w, d_wf};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) CU(cuMemFree(all[i]));
  free(ids), free(wts), free(hc);
  printf("%s %s\n", test_failures == before ? "ok  " : "FAIL", test_context);
  test_context[0] = 0;
  return test_failures - before;
}

/* One MoE layer on this GPU from weft's unfused steps (route, gather, the gate-and-up grouped
 * GEMM, the gated activation, the down grouped GEMM, the top-k combine) or, fused, from route,
 * gather and the two fused grouped GEMMs, bf16, against a float64 reference from the tokens, ids,
 * router weights and both weight sets; out poisoned first. */
static void layer_case(weft_comm_t *comm, weft_kernel_t *k_fill, weft_kernel_t *k_act,
                       weft_kernel_t *k_out, weft_kernel_t *k_cmp, int tokens, int topk,
                       int experts, int hidden, int inter, int fused, unsigned long long *seed) {
  snprintf(test_context, sizeof test_context, "layer%s: %d tokens x top-%d of %d experts, hidden "
           "%d, inter %d", fused ? " (fused)" : "", tokens, topk, experts, hidden, inter);
  int before = test_failures, tile = 128, fp16 = 0;
  size_t ws_bytes;
  long long max_rows, entries = (long long)tokens * topk;
  OK(weft_moe_routing_size(tokens, topk, experts, tile, &ws_bytes, &max_rows));
  CUdeviceptr d_ids, d_w, d_ws, d_x, d_w1, d_w2, d_a, d_gu, d_act, d_y, d_out, d_racc, d_ref;
  CU(cuMemAlloc(&d_ids, (size_t)entries * 4));
  CU(cuMemAlloc(&d_w, (size_t)entries * 4));
  CU(cuMemAlloc(&d_ws, ws_bytes));
  CU(cuMemAlloc(&d_x, (size_t)tokens * hidden * 2));
  CU(cuMemAlloc(&d_w1, (size_t)experts * 2 * inter * hidden * 2));
  CU(cuMemAlloc(&d_w2, (size_t)experts * hidden * inter * 2));
  CU(cuMemAlloc(&d_a, (size_t)max_rows * hidden * 2));
  CU(cuMemAlloc(&d_gu, (size_t)max_rows * 2 * inter * 2));
  CU(cuMemAlloc(&d_act, (size_t)max_rows * inter * 2));
  CU(cuMemAlloc(&d_y, (size_t)max_rows * hidden * 2));
  CU(cuMemAlloc(&d_out, (size_t)tokens * hidden * 2));
  CU(cuMemAlloc(&d_racc, (size_t)entries * inter * 8));
  CU(cuMemAlloc(&d_ref, (size_t)tokens * hidden * 8));
  int *ids = malloc((size_t)entries * sizeof(int));
  float *wts = malloc((size_t)entries * sizeof(float));
  if (!ids || !wts) exit(1);
  grouped_case_t c = {tokens, topk, experts, tile, 0, 0, 0, 1, 0, 0, 0, 0, WEFT_DTYPE_FP32};
  draw_ids(&c, seed, ids);
  for (long long i = 0; i < entries; i++) wts[i] = (float)(test_rand(seed) % 1000) / 1000.f;
  CU(cuMemcpyHtoD(d_ids, ids, (size_t)entries * 4));
  CU(cuMemcpyHtoD(d_w, wts, (size_t)entries * 4));
  unsigned long long nx = (unsigned long long)tokens * hidden;
  unsigned long long n1 = (unsigned long long)experts * 2 * inter * hidden;
  unsigned long long n2 = (unsigned long long)experts * hidden * inter;
  unsigned long long sx = test_rand(seed), s1 = test_rand(seed), s2 = test_rand(seed);
  void *fx[] = {&d_x, &nx, &fp16, &sx}, *f1[] = {&d_w1, &n1, &fp16, &s1};
  void *f2[] = {&d_w2, &n2, &fp16, &s2};
  gemm_test_launch(k_fill, fx, NULL);
  gemm_test_launch(k_fill, f1, NULL);
  gemm_test_launch(k_fill, f2, NULL);
  CU(cuMemsetD8(d_out, 0xff, (size_t)tokens * hidden * 2));
  weft_moe_routing_t r;
  OK(weft_moe_route(comm, (const int32_t *)(uintptr_t)d_ids, tokens, topk, experts, tile,
                    (void *)(uintptr_t)d_ws, ws_bytes, &r, NULL));
  OK(weft_moe_gather(comm, &r, (const void *)(uintptr_t)d_x, hidden, WEFT_DTYPE_BF16,
                     (void *)(uintptr_t)d_a, NULL));
  const void *a = (const void *)(uintptr_t)d_a, *w1 = (const void *)(uintptr_t)d_w1;
  const void *w2 = (const void *)(uintptr_t)d_w2, *act = (const void *)(uintptr_t)d_act;
  weft_dtype_t bf = WEFT_DTYPE_BF16;
  if (fused) {
    OK(weft_grouped_gemm_silu_mul(comm, &r, (const void *)(uintptr_t)d_x, hidden, w1, hidden,
                                  2LL * inter * hidden, (void *)(uintptr_t)d_act, inter, inter,
                                  hidden, bf, bf, WEFT_GEMM_LAYOUT_NK, NULL));
    OK(weft_grouped_gemm_combine(comm, &r, act, inter, w2, inter, (long long)hidden * inter,
                                 (const void *)(uintptr_t)d_w, WEFT_DTYPE_FP32,
                                 (void *)(uintptr_t)d_out, hidden, hidden, inter, bf, bf,
                                 WEFT_GEMM_LAYOUT_NK, NULL));
  } else {
    OK(weft_grouped_gemm(comm, &r, a, hidden, w1, hidden, 2LL * inter * hidden,
                         (void *)(uintptr_t)d_gu, 2 * inter, 2 * inter, hidden, bf, bf,
                         WEFT_GEMM_LAYOUT_NK, NULL));
    OK(weft_moe_silu_mul(comm, &r, (const void *)(uintptr_t)d_gu, inter, bf,
                         (void *)(uintptr_t)d_act, NULL));
    OK(weft_grouped_gemm(comm, &r, act, inter, w2, inter, (long long)hidden * inter,
                         (void *)(uintptr_t)d_y, hidden, hidden, inter, bf, bf,
                         WEFT_GEMM_LAYOUT_NK, NULL));
    OK(weft_moe_combine(comm, &r, (const void *)(uintptr_t)d_y, (const void *)(uintptr_t)d_w,
                        WEFT_DTYPE_FP32, hidden, bf, (void *)(uintptr_t)d_out, NULL));
  }
  int ent = (int)entries;
  void *fa[] = {&d_racc, &d_x, &d_w1, &d_ids, &ent, &topk, &inter, &hidden};
  gemm_test_launch(k_act, fa, NULL);
  void *fo[] = {&d_ref, &d_racc, &d_w2, &d_ids, &d_w, &tokens, &topk, &hidden, &inter};
  gemm_test_launch(k_out, fo, NULL);
  unsigned long long bad[2] = {0, 0};
  double err = gemm_test_compare(comm, k_cmp, NULL, d_out, d_ref, tokens, hidden, hidden,
                                 WEFT_DTYPE_BF16, bad);
  EXPECT(err <= 1e-2, "normalised error %.3g of the layer's output", err);
  EXPECT(!bad[0], "%llu non-finite elements", bad[0]);
  CUdeviceptr all[] = {d_ids, d_w,  d_ws, d_x,   d_w1,   d_w2,  d_a,
                       d_gu,  d_act, d_y, d_out, d_racc, d_ref};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) CU(cuMemFree(all[i]));
  free(ids), free(wts);
  printf("%s %s\n", test_failures == before ? "ok  " : "FAIL", test_context);
  test_context[0] = 0;
}

/* An invalid expert id empties the plan: the grouped GEMM after it writes nothing. */
static void invalid_id(weft_comm_t *comm) {
  int tokens = 200, topk = 2, experts = 8, tile = 128, n = 256, k = 128;
  size_t ws;
  long long max_rows;
  OK(weft_moe_routing_size(tokens, topk, experts, tile, &ws, &max_rows));
  int ids[400];
  for (int i = 0; i < 400; i++) ids[i] = i % experts;
  ids[33] = -1;
  CUdeviceptr d_ids, d_ws, d_x, d_a, d_b, d_c;
  CU(cuMemAlloc(&d_ids, sizeof ids));
  CU(cuMemAlloc(&d_ws, ws));
  CU(cuMemAlloc(&d_x, (size_t)tokens * k * 2));
  CU(cuMemAlloc(&d_a, (size_t)max_rows * k * 2));
  CU(cuMemAlloc(&d_b, (size_t)experts * n * k * 2));
  CU(cuMemAlloc(&d_c, (size_t)max_rows * n * 2));
  CU(cuMemcpyHtoD(d_ids, ids, sizeof ids));
  CU(cuMemsetD8(d_x, 0x3c, (size_t)tokens * k * 2));
  CU(cuMemsetD8(d_b, 0x3c, (size_t)experts * n * k * 2));
  CU(cuMemsetD8(d_c, 0xff, (size_t)max_rows * n * 2));
  weft_moe_routing_t r;
  OK(weft_moe_route(comm, (const int32_t *)(uintptr_t)d_ids, tokens, topk, experts, tile,
                    (void *)(uintptr_t)d_ws, ws, &r, NULL));
  OK(weft_moe_gather(comm, &r, (const void *)(uintptr_t)d_x, k, WEFT_DTYPE_BF16,
                     (void *)(uintptr_t)d_a, NULL));
  OK(weft_grouped_gemm(comm, &r, (const void *)(uintptr_t)d_a, k, (const void *)(uintptr_t)d_b, k,
                       (long long)n * k, (void *)(uintptr_t)d_c, n, n, k, WEFT_DTYPE_BF16,
                       WEFT_DTYPE_BF16, WEFT_GEMM_LAYOUT_NK, NULL));
  EXPECT_ERROR(weft_stream_synchronize(comm, NULL), WEFT_STATUS_INVALID_ARGUMENT, "entry 33");
  unsigned short *hc = malloc((size_t)max_rows * n * 2);
  if (!hc) exit(1);
  CU(cuMemcpyDtoH(hc, d_c, (size_t)max_rows * n * 2));
  size_t written = 0;
  for (long long i = 0; i < max_rows * n; i++) written += hc[i] != 0xffff;
  EXPECT(!written, "after an invalid id the grouped GEMM wrote %zu elements", written);
  free(hc);
  CUdeviceptr all[] = {d_ids, d_ws, d_x, d_a, d_b, d_c};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) CU(cuMemFree(all[i]));
}

/* Bad arguments to the MoE calls: each returns INVALID_ARGUMENT naming the fault and writes
 * nothing (C and out keep their poison, the plan's arrays their contents). */
static void bad_inputs(weft_comm_t *comm) {
  int tokens = 64, topk = 2, experts = 4, tile = 128, n = 256, k = 128, inter = n / 2;
  size_t ws;
  long long max_rows;
  OK(weft_moe_routing_size(tokens, topk, experts, tile, &ws, &max_rows));
  int ids[128];
  for (int i = 0; i < tokens * topk; i++) ids[i] = (i / topk + i % topk) % experts;
  CUdeviceptr d_ids, d_ws, d_x, d_a, d_b, d_c, d_w;
  size_t c_bytes = (size_t)max_rows * n * 4;
  CU(cuMemAlloc(&d_ids, sizeof ids));
  CU(cuMemAlloc(&d_ws, ws + 256));
  CU(cuMemAlloc(&d_x, (size_t)tokens * k * 2));
  CU(cuMemAlloc(&d_a, (size_t)max_rows * k * 2));
  CU(cuMemAlloc(&d_b, (size_t)experts * 2 * n * k * 2));
  CU(cuMemAlloc(&d_c, c_bytes));
  CU(cuMemAlloc(&d_w, (size_t)tokens * topk * 4));
  CU(cuMemcpyHtoD(d_ids, ids, sizeof ids));
  CU(cuMemsetD8(d_x, 0x3c, (size_t)tokens * k * 2));
  CU(cuMemsetD8(d_b, 0x3c, (size_t)experts * 2 * n * k * 2));
  CU(cuMemsetD8(d_w, 0x3c, (size_t)tokens * topk * 4));
  CU(cuMemsetD8(d_c, 0xff, c_bytes));
  weft_moe_routing_t r;
  const int32_t *pid = (const int32_t *)(uintptr_t)d_ids;
  void *pws = (void *)(uintptr_t)d_ws;
  weft_dtype_t bf = WEFT_DTYPE_BF16;
  weft_gemm_layout_t nk = WEFT_GEMM_LAYOUT_NK;
  EXPECT_ERROR(weft_moe_route(comm, pid, tokens, 5, experts, tile, pws, ws, &r, NULL),
               WEFT_STATUS_INVALID_ARGUMENT, "topk 5 exceeds");
  EXPECT_ERROR(weft_moe_route(comm, pid, tokens, topk, experts, 100, pws, ws, &r, NULL),
               WEFT_STATUS_INVALID_ARGUMENT, "tile_rows 100");
  EXPECT_ERROR(weft_moe_route(comm, pid, tokens, topk, experts, tile, pws, ws - 1, &r, NULL),
               WEFT_STATUS_INVALID_ARGUMENT, "workspace");
  EXPECT_ERROR(weft_moe_route(comm, pid, tokens, topk, experts, tile, (char *)pws + 8, ws, &r,
                              NULL),
               WEFT_STATUS_INVALID_ARGUMENT, "aligned");
  OK(weft_moe_route(comm, pid, tokens, topk, experts, tile, pws, ws, &r, NULL));
  OK(weft_moe_gather(comm, &r, (const void *)(uintptr_t)d_x, k, bf, (void *)(uintptr_t)d_a, NULL));
  OK(weft_stream_synchronize(comm, NULL));
  const void *a = (const void *)(uintptr_t)d_a, *b = (const void *)(uintptr_t)d_b;
  const void *w = (const void *)(uintptr_t)d_w;
  void *c = (void *)(uintptr_t)d_c;
  long long bs = 2LL * n * k; /* room for the gated form's 2n rows too */
  EXPECT_ERROR(weft_moe_gather(comm, &r, (const char *)(uintptr_t)d_x + 2, k, bf,
                               (void *)(uintptr_t)d_a, NULL),
               WEFT_STATUS_INVALID_ARGUMENT, "aligned");
  EXPECT_ERROR(weft_grouped_gemm(comm, &r, a, k, b, k, bs, c, n, n, 4, bf, bf, nk, NULL),
               WEFT_STATUS_INVALID_ARGUMENT, "k 4");
  EXPECT_ERROR(weft_grouped_gemm(comm, &r, a, k, b, k, 100, c, n, n, k, bf, bf, nk, NULL),
               WEFT_STATUS_INVALID_ARGUMENT, "b_stride 100");
  EXPECT_ERROR(weft_grouped_gemm(comm, &r, (const char *)a + 2, k, b, k, bs, c, n, n, k, bf, bf,
                                 nk, NULL),
               WEFT_STATUS_INVALID_ARGUMENT, "aligned");
  EXPECT_ERROR(weft_grouped_gemm(comm, &r, a, k, b, k, bs, c, n + 4, n, k, bf, bf, nk, NULL),
               WEFT_STATUS_INVALID_ARGUMENT, "16 bytes");
  EXPECT_ERROR(weft_grouped_gemm(comm, &r, a, k, b, k, bs, c, n, n, k, bf, bf,
                                 (weft_gemm_layout_t)2, NULL),
               WEFT_STATUS_INVALID_ARGUMENT, "layout 2");
  EXPECT_ERROR(weft_grouped_gemm(comm, &r, a, k, b, k, bs, c, n, n, k, WEFT_DTYPE_FP32, bf, nk,
                                 NULL),
               WEFT_STATUS_INVALID_ARGUMENT, "input dtype");
  EXPECT_ERROR(weft_grouped_gemm_silu_mul(comm, &r, a, k, b, k, bs, c, inter - 8, inter, k, bf, bf,
                                          nk, NULL),
               WEFT_STATUS_INVALID_ARGUMENT, "ldc");
  EXPECT_ERROR(weft_grouped_gemm_silu_mul(comm, &r, a, k, b, k, bs, c, inter, -2, k, bf, bf, nk,
                                          NULL),
               WEFT_STATUS_INVALID_ARGUMENT, "inter -2");
  EXPECT_ERROR(weft_grouped_gemm_combine(comm, &r, a, k, b, k, bs, w, WEFT_DTYPE_INT32, c, n, n,
                                         k, bf, bf, nk, NULL),
               WEFT_STATUS_INVALID_ARGUMENT, "weights' dtype");
  EXPECT_ERROR(weft_grouped_gemm_combine(comm, &r, a, k, b, k, bs, NULL, WEFT_DTYPE_FP32, c, n, n,
                                         k, bf, bf, nk, NULL),
               WEFT_STATUS_INVALID_ARGUMENT, "weights is NULL");
  EXPECT_ERROR(weft_grouped_gemm_combine(comm, &r, a, k, b, k, bs, w, WEFT_DTYPE_FP32, c, n, n - 4,
                                         k, bf, bf, nk, NULL),
               WEFT_STATUS_INVALID_ARGUMENT, "multiples of 8");
  weft_moe_routing_t r16 = r;
  r16.tile_rows = 16;
  EXPECT_ERROR(weft_grouped_gemm(comm, &r16, a, k, b, k, bs, c, n, n, k, bf, bf, nk, NULL),
               WEFT_STATUS_INVALID_ARGUMENT, "tile_rows 16");
  OK(weft_stream_synchronize(comm, NULL));
  unsigned char *hc = malloc(c_bytes);
  if (!hc) exit(1);
  CU(cuMemcpyDtoH(hc, d_c, c_bytes));
  size_t written = 0;
  for (size_t i = 0; i < c_bytes; i++) written += hc[i] != 0xff;
  EXPECT(!written, "the refused calls wrote %zu bytes of C", written);
  free(hc);
  CUdeviceptr all[] = {d_ids, d_ws, d_x, d_a, d_b, d_c, d_w};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) CU(cuMemFree(all[i]));
  printf("%s bad arguments refused, nothing written\n", test_failures ? "FAIL" : "ok  ");
}

int main(void) {
  test_precompile(moe_test_src, "moe_test.cu"); /* (gemm_test_src: test_gemm's) */
  weft_comm_t *comm = test_init();
  unsigned long long seed = test_seed(comm);
  weft_module_t *m, *mg;
  OK(weft_module_load(comm, gemm_test_src, "gemm_test.cu", NULL, 0, &m));
  OK(weft_module_load(comm, moe_test_src, "moe_test.cu", NULL, 0, &mg));
  weft_kernel_t *k_fill = test_kernel(m, "fill"), *k_cmp = test_kernel(m, "compare");
  weft_kernel_t *k_ref[3] = {test_kernel(mg, "grouped_reference"),
                             test_kernel(mg, "gated_reference"),
                             test_kernel(mg, "combine_reference")};
  weft_kernel_t *k_act = test_kernel(mg, "layer_act"), *k_lout = test_kernel(mg, "layer_out");
  const weft_dtype_t f32 = WEFT_DTYPE_FP32, b16 = WEFT_DTYPE_BF16, h16 = WEFT_DTYPE_FP16;
  grouped_case_t fixed[] = {
      {1000, 2, 8, 128, 0, 1408, 512, 1, 0, 0, 0, 0, f32},
      {777, 6, 64, 64, 1, 704, 256, 1, 0, 0, 0, 0, f32},
      {300, 4, 16, 128, 2, 512, 1024, 0, 0, 0, 0, 0, f32},
      {1, 1, 4, 64, 0, 256, 128, 1, 1, 1, 0, 0, f32},
      {513, 2, 32, 256, 3, 2048, 256, 0, 1, 0, 0, 0, f32},
      {400, 8, 128, 128, 0, 384, 384, 1, 0, 1, 1, 0, f32},
      {0, 2, 8, 128, 0, 256, 128, 1, 0, 0, 0, 0, f32},
      /* the gated epilogue: widths whose halves are no multiple of the tile's, both layouts */
      {1000, 2, 8, 128, 0, 2816, 512, 1, 0, 0, 0, 1, f32},
      {777, 6, 64, 64, 1, 1408, 256, 1, 0, 0, 0, 1, f32},
      {300, 4, 16, 128, 2, 1024, 1024, 0, 0, 0, 0, 1, f32},
      {513, 2, 32, 256, 3, 3072, 256, 0, 1, 1, 1, 1, f32},
      {0, 2, 8, 128, 0, 512, 128, 1, 0, 0, 0, 1, f32},
      /* the combine epilogue: every weights' dtype, both layouts, all tokens on one expert */
      {1000, 2, 8, 128, 0, 1408, 512, 1, 0, 0, 0, 2, f32},
      {777, 6, 64, 64, 1, 704, 256, 1, 0, 0, 0, 2, b16},
      {300, 4, 16, 128, 2, 512, 1024, 0, 0, 1, 0, 2, h16},
      {513, 2, 32, 256, 3, 2048, 256, 0, 1, 0, 1, 2, b16},
      {0, 2, 8, 128, 0, 256, 128, 1, 0, 0, 0, 2, f32},
  };
  for (size_t i = 0; i < sizeof fixed / sizeof fixed[0]; i++)
    run_case(comm, k_fill, k_ref, k_cmp, &fixed[i], &seed);
  static const int tiles[] = {64, 128, 256};
  static const weft_dtype_t wdtypes[] = {WEFT_DTYPE_FP32, WEFT_DTYPE_BF16, WEFT_DTYPE_FP16};
  for (int i = 0; i < 24; i++) {
    grouped_case_t c;
    c.epi = i % 3;
    c.experts = 1 + (int)(test_rand(&seed) % 160);
    c.topk = 1 + (int)(test_rand(&seed) % (c.experts < 8 ? c.experts : 8));
    c.tokens = (int)(test_rand(&seed) % 1200);
    c.tile = tiles[test_rand(&seed) % 3];
    c.kind = (int)(test_rand(&seed) % 4);
    c.n = (c.epi == 1 ? 16 : 8) * (1 + (int)(test_rand(&seed) % 200)); /* gated: 8 | n / 2 */
    c.k = 8 * (1 + (int)(test_rand(&seed) % 96));
    c.kmajor = (int)(test_rand(&seed) % 2);
    c.fp16 = (int)(test_rand(&seed) % 2);
    c.out32 = (int)(test_rand(&seed) % 3 == 0);
    c.graph = i % 4 == 3;
    c.wdtype = wdtypes[test_rand(&seed) % 3];
    run_case(comm, k_fill, k_ref, k_cmp, &c, &seed);
  }
  for (int fused = 0; fused < 2; fused++) {
    layer_case(comm, k_fill, k_act, k_lout, k_cmp, 300, 2, 8, 256, 512, fused, &seed);
    layer_case(comm, k_fill, k_act, k_lout, k_cmp, 1000, 4, 32, 512, 192, fused, &seed);
  }
  invalid_id(comm);
  bad_inputs(comm);
  weft_module_unload(mg);
  weft_module_unload(m);
  OK(weft_comm_destroy(comm));
  printf("%d checks, %d failed\n%s\n", test_checks, test_failures, test_failures ? "FAILED" : "ok");
  return test_failures ? 1 : 0;
}
