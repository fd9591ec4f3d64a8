/*
 * test_ag_moe.c — weft_ag_moe (AllGather + MoE) at 2, 3 and 4 ranks: each rank's tokens and the
 * router's ids drawn from a seed every rank shares (so every rank knows all of them), the ids
 * gathered by weft_allgather and planned by weft_moe_route, then AllGather + MoE in each form
 * (AUTO, sequential, copy engine: refused with NOT_SUPPORTED where ranks share a GPU) on random
 * shapes (tokens a rank no multiple of the tile, odd counts; uniform, skewed and one-expert
 * routings; 64- to 256-row plan tiles; [n, k] and [k, n] weights; bf16 and fp16; fp32 out):
 * x_gathered bit for bit against every rank's tokens, and every row of act in use against a
 * float64 reference of the gated activation (padding rows zero, rows past the plan and columns
 * past inter as poisoned). Then the same call captured in a CUDA graph and replayed, and 50 calls
 * back to back with random stragglers (host and GPU delays), each bit for bit the first's (the
 * plan is in entry order and the GEMM deterministic). Last, whole tensor-parallel layers:
 * AllGather + MoE, then MoE + ReduceScatter and MoE + AllReduce, and weft_moe_tp (the layer in
 * one call), against a float64 reference.
 */
// weft-test: ranks=2,3,4 timeout=600
#include "gpu_test.h"

#include "gemm_test.h"
#include "moe_test.h"

static unsigned long long shared; /* shapes and routings: the same sequence on every rank */

typedef struct ag_case {
  int m, topk, experts, tile, kind, inter, k, kmajor, fp16, out32;
} ag_case_t;

static const char *kinds[] = {"uniform", "skewed", "one expert"};

/* every rank's ids, [world * m, topk], topk distinct experts a token */
static void draw_ids(const ag_case_t *c, int tokens, int *ids) {
  for (int t = 0; t < tokens; t++)
    for (int j = 0; j < c->topk; j++) {
      unsigned long long r = test_rand(&shared);
      int e = c->kind == 0   ? (int)(r % (unsigned)c->experts)
              : c->kind == 1 ? (int)((r % (unsigned)c->experts) * (test_rand(&shared) % 1000) / 1000)
                             : (c->experts - 1 + j) % c->experts;
      for (int q = 0; q < j; q++)
        if (ids[t * c->topk + q] == e) e = (e + 1) % c->experts, q = -1;
      ids[t * c->topk + j] = e;
    }
}

static void run_case(weft_comm_t *comm, weft_kernel_t *k_fill, weft_kernel_t *k_ref,
                     weft_kernel_t *k_cmp, weft_kernel_t *k_delay, const ag_case_t *c, int repeat) {
  int me = comm->local_rank, world = comm->local_world, tokens = world * c->m;
  weft_dtype_t in = c->fp16 ? WEFT_DTYPE_FP16 : WEFT_DTYPE_BF16;
  weft_dtype_t out = c->out32 ? WEFT_DTYPE_FP32 : in;
  snprintf(test_context, sizeof test_context,
           "[%d] %d tokens a rank x top-%d of %d experts (%s), tile %d, inter %d k %d, %s W1, %s "
           "-> %s", me, c->m, c->topk, c->experts, kinds[c->kind], c->tile, c->inter, c->k,
           c->kmajor ? "[2I, k]" : "[k, 2I]", c->fp16 ? "fp16" : "bf16",
           c->out32 ? "fp32" : c->fp16 ? "fp16" : "bf16");
  int before = test_failures;
  long long entries = (long long)tokens * c->topk, max_rows;
  size_t ws_bytes;
  OK(weft_moe_routing_size(tokens, c->topk, c->experts, c->tile, &ws_bytes, &max_rows));
  int n = 2 * c->inter, ldact = c->inter + 8, ldw = c->kmajor ? c->k : n + 8;
  long long w_stride = (long long)(c->kmajor ? n : c->k) * ldw + 64;
  size_t osz = c->out32 ? 4 : 2, xrow = (size_t)c->k * 2, act_bytes = (size_t)max_rows * ldact * osz;
  int *ids = malloc((size_t)entries * sizeof(int));
  unsigned char *h_act = malloc(act_bytes), *h_first = malloc(act_bytes);
  unsigned char *h_x = malloc((size_t)tokens * xrow), *h_xref = malloc((size_t)tokens * xrow);
  if (!ids || !h_act || !h_first || !h_x || !h_xref) exit(1);
  draw_ids(c, tokens, ids);
  int32_t *ids_all;
  void *x_gathered;
  OK(weft_malloc(comm, (size_t)entries * 4, (void **)&ids_all));
  OK(weft_malloc(comm, (size_t)tokens * xrow, &x_gathered));
  CUdeviceptr d_ids, d_ws, d_x, d_xref, d_w, d_act, d_ref;
  CU(cuMemAlloc(&d_ids, (size_t)c->m * c->topk * 4 + 4));
  CU(cuMemAlloc(&d_ws, ws_bytes));
  CU(cuMemAlloc(&d_x, (size_t)c->m * xrow + 16));
  CU(cuMemAlloc(&d_xref, (size_t)tokens * xrow));
  CU(cuMemAlloc(&d_w, (size_t)w_stride * c->experts * 2));
  CU(cuMemAlloc(&d_act, act_bytes + 16));
  CU(cuMemAlloc(&d_ref, (size_t)(max_rows ? max_rows : 1) * c->inter * 8));
  CUstream s;
  CU(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
  /* every rank's tokens (rank q's from its own seed) and this rank's weights */
  int f16 = c->fp16;
  for (int q = 0; q < world; q++) {
    CUdeviceptr at = d_xref + (CUdeviceptr)((size_t)q * c->m * xrow);
    unsigned long long nx = (unsigned long long)c->m * c->k, sx = test_rand(&shared);
    void *fx[] = {&at, &nx, &f16, &sx};
    if (nx) gemm_test_launch(k_fill, fx, s);
  }
  unsigned long long nw = (unsigned long long)w_stride * c->experts, sw = test_rand(&shared) + me;
  void *fw[] = {&d_w, &nw, &f16, &sw};
  gemm_test_launch(k_fill, fw, s);
  if (c->m) {
    CU(cuMemcpyDtoDAsync(d_x, d_xref + (CUdeviceptr)((size_t)me * c->m * xrow), (size_t)c->m * xrow,
                         s));
    CU(cuMemcpyHtoDAsync(d_ids, ids + (size_t)me * c->m * c->topk, (size_t)c->m * c->topk * 4, s));
  }
  CU(cuStreamSynchronize(s));
  CU(cuMemcpyDtoH(h_xref, d_xref, (size_t)tokens * xrow));
  weft_moe_routing_t r;
  weft_gemm_layout_t layout = c->kmajor ? WEFT_GEMM_LAYOUT_NK : WEFT_GEMM_LAYOUT_KN;
  /* one layer's first half: the ids gathered and planned, then AllGather + MoE */
  weft_status_t last = WEFT_STATUS_SUCCESS;
#define AG_MOE(algo)                                                                            \
  do {                                                                                          \
    OK(weft_allgather(comm, (const void *)(uintptr_t)d_ids, ids_all, (size_t)c->m * c->topk,    \
                      WEFT_DTYPE_INT32, WEFT_ALGO_AUTO, (weft_stream_t)s));                     \
    OK(weft_moe_route(comm, ids_all, tokens, c->topk, c->experts, c->tile,                      \
                      (void *)(uintptr_t)d_ws, ws_bytes, &r, (weft_stream_t)s));                 \
    last = weft_ag_moe(comm, &r, (const void *)(uintptr_t)d_x, x_gathered,                      \
                       (const void *)(uintptr_t)d_w, ldw, w_stride, (void *)(uintptr_t)d_act,   \
                       ldact, c->m, c->inter, c->k, in, out, layout, (algo), (weft_stream_t)s); \
  } while (0)
  static const weft_algo_t algos[] = {WEFT_ALGO_AUTO, WEFT_ALGO_SEQUENTIAL, WEFT_ALGO_COPY_ENGINE};
  static const char *names[] = {"auto", "sequential", "copy engine"};
  int have_first = 0;
  for (int a = 0; a < 3; a++) {
    /* poisoned outputs, once no rank reads the previous call's any more */
    OK(weft_stream_synchronize(comm, (weft_stream_t)s));
    OK(weft_comm_barrier(comm));
    CU(cuMemsetD8(d_act, 0xff, act_bytes));
    CU(cuMemsetD8((CUdeviceptr)(uintptr_t)x_gathered, 0xff, (size_t)tokens * xrow));
    OK(weft_comm_barrier(comm));
    AG_MOE(algos[a]);
    if (algos[a] == WEFT_ALGO_COPY_ENGINE && comm->gpu_shared) {
      EXPECT(last == WEFT_STATUS_NOT_SUPPORTED, "copy engine on a shared GPU: %s, not supported "
             "expected", weft_get_error_string(last));
      continue;
    }
    if (!EXPECT(last == WEFT_STATUS_SUCCESS, "%s: %s (%s)", names[a], weft_get_error_string(last),
                weft_comm_get_last_error(comm)))
      continue;
    OK(weft_stream_synchronize(comm, (weft_stream_t)s));
    CU(cuMemcpyDtoH(h_x, (CUdeviceptr)(uintptr_t)x_gathered, (size_t)tokens * xrow));
    EXPECT(!memcmp(h_x, h_xref, (size_t)tokens * xrow), "%s: x_gathered is not every rank's tokens",
           names[a]);
    int tiles;
    CU(cuMemcpyDtoH(&tiles, (CUdeviceptr)(uintptr_t)r.tiles, sizeof tiles));
    int rows = tiles * c->tile, topk = c->topk, inter = c->inter, k = c->k, kmaj = c->kmajor;
    long long ldw_l = ldw;
    CUdeviceptr d_re = (CUdeviceptr)(uintptr_t)r.row_entry, d_all = (CUdeviceptr)(uintptr_t)ids_all;
    void *fr[] = {&d_ref, &d_xref, &d_w, &d_re, &d_all, &rows, &inter,
                  &k,     &topk,   &ldw_l, &w_stride, &kmaj, &f16};
    if (rows) gemm_test_launch(k_ref, fr, s);
    unsigned long long bad[2] = {0, 0};
    double err = rows ? gemm_test_compare(comm, k_cmp, s, d_act, d_ref, rows, inter, ldact, out, bad) : 0;
    double tol = c->out32 ? 1e-4 : 1e-2;
    EXPECT(err <= tol, "%s: normalised error %.3g over %d rows (tolerance %g)", names[a], err,
           rows, tol);
    EXPECT(!bad[0] && !bad[1], "%s: %llu non-finite, %llu columns past inter written", names[a],
           bad[0], bad[1]);
    CU(cuMemcpyDtoH(h_act, d_act, act_bytes));
    size_t past = 0;
    for (size_t i = (size_t)rows * ldact * osz; i < act_bytes; i++) past += h_act[i] != 0xff;
    EXPECT(!past, "%s: %zu bytes of the rows past the plan's %d written", names[a], past, rows);
    if (!have_first) memcpy(h_first, h_act, act_bytes), have_first = 1;
    else EXPECT(!memcmp(h_first, h_act, act_bytes), "%s: act differs from %s's", names[a], names[0]);
  }
  if (repeat && have_first) {
    /* a CUDA graph of the call (AUTO), replayed */
    CUgraph g;
    CUgraphExec exec;
    OK(weft_stream_synchronize(comm, (weft_stream_t)s));
    OK(weft_comm_barrier(comm));
    CU(cuMemsetD8(d_act, 0xff, act_bytes));
    OK(weft_comm_barrier(comm));
    CU(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    AG_MOE(WEFT_ALGO_AUTO);
    CU(cuStreamEndCapture(s, &g));
    OK(last);
    CU(cuGraphInstantiate(&exec, g, 0));
    CU(cuGraphLaunch(exec, s));
    OK(weft_stream_synchronize(comm, (weft_stream_t)s));
    CU(cuMemcpyDtoH(h_act, d_act, act_bytes));
    EXPECT(!memcmp(h_first, h_act, act_bytes), "graph replay: act differs from the first call's");
    CU(cuGraphExecDestroy(exec));
    CU(cuGraphDestroy(g));
    /* back to back, no host sync, each rank late at random on the host and on the GPU */
    unsigned long long mine = test_rand(&shared) ^ (unsigned long long)me * 0x9E3779B97F4A7C15ull;
    int differ = 0;
    for (int it = 0; it < 50; it++) {
      usleep((useconds_t)(test_rand(&mine) % 2000));
      unsigned long long ns = test_rand(&mine) % 50000;
      void *da[] = {&ns};
      weft_launch_config_t one = WEFT_LAUNCH_CONFIG_INIT;
      OK(weft_kernel_launch(k_delay, &one, da, (weft_stream_t)s));
      AG_MOE(WEFT_ALGO_AUTO);
      OK(last);
      if (it % 10 == 9) {
        OK(weft_stream_synchronize(comm, (weft_stream_t)s));
        CU(cuMemcpyDtoH(h_act, d_act, act_bytes));
        differ += memcmp(h_first, h_act, act_bytes) != 0;
      }
    }
    EXPECT(!differ, "%d of 5 checked calls of 50 back to back differ from the first", differ);
  }
#undef AG_MOE
  OK(weft_stream_synchronize(comm, (weft_stream_t)s));
  OK(weft_comm_barrier(comm)); /* no peer still pushes into x_gathered */
  CU(cuStreamDestroy(s));
  CUdeviceptr all[] = {d_ids, d_ws, d_x, d_xref, d_w, d_act, d_ref};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) CU(cuMemFree(all[i]));
  OK(weft_free(comm, x_gathered));
  OK(weft_free(comm, ids_all));
  free(ids), free(h_act), free(h_first), free(h_x), free(h_xref);
  printf("%s %s\n", test_failures == before ? "ok  " : "FAIL", test_context);
  test_context[0] = 0;
}

/* A tensor-parallel MoE layer: AllGather + MoE with this rank's share of W1 [E, 2 * inter, h]
 * (inter columns of each expert's gate and of its up), then MoE + ReduceScatter and MoE +
 * AllReduce with its share of W2 [E, h, inter]; out against a float64 reference of the whole
 * layer (every rank's shares, summed on the host), bf16 with routing weights in fp32. */
static void layer_case(weft_comm_t *comm, weft_kernel_t *k_fill, weft_kernel_t *k_act,
                       weft_kernel_t *k_out, weft_kernel_t *k_cmp, int m, int topk, int experts,
                       int h, int inter) {
  int me = comm->local_rank, world = comm->local_world, tokens = world * m, f16 = 0;
  snprintf(test_context, sizeof test_context, "[%d] layer: %d tokens a rank x top-%d of %d "
           "experts, hidden %d, inter %d a rank", me, m, topk, experts, h, inter);
  int before = test_failures;
  long long entries = (long long)tokens * topk, max_rows;
  size_t ws_bytes, red_bytes;
  OK(weft_moe_routing_size(tokens, topk, experts, 128, &ws_bytes, &max_rows));
  OK(weft_moe_reduce_workspace_size(comm, tokens, h, WEFT_DTYPE_BF16, &red_bytes));
  ag_case_t c = {m, topk, experts, 128, 0, inter, h, 1, 0, 0};
  int *ids = malloc((size_t)entries * sizeof(int));
  float *wts = malloc((size_t)entries * sizeof(float));
  double *sum = calloc((size_t)tokens * h, sizeof(double)), *part = malloc((size_t)tokens * h * 8);
  if (!ids || !wts || !sum || !part) exit(1);
  draw_ids(&c, tokens, ids);
  for (long long i = 0; i < entries; i++) wts[i] = (float)(1 + test_rand(&shared) % 1000) / 1000.f;
  int32_t *ids_all;
  void *x_gathered, *red, *out_all;
  OK(weft_malloc(comm, (size_t)entries * 4, (void **)&ids_all));
  OK(weft_malloc(comm, (size_t)tokens * h * 2, &x_gathered));
  OK(weft_malloc(comm, red_bytes, &red));
  OK(weft_malloc(comm, (size_t)tokens * h * 2, &out_all));
  size_t w1n = (size_t)experts * 2 * inter * h, w2n = (size_t)experts * h * inter;
  CUdeviceptr d_ids, d_idsall, d_w, d_ws, d_x, d_xref, d_w1, d_w2, d_act, d_out, d_racc, d_ref;
  CU(cuMemAlloc(&d_ids, (size_t)m * topk * 4));
  CU(cuMemAlloc(&d_idsall, (size_t)entries * 4));
  CU(cuMemAlloc(&d_w, (size_t)entries * 4));
  CU(cuMemAlloc(&d_ws, ws_bytes));
  CU(cuMemAlloc(&d_x, (size_t)m * h * 2));
  CU(cuMemAlloc(&d_xref, (size_t)tokens * h * 2));
  CU(cuMemAlloc(&d_w1, w1n * 2 * (size_t)world));
  CU(cuMemAlloc(&d_w2, w2n * 2 * (size_t)world));
  CU(cuMemAlloc(&d_act, (size_t)max_rows * inter * 2));
  CU(cuMemAlloc(&d_out, (size_t)m * h * 2));
  CU(cuMemAlloc(&d_racc, (size_t)entries * inter * 8));
  CU(cuMemAlloc(&d_ref, (size_t)tokens * h * 8));
  CU(cuMemcpyHtoD(d_idsall, ids, (size_t)entries * 4));
  CU(cuMemcpyHtoD(d_ids, ids + (size_t)me * m * topk, (size_t)m * topk * 4));
  CU(cuMemcpyHtoD(d_w, wts, (size_t)entries * 4));
  /* every rank's tokens and shares (each from the shared sequence) */
  unsigned long long nx = (unsigned long long)tokens * h, sx = test_rand(&shared);
  void *fx[] = {&d_xref, &nx, &f16, &sx};
  gemm_test_launch(k_fill, fx, NULL);
  for (int q = 0; q < world; q++) {
    CUdeviceptr w1q = d_w1 + (CUdeviceptr)(w1n * 2 * q), w2q = d_w2 + (CUdeviceptr)(w2n * 2 * q);
    unsigned long long n1 = w1n, n2 = w2n, s1 = test_rand(&shared), s2 = test_rand(&shared);
    void *f1[] = {&w1q, &n1, &f16, &s1}, *f2[] = {&w2q, &n2, &f16, &s2};
    gemm_test_launch(k_fill, f1, NULL);
    gemm_test_launch(k_fill, f2, NULL);
  }
  CU(cuCtxSynchronize());
  CU(cuMemcpyDtoDAsync(d_x, d_xref + (CUdeviceptr)((size_t)me * m * h * 2), (size_t)m * h * 2, NULL));
  /* the reference: every rank's share through both matrices, summed on the host */
  int ent = (int)entries;
  for (int q = 0; q < world; q++) {
    CUdeviceptr w1q = d_w1 + (CUdeviceptr)(w1n * 2 * q), w2q = d_w2 + (CUdeviceptr)(w2n * 2 * q);
    void *fa[] = {&d_racc, &d_xref, &w1q, &d_idsall, &ent, &topk, &inter, &h};
    gemm_test_launch(k_act, fa, NULL);
    void *fo[] = {&d_ref, &d_racc, &w2q, &d_idsall, &d_w, &tokens, &topk, &h, &inter};
    gemm_test_launch(k_out, fo, NULL);
    CU(cuCtxSynchronize());
    CU(cuMemcpyDtoH(part, d_ref, (size_t)tokens * h * 8));
    for (size_t i = 0; i < (size_t)tokens * h; i++) sum[i] += part[i];
  }
  CU(cuMemcpyHtoD(d_ref, sum, (size_t)tokens * h * 8));
  CU(cuMemsetD8(d_out, 0xff, (size_t)m * h * 2));
  CU(cuMemsetD8((CUdeviceptr)(uintptr_t)out_all, 0xff, (size_t)tokens * h * 2));
  OK(weft_comm_barrier(comm));
  weft_moe_routing_t r;
  weft_dtype_t bf = WEFT_DTYPE_BF16;
  CUdeviceptr w1me = d_w1 + (CUdeviceptr)(w1n * 2 * me), w2me = d_w2 + (CUdeviceptr)(w2n * 2 * me);
  OK(weft_allgather(comm, (const void *)(uintptr_t)d_ids, ids_all, (size_t)m * topk,
                    WEFT_DTYPE_INT32, WEFT_ALGO_AUTO, NULL));
  OK(weft_moe_route(comm, ids_all, tokens, topk, experts, 128, (void *)(uintptr_t)d_ws, ws_bytes,
                    &r, NULL));
  OK(weft_ag_moe(comm, &r, (const void *)(uintptr_t)d_x, x_gathered, (const void *)(uintptr_t)w1me,
                 h, 2LL * inter * h, (void *)(uintptr_t)d_act, inter, m, inter, h, bf, bf,
                 WEFT_GEMM_LAYOUT_NK, WEFT_ALGO_AUTO, NULL));
  OK(weft_moe_rs(comm, &r, (const void *)(uintptr_t)d_act, inter, (const void *)(uintptr_t)w2me,
                 inter, (long long)h * inter, (const void *)(uintptr_t)d_w, WEFT_DTYPE_FP32,
                 (void *)(uintptr_t)d_out, red, h, inter, bf, bf, WEFT_GEMM_LAYOUT_NK,
                 WEFT_ALGO_AUTO, NULL));
  OK(weft_stream_synchronize(comm, NULL));
  unsigned long long bad[2] = {0, 0};
  CUdeviceptr my_ref = d_ref + (CUdeviceptr)((size_t)me * m * h * 8);
  double err = gemm_test_compare(comm, k_cmp, NULL, d_out, my_ref, m, h, h, bf, bad);
  EXPECT(err <= 1e-2 && !bad[0], "moe_rs: normalised error %.3g (%llu non-finite)", err, bad[0]);
  OK(weft_moe_ar(comm, &r, (const void *)(uintptr_t)d_act, inter, (const void *)(uintptr_t)w2me,
                 inter, (long long)h * inter, (const void *)(uintptr_t)d_w, WEFT_DTYPE_FP32,
                 out_all, red, h, inter, bf, bf, WEFT_GEMM_LAYOUT_NK, WEFT_ALGO_AUTO, NULL));
  OK(weft_stream_synchronize(comm, NULL));
  err = gemm_test_compare(comm, k_cmp, NULL, (CUdeviceptr)(uintptr_t)out_all, d_ref, tokens, h, h,
                          bf, bad);
  EXPECT(err <= 1e-2 && !bad[0], "moe_ar: normalised error %.3g (%llu non-finite)", err, bad[0]);
  /* the same layer in one call, its own workspace */
  size_t tp_bytes;
  void *tp_ws;
  OK(weft_moe_tp_workspace_size(comm, m, topk, experts, h, inter, WEFT_DTYPE_FP32, bf, &tp_bytes));
  OK(weft_malloc(comm, tp_bytes, &tp_ws));
  CU(cuMemsetD8(d_out, 0xff, (size_t)m * h * 2));
  OK(weft_moe_tp(comm, (const void *)(uintptr_t)d_x, (const int32_t *)(uintptr_t)d_ids,
                 (const void *)(uintptr_t)(d_w + (CUdeviceptr)((size_t)me * m * topk * 4)),
                 WEFT_DTYPE_FP32, m, topk, experts, h, (const void *)(uintptr_t)w1me,
                 (const void *)(uintptr_t)w2me, inter, (void *)(uintptr_t)d_out, tp_ws, tp_bytes,
                 bf, NULL));
  OK(weft_stream_synchronize(comm, NULL));
  err = gemm_test_compare(comm, k_cmp, NULL, d_out, my_ref, m, h, h, bf, bad);
  EXPECT(err <= 1e-2 && !bad[0], "moe_tp: normalised error %.3g (%llu non-finite)", err, bad[0]);
  OK(weft_comm_barrier(comm));
  OK(weft_free(comm, tp_ws));
  CUdeviceptr all[] = {d_ids, d_idsall, d_w, d_ws, d_x, d_xref, d_w1, d_w2, d_act, d_out, d_racc,
                       d_ref};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) CU(cuMemFree(all[i]));
  OK(weft_free(comm, out_all));
  OK(weft_free(comm, red));
  OK(weft_free(comm, x_gathered));
  OK(weft_free(comm, ids_all));
  free(ids), free(wts), free(sum), free(part);
  printf("%s %s\n", test_failures == before ? "ok  " : "FAIL", test_context);
  test_context[0] = 0;
}

int main(void) {
  test_precompile(moe_test_src, "moe_test.cu");
  weft_comm_t *comm = test_init();
  unsigned long long seed = test_seed(comm);
  shared = seed / 1000003ull * 2654435761ull | 1;
  weft_module_t *m, *mg;
  OK(weft_module_load(comm, gemm_test_src, "gemm_test.cu", NULL, 0, &m));
  OK(weft_module_load(comm, moe_test_src, "moe_test.cu", NULL, 0, &mg));
  weft_kernel_t *k_fill = test_kernel(m, "fill"), *k_cmp = test_kernel(m, "compare");
  weft_kernel_t *k_delay = test_kernel(m, "delay"), *k_ref = test_kernel(mg, "gated_reference");
  /* the papers' kind of shape, scaled down, then random ones */
  ag_case_t fixed[] = {
      {1024, 2, 8, 128, 0, 256, 512, 1, 0, 0},  /* the overlapped form under AUTO */
      {333, 5, 32, 64, 1, 192, 256, 1, 0, 0},   {77, 2, 4, 256, 2, 128, 128, 0, 1, 0},
      {1, 1, 2, 128, 0, 64, 64, 1, 0, 1},
  };
  for (size_t i = 0; i < sizeof fixed / sizeof fixed[0]; i++)
    run_case(comm, k_fill, k_ref, k_cmp, k_delay, &fixed[i], i == 0);
  static const int tiles[] = {64, 128, 256};
  for (int i = 0; i < 8; i++) {
    ag_case_t c;
    c.experts = 1 + (int)(test_rand(&shared) % 64);
    c.topk = 1 + (int)(test_rand(&shared) % (c.experts < 6 ? c.experts : 6));
    c.m = 1 + (int)(test_rand(&shared) % 700);
    c.tile = tiles[test_rand(&shared) % 3];
    c.kind = (int)(test_rand(&shared) % 3);
    c.inter = 8 * (1 + (int)(test_rand(&shared) % 48));
    c.k = 8 * (1 + (int)(test_rand(&shared) % 64));
    c.kmajor = (int)(test_rand(&shared) % 2);
    c.fp16 = (int)(test_rand(&shared) % 2);
    c.out32 = (int)(test_rand(&shared) % 4 == 0);
    run_case(comm, k_fill, k_ref, k_cmp, k_delay, &c, 0);
  }
  weft_kernel_t *k_act = test_kernel(mg, "layer_act"), *k_lout = test_kernel(mg, "layer_out");
  layer_case(comm, k_fill, k_act, k_lout, k_cmp, 256, 2, 8, 256, 128);
  layer_case(comm, k_fill, k_act, k_lout, k_cmp, 37, 3, 5, 128, 64);
  weft_module_unload(mg);
  weft_module_unload(m);
  OK(weft_comm_destroy(comm));
  printf("%d checks, %d failed\n%s\n", test_checks, test_failures, test_failures ? "FAILED" : "ok");
  return test_failures ? 1 : 0;
}
