/*
 * test_gemm.c — weft_gemm against a float64 reference computed on the GPU from the same inputs:
 * random shapes (m and n not multiples of any tile, decode m from 1 to 128, row strides wider
 * than the rows, odd n and ldc), both B layouts, bf16 and fp16 inputs, bf16, fp16 and fp32
 * outputs. Inputs are drawn fresh each run; C and the columns between n and ldc are poisoned
 * (NaN) before each call; every element is checked (NaN counts as wrong, as does a changed
 * padding column). Normalised error ||C - ref|| / ||ref|| <= 1e-4 for fp32 C, <= 5e-3 for 16-bit C.
 * Also: hooks compiled in (waits already satisfied, notifies counted) give bit-identical C and
 * the expected notify counts; split-K is deterministic; a captured CUDA graph replays to the same
 * bits; k = 0 writes zeros. --small: two small shapes only (for compute-sanitizer, memcheck.sh).
 */
// weft-test: ranks=1 timeout=600
#include <math.h>

#include "gpu_test.h"
#include "gemm_test.h"
#include "ops/gemm/gemm.h"
#include "ops/ops.h"

static weft_comm_t *comm;
static weft_kernel_t *k_fill, *k_ref, *k_cmp;
static CUstream s;
static unsigned long long rng;
static int failures, cases;

typedef struct buffers {
  weft_gemm_problem_t p;
  CUdeviceptr a, b, c, ref;
  size_t c_bytes;
} buffers_t;

static void launch(weft_kernel_t *k, void **args) { gemm_test_launch(k, args, s); }

static size_t out_size(weft_dtype_t t) { return t == WEFT_DTYPE_FP32 ? 4 : 2; }

static void setup(buffers_t *x, const weft_gemm_problem_t *p) {
  memset(x, 0, sizeof *x);
  x->p = *p;
  int fp16 = p->in == WEFT_DTYPE_FP16;
  size_t na = (size_t)p->m * p->lda, nb = (size_t)(p->b_kmajor ? p->n : p->k) * p->ldb;
  x->c_bytes = (size_t)p->m * p->ldc * out_size(p->out);
  CU(cuMemAlloc(&x->a, na * 2 + 16));
  CU(cuMemAlloc(&x->b, nb * 2 + 16));
  CU(cuMemAlloc(&x->c, x->c_bytes + 16));
  CU(cuMemAlloc(&x->ref, (size_t)p->m * p->n * 8 + 8));
  unsigned long long sa = test_rand(&rng), sb = test_rand(&rng);
  unsigned long long n = na;
  void *fa[] = {&x->a, &n, &fp16, &sa};
  launch(k_fill, fa);
  unsigned long long n2 = nb;
  void *fb[] = {&x->b, &n2, &fp16, &sb};
  launch(k_fill, fb);
  int m = p->m, nn = p->n, k = p->k, kmaj = p->b_kmajor, accumulate = 0;
  long long lda = p->lda, ldb = p->ldb;
  void *ra[] = {&x->ref, &x->a, &x->b, &m, &nn, &k, &lda, &ldb, &kmaj, &fp16, &accumulate};
  launch(k_ref, ra);
}

static void teardown(buffers_t *x) {
  CU(cuMemFree(x->a));
  CU(cuMemFree(x->b));
  CU(cuMemFree(x->c));
  CU(cuMemFree(x->ref));
}

static void poison(buffers_t *x) { CU(cuMemsetD8Async(x->c, 0xFF, x->c_bytes, s)); }

/* Checks C of x against its reference; returns the normalised error. */
static double check(buffers_t *x, const char *what) {
  const weft_gemm_problem_t *p = &x->p;
  unsigned long long b[2];
  double err = gemm_test_compare(comm, k_cmp, s, x->c, x->ref, p->m, p->n, p->ldc, p->out, b);
  double tol = p->out == WEFT_DTYPE_FP32 ? 1e-4 : 5e-3;
  int ok = b[0] == 0 && b[1] == 0 && err <= tol;
  cases++;
  if (!ok) failures++;
  printf("%s %-10s m %5d n %5d k %5d lda %5lld ldb %5lld ldc %5lld %s %s->%s: err %.2e "
         "(tol %.0e), %llu non-finite, %llu padding changed\n",
         ok ? "ok  " : "FAIL", what, p->m, p->n, p->k, p->lda, p->ldb, p->ldc,
         p->b_kmajor ? "NK" : "KN", p->in == WEFT_DTYPE_FP16 ? "fp16" : "bf16",
         p->out == WEFT_DTYPE_FP32 ? "fp32" : p->out == WEFT_DTYPE_FP16 ? "fp16" : "bf16", err,
         tol, b[0], b[1]);
  fflush(stdout);
  return err;
}

static void run_gemm(buffers_t *x) {
  const weft_gemm_problem_t *p = &x->p;
  OK(weft_gemm(comm, (void *)(uintptr_t)x->a, (int)p->lda, (void *)(uintptr_t)x->b, (int)p->ldb,
               (void *)(uintptr_t)x->c, (int)p->ldc, p->m, p->n, p->k, p->in, p->out,
               p->b_kmajor ? WEFT_GEMM_LAYOUT_NK : WEFT_GEMM_LAYOUT_KN, s));
}

/* weft_gemm_launch of cfg (the launcher the public call and the overlapped ops share) with hooks
 * h (NULL: none). */
static void run_config(buffers_t *x, const weft_gemm_config_t *cfg, const weft_gemm_hooks_t *h) {
  OK(weft_gemm_launch(comm, &x->p, cfg, h, (void *)(uintptr_t)x->a, (void *)(uintptr_t)x->b,
                      (void *)(uintptr_t)x->c, s));
}

static void *download(buffers_t *x) {
  void *h = malloc(x->c_bytes);
  OK(weft_stream_synchronize(comm, s));
  CU(cuMemcpyDtoH(h, x->c, x->c_bytes));
  return h;
}

/* The heuristic's configuration for p on this GPU and communicator, with tiles bn columns wide
 * (weft_gemm_config_width; 0: the heuristic's width). */
static void heuristic(const weft_gemm_problem_t *p, int bn, weft_gemm_config_t *cfg) {
  weft_gemm_config_choose(p, &comm->ops->gpu, comm->ops->gemm_ws_floats,
                          comm->ops->gemm_ws_counters, 1, cfg); /* (the tests attach hooks) */
  if (bn && cfg->bn != bn && !weft_gemm_config_width(p, bn, cfg)) {
    cases++;
    failures++;
    printf("FAIL m %d n %d k %d: no configuration %d columns wide\n", p->m, p->n, p->k, bn);
  }
}

/* One checked call of cfg without hooks on an SM budget of `sms` (0: none), poisoned before;
 * its C (download) for the bit-for-bit comparisons that follow. */
static void *checked_call(buffers_t *x, const weft_gemm_config_t *cfg, int sms, const char *what) {
  weft_gemm_hooks_t budget = {.sms = sms};
  poison(x);
  run_config(x, cfg, &budget);
  check(x, what);
  return download(x);
}

static void same_bits(buffers_t *x, const void *want, const char *what) {
  void *got = download(x);
  int ok = !memcmp(got, want, x->c_bytes);
  cases++;
  if (!ok) failures++;
  printf("%s %s: m %d n %d k %d, C bit-identical to the plain call\n", ok ? "ok  " : "FAIL", what,
         x->p.m, x->p.n, x->p.k);
  free(got);
}

static weft_gemm_problem_t problem(int m, int n, int k, int pad_a, int pad_b, int pad_c,
                                   weft_dtype_t in, weft_dtype_t out, int kmajor) {
  weft_gemm_problem_t p = {m, n, k, k + pad_a, (kmajor ? k : n) + pad_b, n + pad_c, in, out, kmajor, 0};
  return p;
}

/* One checked call of weft_gemm on a fresh problem. */
static void one(const weft_gemm_problem_t *p, const char *what) {
  buffers_t x;
  setup(&x, p);
  poison(&x);
  run_gemm(&x);
  check(&x, what);
  teardown(&x);
}

/* Hooks on (waits already satisfied, notifies counted) against hooks off, and split-K twice;
 * on an SM budget of `sms` (0: none), which may split the last wave (tail_split); tiles bn wide
 * (0: the heuristic's width), as in the three functions below. */
static void hooks_identical(const weft_gemm_problem_t *p, int sms, int bn) {
  buffers_t x;
  setup(&x, p);
  weft_gemm_config_t cfg;
  heuristic(p, bn, &cfg);
  void *want = checked_call(&x, &cfg, sms, "plain");

  int rows = 128, nsig = (p->m + rows - 1) / rows;
  CUdeviceptr sig, ctr;
  CU(cuMemAlloc(&sig, (size_t)nsig * 8));
  CU(cuMemAlloc(&ctr, (size_t)nsig * 8));
  unsigned long long *h = malloc((size_t)nsig * 8);
  for (int i = 0; i < nsig; i++) h[i] = 5 + (unsigned long long)(test_rand(&rng) % 3); /* >= 5 */
  CU(cuMemcpyHtoD(sig, h, (size_t)nsig * 8));
  CU(cuMemsetD8(ctr, 0, (size_t)nsig * 8));
  weft_gemm_hooks_t hooks = {.wait_signals = (const uint64_t *)(uintptr_t)sig, .wait_rows = rows,
                             .wait_expected = 5, .notify_counters = (uint64_t *)(uintptr_t)ctr,
                             .notify_rows = rows, .notify_sys = 1, .sms = sms};
  poison(&x);
  run_config(&x, &cfg, &hooks);
  same_bits(&x, want, "hooks (wait + notify)");
  /* each 64-row sub-tile stored adds 1 to the counter of its rows: per 128-row block, one per
   * sub-tile row-half inside m, per tile column (BM = 128 tiles: two halves of rows; BM = 64:
   * the two warpgroups' column halves, the second only where it lies inside n) */
  CU(cuMemcpyDtoH(h, ctr, (size_t)nsig * 8));
  int tiles_n = (p->n + cfg.bn - 1) / cfg.bn, bad = 0;
  for (int i = 0; i < nsig; i++) {
    unsigned long long want_n = 0;
    for (int r0 = i * rows; r0 < (i + 1) * rows && r0 < p->m; r0 += cfg.bm)
      for (int t = 0; t < tiles_n; t++) {
        if (cfg.bm == 128) want_n += 1 + (r0 + 64 < p->m);
        else want_n += 1 + (t * cfg.bn + cfg.bn / 2 < p->n);
      }
    if (h[i] != want_n) {
      if (!bad) printf("     counter %d: %llu notifies, expected %llu\n", i, h[i], want_n);
      bad++;
    }
  }
  cases++;
  if (bad) failures++;
  printf("%s notify counts (%d counters, %d wrong)\n", bad ? "FAIL" : "ok  ", nsig, bad);
  weft_gemm_hooks_t budget = {.sms = sms};
  poison(&x);
  run_config(&x, &cfg, &budget);
  same_bits(&x, want, "second plain call (split-K determinism)");
  free(want);
  free(h);
  CU(cuMemFree(sig));
  CU(cuMemFree(ctr));
  teardown(&x);
}

/* The transposed product (swap_ab: C^T = B A^T stored as C) that the heuristic takes for p:
 * against the reference, bit-identical on a second call (the splits' order) and on half the SMs,
 * and refused with a hook. */
static void transposed(const weft_gemm_problem_t *p) {
  weft_gemm_config_t cfg;
  weft_gemm_config_choose(p, &comm->ops->gpu, comm->ops->gemm_ws_floats,
                          comm->ops->gemm_ws_counters, 0, &cfg);
  cases++;
  if (!cfg.swap_ab) {
    failures++;
    printf("FAIL m %d n %d k %d: the heuristic no longer takes the transposed product (update the "
           "test)\n", p->m, p->n, p->k);
    return;
  }
  buffers_t x;
  setup(&x, p);
  char what[64];
  snprintf(what, sizeof what, "transposed %dx%d in %d splits", cfg.bm, cfg.bn, cfg.k_splits);
  void *want = checked_call(&x, &cfg, 0, what);
  poison(&x);
  run_config(&x, &cfg, NULL);
  same_bits(&x, want, "transposed, second call");
  weft_gemm_hooks_t budget = {.sms = comm->ops->gpu.sms / 2};
  poison(&x);
  run_config(&x, &cfg, &budget);
  same_bits(&x, want, "transposed on half the SMs");
  CUdeviceptr sig;
  CU(cuMemAlloc(&sig, 8));
  weft_gemm_hooks_t hook = {.wait_signals = (const uint64_t *)(uintptr_t)sig, .wait_rows = p->m};
  int refused = weft_gemm_launch(comm, p, &cfg, &hook, (void *)(uintptr_t)x.a,
                                 (void *)(uintptr_t)x.b, (void *)(uintptr_t)x.c,
                                 s) == WEFT_STATUS_INVALID_ARGUMENT;
  cases++;
  if (!refused) failures++;
  printf("%s transposed product with a wait hook refused\n", refused ? "ok  " : "FAIL");
  CU(cuMemFree(sig));
  free(want);
  teardown(&x);
}

/* The fused-scatter epilogue (GEMM + ReduceScatter's, WEFT_GEMM_SCATTER) on one GPU: `ranks`
 * blocks of one buffer stand for the ranks' copies of a symmetric buffer (scatter_stride apart),
 * each holding a slot (the 64-row blocks that touch a segment of m / ranks rows, the segment
 * from slot row (q * seg) % 64) and, after it, that rank's counter. The segments put back
 * together must equal the plain call's C bit for bit (padding columns untouched), and each
 * counter must count the stored 64-row sub-tiles that touch its segment. On an SM budget of
 * `sms` (0: none), which may split the last wave (tail_budget). */
static void scatter_emulated(const weft_gemm_problem_t *p, int ranks, int sms, int bn) {
  buffers_t x;
  setup(&x, p);
  weft_gemm_config_t cfg;
  heuristic(p, bn, &cfg);
  unsigned char *want = checked_call(&x, &cfg, sms, "plain");
  int seg = p->m / ranks;
  size_t row = (size_t)p->ldc * out_size(p->out),
         data = ((size_t)weft_gemm_scatter_rows(seg) * row + 255) / 256 * 256, blk = data + 256;
  CUdeviceptr buf;
  CU(cuMemAlloc(&buf, (size_t)ranks * blk));
  CU(cuMemsetD8(buf, 0xFF, (size_t)ranks * blk));
  for (int q = 0; q < ranks; q++) CU(cuMemsetD8(buf + q * blk + data, 0, 8));
  weft_gemm_hooks_t hooks = {.notify_counters = (uint64_t *)(uintptr_t)(buf + data),
                             .notify_rows = seg, .notify_sys = 1, .scatter_stride = (long long)blk,
                             .sms = sms};
  OK(weft_gemm_launch(comm, p, &cfg, &hooks, (void *)(uintptr_t)x.a, (void *)(uintptr_t)x.b,
                      (void *)(uintptr_t)buf, s));
  OK(weft_stream_synchronize(comm, s));
  unsigned char *h = malloc((size_t)ranks * blk), *got = malloc(x.c_bytes);
  CU(cuMemcpyDtoH(h, buf, (size_t)ranks * blk));
  for (int r = 0; r < p->m; r++)
    memcpy(got + (size_t)r * row, h + (size_t)(r / seg) * blk + (size_t)(r - (r / seg * seg & ~63)) * row, row);
  int ok = !memcmp(got, want, x.c_bytes), bad = 0;
  uint64_t units = weft_gemm_notify_units(p, &cfg);
  for (int q = 0; q < ranks; q++) {
    uint64_t n, lo = (uint64_t)q * seg, hi = lo + seg, expect = units * ((hi + 63) / 64 - lo / 64);
    memcpy(&n, h + (size_t)q * blk + data, 8);
    if (n != expect) {
      if (!bad) printf("     rank %d's counter: %llu notifies, expected %llu\n", q,
                       (unsigned long long)n, (unsigned long long)expect);
      bad++;
    }
  }
  cases++;
  if (!ok || bad) failures++;
  printf("%s scatter over %d ranks (segments of %d rows, BM %d, %d SMs): m %d n %d k %d, C %s the "
         "plain call's, %d counters wrong\n", ok && !bad ? "ok  " : "FAIL", ranks, seg, cfg.bm, sms,
         p->m, p->n, p->k, ok ? "bit-identical to" : "DIFFERS from", bad);
  free(h);
  free(got);
  free(want);
  CU(cuMemFree(buf));
  teardown(&x);
}

/* Split-K with the splits of a tile reducing in one cluster (distributed shared memory) against
 * the workspace reduction of the same splits: the same sums in the same order, so the same bits;
 * also with the wait hook (signals set), and on 2 clusters only (hooks.sms), so that each cluster
 * reduces many tiles in turn. */
static void cluster_reduction(const weft_gemm_problem_t *p, int ks, int bm, int bn) {
  buffers_t x;
  setup(&x, p);
  weft_gemm_config_t cfg;
  heuristic(p, 0, &cfg);
  cfg.splitk = 1, cfg.k_splits = ks, cfg.splitk_cluster = 1;
  if (bm) cfg.bm = bm, cfg.bn = bn, cfg.a_rows = 0;
  while (weft_gemm_smem_bytes(&cfg) > WEFT_GEMM_MAX_SMEM && cfg.stages > 2) cfg.stages--;
  /* an SM budget keeps the cluster reduction where the GPCs cannot hold every cluster at once
   * (the launcher would take the workspace instead) */
  weft_gemm_hooks_t budget = {.sms = comm->ops->gpu.sms};
  poison(&x);
  run_config(&x, &cfg, &budget);
  char what[64];
  snprintf(what, sizeof what, "cluster%d %dx%d", ks, cfg.bm, cfg.bn);
  check(&x, what);
  void *want = download(&x);
  weft_gemm_config_t ws = cfg;
  ws.splitk_cluster = 0;
  poison(&x);
  run_config(&x, &ws, NULL);
  same_bits(&x, want, "workspace reduction of the same splits");
  CUdeviceptr sig;
  int nsig = (p->m + 127) / 128;
  CU(cuMemAlloc(&sig, (size_t)nsig * 8));
  CU(cuMemsetD32Async(sig, 1, (size_t)nsig * 2, s)); /* every word >= 1 */
  weft_gemm_hooks_t h = {.wait_signals = (const uint64_t *)(uintptr_t)sig, .wait_rows = 128,
                         .wait_expected = 1, .sms = comm->ops->gpu.sms};
  poison(&x);
  run_config(&x, &cfg, &h);
  same_bits(&x, want, "cluster reduction with the wait hook");
  h.sms = 2 * ks;
  poison(&x);
  run_config(&x, &cfg, &h);
  same_bits(&x, want, "cluster reduction on 2 clusters (many tiles each)");
  CU(cuMemFree(sig));
  free(want);
  teardown(&x);
}

/* The largest SM budget up to max_sms on which the heuristic's configuration for p (bn wide)
 * splits its last wave (its tail tiles and splits in *tiles, *splits); 0 (a failed check) where
 * none does. */
static int tail_budget(const weft_gemm_problem_t *p, int max_sms, int bn, int *tiles, int *splits) {
  weft_gemm_config_t cfg;
  heuristic(p, bn, &cfg);
  for (int sms = max_sms; sms >= 2 * cfg.cluster; sms -= cfg.cluster)
    if ((*tiles = weft_gemm_tail(p, &cfg, sms / cfg.cluster, comm->ops->gemm_ws_floats,
                                 comm->ops->gemm_ws_counters, splits)))
      return sms;
  cases++;
  failures++;
  printf("FAIL tail: m %d n %d k %d splits no tail on any SM budget (update the test)\n", p->m,
         p->n, p->k);
  return 0;
}

/* The split tail (kernels/gemm/config.cuh, WEFT_GEMM_TAIL): the cluster tiles of the grid's last, partly
 * filled wave split along k, the last split to arrive summing the partials in split order. On
 * the largest SM budget up to max_sms that splits p's tail: against the float64 reference,
 * twice bit-identical (the counters reset themselves), unsplit (tail_splits 0) against the
 * reference too, and with the wait and notify hooks (hooks_identical: the storers' skip rounds,
 * each sub-tile notified once). */
static void tail_split(const weft_gemm_problem_t *p, int max_sms, int bn) {
  weft_gemm_config_t cfg;
  heuristic(p, bn, &cfg);
  int tiles, splits, sms = tail_budget(p, max_sms, bn, &tiles, &splits);
  if (!sms) return;
  buffers_t x;
  setup(&x, p);
  weft_gemm_hooks_t budget = {.sms = sms};
  char what[96];
  snprintf(what, sizeof what, "tail of %d cluster tiles in %d splits on %d SMs (%dx%d tiles)", tiles,
           splits, sms, cfg.bm, cfg.bn);
  void *want = checked_call(&x, &cfg, sms, what);
  poison(&x);
  run_config(&x, &cfg, &budget);
  same_bits(&x, want, "split tail again");
  weft_gemm_config_t whole = cfg;
  whole.tail_splits = 0;
  free(checked_call(&x, &whole, sms, "the same tiles unsplit"));
  free(want);
  teardown(&x);
  hooks_identical(p, sms, bn);
}

/* Two GEMMs (a decode split-K one and a large one) captured into a graph and replayed, and a
 * third whose kernel is compiled and loaded inside the capture (a raster group no other case
 * uses: a specialisation of its own). The capture is the strictest a caller can make: global
 * mode, on a blocking stream. */
static void graph(void) {
  buffers_t x[3];
  weft_gemm_problem_t p[3] = {problem(16, 1000, 4096, 0, 0, 0, WEFT_DTYPE_BF16, WEFT_DTYPE_BF16, 1),
                              problem(700, 904, 512, 8, 0, 4, WEFT_DTYPE_FP16, WEFT_DTYPE_FP32, 0),
                              problem(600, 1040, 768, 0, 0, 0, WEFT_DTYPE_BF16, WEFT_DTYPE_BF16, 1)};
  weft_gemm_config_t fresh;
  heuristic(&p[2], 0, &fresh);
  fresh.group = 3;
  void *want[3] = {NULL};
  for (int i = 0; i < 3; i++) {
    setup(&x[i], &p[i]);
    poison(&x[i]);
    if (i < 2) {
      run_gemm(&x[i]); /* compiles and loads before the capture */
      want[i] = download(&x[i]);
    }
  }
  CUstream outer = s; /* the helpers run on s */
  CU(cuStreamCreate(&s, CU_STREAM_DEFAULT));
  const void *loaded = comm->ops->gemm_kernels; /* a load puts its kernel first */
  CU(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
  for (int i = 0; i < 3; i++) {
    poison(&x[i]);
    if (i < 2) run_gemm(&x[i]);
    else run_config(&x[i], &fresh, NULL);
  }
  CUgraph g;
  CUgraphExec ge;
  CU(cuStreamEndCapture(s, &g));
  int in_capture = (const void *)comm->ops->gemm_kernels != loaded;
  cases++;
  if (!in_capture) failures++;
  printf("%s graph: a kernel compiled and loaded inside the capture\n", in_capture ? "ok  " : "FAIL");
  CU(cuGraphInstantiateWithFlags(&ge, g, 0));
  for (int rep = 0; rep < 3; rep++) {
    for (int i = 0; i < 3; i++) poison(&x[i]);
    CU(cuGraphLaunch(ge, s));
    for (int i = 0; i < 2; i++) same_bits(&x[i], want[i], "graph replay");
    check(&x[2], "graph-new");
  }
  CU(cuGraphExecDestroy(ge));
  CU(cuGraphDestroy(g));
  OK(weft_stream_synchronize(comm, s));
  CU(cuStreamDestroy(s));
  s = outer;
  for (int i = 0; i < 3; i++) {
    if (i < 2) check(&x[i], "graph");
    free(want[i]);
    teardown(&x[i]);
  }
}

/* Two GEMMs back to back, the second reading the first's C as its A with no sync between them.
 * The second is small enough to launch programmatically (gemm/launch.c) and the first lets its
 * dependents start early, so the second's CTAs may take the SMs the first leaves free (its 128
 * CTAs on a 132-SM GPU) while it runs: they must wait for its C, poisoned before, to be complete.
 * The second's reference is computed afterwards from the first's C as written. */
static void chained(void) {
  const weft_dtype_t B = WEFT_DTYPE_BF16;
  weft_gemm_problem_t p1 = problem(64, 4096, 8192, 0, 0, 0, B, B, 1);
  weft_gemm_problem_t p2 = problem(64, 512, 4096, 0, 0, 0, B, B, 1); /* k = p1's n, lda its ldc */
  buffers_t x1, x2;
  setup(&x1, &p1);
  setup(&x2, &p2);
  poison(&x1);
  poison(&x2);
  run_gemm(&x1);
  OK(weft_gemm(comm, (void *)(uintptr_t)x1.c, (int)p1.ldc, (void *)(uintptr_t)x2.b, (int)p2.ldb,
               (void *)(uintptr_t)x2.c, (int)p2.ldc, p2.m, p2.n, p2.k, B, B, WEFT_GEMM_LAYOUT_NK, s));
  int m = p2.m, nn = p2.n, k = p2.k, kmaj = 1, fp16 = 0, accumulate = 0;
  long long lda = p1.ldc, ldb = p2.ldb;
  void *ra[] = {&x2.ref, &x1.c, &x2.b, &m, &nn, &k, &lda, &ldb, &kmaj, &fp16, &accumulate};
  launch(k_ref, ra);
  check(&x1, "chain 1st");
  check(&x2, "chain 2nd");
  teardown(&x1);
  teardown(&x2);
}

/* A caller's configuration that exceeds shared memory or the ring, or loads fewer rows of A than
 * m: INVALID_ARGUMENT with a message, before anything compiles (it once surfaced as a failed
 * cuFuncSetAttribute, and inside a capture as the failed unload of the module after it), and the
 * GEMM still runs after. */
static void bad_config(const weft_gemm_problem_t *p) {
  weft_gemm_config_t cfg;
  heuristic(p, 0, &cfg);
  buffers_t x;
  setup(&x, p);
  void *a = (void *)(uintptr_t)x.a, *b = (void *)(uintptr_t)x.b, *c = (void *)(uintptr_t)x.c;
  weft_gemm_config_t big = cfg, deep = cfg,
                     few = {.bm = 64, .bn = 128, .stages = 8, .cluster = 1, .epi_bufs = 2, .group = 8,
                            .k_splits = 1, .splitk = 1, .a_rows = 8}; /* the m <= 8 tile */
  big.stages = 12;   /* 12 x 48 KiB of 128x256 stages */
  deep.stages = WEFT_GEMM_MAX_STAGES + 1;
  deep.bn = 64, deep.bm = 64, deep.cluster = 1;
  int ok = weft_gemm_launch(comm, p, &big, NULL, a, b, c, s) == WEFT_STATUS_INVALID_ARGUMENT &&
           strstr(weft_comm_get_last_error(comm), "shared memory") != NULL &&
           weft_gemm_launch(comm, p, &deep, NULL, a, b, c, s) == WEFT_STATUS_INVALID_ARGUMENT &&
           weft_gemm_launch(comm, p, &few, NULL, a, b, c, s) == WEFT_STATUS_INVALID_ARGUMENT &&
           strstr(weft_comm_get_last_error(comm), "a_rows") != NULL;
  cases++;
  if (!ok) {
    failures++;
    printf("FAIL bad configurations: %s\n", weft_comm_get_last_error(comm));
  }
  poison(&x);
  run_config(&x, &cfg, NULL);
  check(&x, "after bad configurations");
  teardown(&x);
}

int main(int argc, char **argv) {
  int small = argc > 1 && !strcmp(argv[1], "--small");
  test_precompile(gemm_test_src, "test_gemm.cu");
  comm = test_init();
  rng = test_seed(comm) | 1;
  weft_module_t *mod;
  OK(weft_module_load(comm, gemm_test_src, "test_gemm.cu", NULL, 0, &mod));
  k_fill = test_kernel(mod, "fill");
  k_ref = test_kernel(mod, "reference");
  k_cmp = test_kernel(mod, "compare");
  CU(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
  const weft_dtype_t B = WEFT_DTYPE_BF16, H = WEFT_DTYPE_FP16, F = WEFT_DTYPE_FP32;

  if (small) {
    weft_gemm_problem_t p = problem(200, 136, 256, 0, 0, 0, B, B, 1);
    one(&p, "small");
    p = problem(3, 100, 2048, 8, 0, 3, B, F, 1);
    one(&p, "small");
    p = problem(130, 256, 128, 0, 0, 0, H, H, 0);
    one(&p, "small");
  } else {
    /* every dtype pair and layout on shapes off every tile multiple */
    const weft_dtype_t ins[] = {B, H}, outs[] = {B, H, F};
    for (int i = 0; i < 2; i++)
      for (int o = 0; o < 3; o++)
        for (int kmaj = 0; kmaj < 2; kmaj++) {
          weft_gemm_problem_t p = problem(1000 + (int)(test_rand(&rng) % 300),
                                          8 * (100 + (int)(test_rand(&rng) % 80)),
                                          8 * (60 + (int)(test_rand(&rng) % 100)), 0, 0, 0,
                                          ins[i], outs[o], kmaj);
          one(&p, "dtypes");
          p.m = 1 + (int)(test_rand(&rng) % 128);
          one(&p, "decode");
        }
    /* decode m at the heuristic's boundaries, n and k of the layers' per-GPU shapes */
    static const int ms[] = {1, 16, 17, 64, 65, 128};
    static const int nk[][2] = {{2752, 4096}, {4096, 3584}, {7168, 8192}, {1376, 4096}};
    for (size_t i = 0; i < sizeof ms / sizeof ms[0]; i++) {
      const int *q = nk[test_rand(&rng) % 4];
      weft_gemm_problem_t p = problem(ms[i], q[0], q[1], 0, 0, 0, B, B, test_rand(&rng) & 1);
      one(&p, "decode");
    }
    /* 64 < m <= 128 over long k, n under 66 128-column tiles: on fast memory (H200) 128x128
     * tiles in 2 clustered splits; odd m, n off the tile, padded C, both layouts */
    weft_gemm_problem_t lk = problem(97, 5128, 11264, 0, 0, 8, B, B, 0);
    one(&lk, "decode long k");
    lk = problem(128, 6656, 16384, 0, 0, 0, H, F, 1);
    one(&lk, "decode long k");
    /* two 128-row tile rows (225-256 rows: no GPU transposes them) in unclustered 128x64 tiles:
     * n of 50-65 64-column tiles (3/4 to all of 132 SMs), k of at most 112 k-blocks; both
     * layouts, padded C and A */
    for (int kmaj = 0; kmaj < 2; kmaj++) {
      weft_gemm_problem_t tp = problem(225 + (int)(test_rand(&rng) % 32),
                                       8 * (400 + (int)(test_rand(&rng) % 120)),
                                       8 * (300 + (int)(test_rand(&rng) % 596)), 8 * kmaj, 0,
                                       8 * kmaj, B, kmaj ? B : F, kmaj);
      one(&tp, "two tile rows");
    }
    /* strides wider than the rows; odd n and ldc (the direct store); odd m */
    for (int i = 0; i < 12; i++) {
      int kmaj = (int)(test_rand(&rng) & 1);
      int n = 1 + (int)(test_rand(&rng) % 1500);
      if (!kmaj) n = 8 * (1 + n / 8);
      weft_gemm_problem_t p = problem(i < 6 ? 1 + (int)(test_rand(&rng) % 128) : 129 + (int)(test_rand(&rng) % 1200),
                                      n, 8 * (1 + (int)(test_rand(&rng) % 200)),
                                      8 * (int)(test_rand(&rng) % 3), 8 * (int)(test_rand(&rng) % 3),
                                      (int)(test_rand(&rng) % 9), ins[test_rand(&rng) & 1],
                                      outs[test_rand(&rng) % 3], kmaj);
      one(&p, "strides");
    }
    /* the transposed product between decode and large m (past 256 rows, which both the H100 and
     * the H200 transpose), both layouts of B ([k, n] B: A's role taken by [k, n] B read
     * transposed): two column tiles of 144 in 2 clustered splits (288 x 4096), three of 96
     * (288 x 5120), two of 160 (300 rows, n from 7680: off the 128-row tiles, odd with [n, k] B),
     * two of 208 (416); padded strides, fp32 and fp16 C, fp16 inputs */
    static const int tm[] = {288, 288, 300, 416}, tn[] = {4096, 5120, 0, 8192};
    for (int kmaj = 0; kmaj < 2; kmaj++)
      for (int i = 0; i < 4; i++) {
        int n = tn[i] ? tn[i] : 7680 + 8 * (int)(test_rand(&rng) % 60) + kmaj;
        weft_gemm_problem_t p = problem(tm[i], n, 8 * (500 + (int)(test_rand(&rng) % 1500)),
                                        8 * (i & 1), 8 * kmaj, i % 3, i == 2 ? H : B, outs[i % 3],
                                        kmaj);
        transposed(&p);
      }
    /* a large one: 4096 x 4096 x 4096 */
    weft_gemm_problem_t big = problem(4096, 4096, 4096, 0, 0, 0, B, B, 1);
    one(&big, "large");
    /* k = 0: C = 0 */
    weft_gemm_problem_t zero = problem(77, 90, 0, 8, 8, 0, B, F, 1);
    one(&zero, "k=0");

    weft_gemm_problem_t hp = problem(1000, 1000, 1024, 0, 0, 0, B, B, 1);
    hooks_identical(&hp, 0, 0);
    hp = problem(40, 3000, 4096, 0, 0, 0, B, B, 1); /* split-K */
    hooks_identical(&hp, 0, 0);
    /* the fused scatter: segments of whole sub-tiles; of 200 rows (sub-tiles straddle two); of
     * 40 rows (a sub-tile spans three); padded C rows, both layouts, 16-bit and fp32 C */
    hp = problem(2048, 768, 256, 0, 0, 0, B, B, 1);
    scatter_emulated(&hp, 2, 0, 0);
    hp = problem(600, 1000, 512, 8, 0, 8, B, B, 1);
    scatter_emulated(&hp, 3, 0, 0);
    hp = problem(160, 520, 192, 0, 0, 4, H, F, 0);
    scatter_emulated(&hp, 4, 0, 0);
    /* cluster reductions: 64x64 tiles (4 column groups a warpgroup: up to 4 splits), 64x128
     * (8), 128x128 (16); odd m and n, fp32 and 16-bit C, both layouts */
    for (int ks = 2; ks <= 4; ks++) {
      weft_gemm_problem_t cp = problem(1 + (int)(test_rand(&rng) % 16), 8 * (200 + (int)(test_rand(&rng) % 300)) + 3,
                                       4096, 0, 0, 5, B, ks == 3 ? F : B, 1);
      cluster_reduction(&cp, ks, 0, 0);
    }
    weft_gemm_problem_t cp = problem(60, 2752, 4096, 0, 0, 0, H, H, 0);
    cluster_reduction(&cp, 5, 0, 0);
    cp = problem(100, 1000, 8192, 8, 8, 0, B, F, 1);
    cluster_reduction(&cp, 8, 128, 128);
    /* split tails: a cluster's second tile past m (15 tile-rows), [k, n] B with fp16 and fp32
     * C, padded strides; one per-GPU layer shape (8192x1376x4096) */
    hp = problem(1900, 1376, 2048, 0, 0, 0, B, B, 1);
    tail_split(&hp, 40, 0);
    hp = problem(1000 + (int)(test_rand(&rng) % 300), 8 * (100 + (int)(test_rand(&rng) % 80)),
                 8 * (256 + (int)(test_rand(&rng) % 100)), 8, 0, 4, H, F, 0);
    tail_split(&hp, 64, 0);
    hp = problem(8192, 1376, 4096, 0, 0, 0, B, B, 1);
    tail_split(&hp, comm->ops->gpu.sms, 0);
    /* the fused scatter on a split tail (its storers' skip rounds) */
    hp = problem(2048, 1376, 2048, 0, 0, 0, B, B, 1);
    int tiles, splits, sms = tail_budget(&hp, 64, 0, &tiles, &splits);
    if (sms) scatter_emulated(&hp, 2, sms, 0);
    /* the widths between multiples of 64 (the last staging box overlaps the one before it):
     * each on a fresh shape off the tile multiples, split tail with the hooks (tail_split), the
     * whole tiles with the hooks, one of every output dtype; the fused scatter on one */
    static const int widths[] = {240, 224, 208, 176};
    for (int w = 0; w < 4; w++) {
      hp = problem(1000 + (int)(test_rand(&rng) % 600), 8 * (120 + (int)(test_rand(&rng) % 200)),
                   8 * (320 + (int)(test_rand(&rng) % 200)), 8 * (w & 1), 0, 8 * (w == 2),
                   w & 1 ? H : B, outs[(w + 2) % 3], 1);
      tail_split(&hp, 64, widths[w]);
      hooks_identical(&hp, 0, widths[w]);
    }
    hp = problem(1536, 1376, 1024, 0, 0, 0, B, B, 1);
    scatter_emulated(&hp, 3, 0, 240);
    /* [k, n] B 192 wide: in a 2x1 cluster CTA 0 loads two of a stage's three B boxes, CTA 1 one */
    for (int w = 0; w < 2; w++) {
      hp = problem(1000 + (int)(test_rand(&rng) % 600), 8 * (120 + (int)(test_rand(&rng) % 200)),
                   8 * (320 + (int)(test_rand(&rng) % 200)), 8 * w, 0, 4 * w, w ? H : B,
                   outs[w + 1], 0);
      tail_split(&hp, 64, 192);
      hooks_identical(&hp, 0, 192);
    }
    graph();
    chained();
    bad_config(&big);
  }
  printf("%d of %d checks passed\n", cases - failures, cases);
  OK(weft_module_unload(mod));
  CU(cuStreamDestroy(s));
  OK(weft_comm_destroy(comm));
  return failures ? 1 : 0;
}
