/*
 * overlap_test.h — what the tests of the overlapped ops share (test_overlap.c,
 * test_overlap_shapes.c): one problem of one op as a case (its buffers and its float64
 * reference, computed on the GPU from every rank's inputs, which any rank can draw again from
 * their seeds), its poisoning, the call and the check of every element. One test program
 * includes it once.
 */
#ifndef WEFT_OVERLAP_TEST_H
#define WEFT_OVERLAP_TEST_H

#include <math.h>

#include "gpu_test.h"
#include "gemm_test.h"

enum { OP_AG, OP_RS, OP_AR };
static const char *op_names[] = {"ag_gemm", "gemm_rs", "gemm_ar"};

static weft_comm_t *comm;
static weft_kernel_t *k_fill, *k_ref, *k_cmp, *k_delay;
static CUstream s;
static int me, world, failures, cases;
static unsigned long long base;  /* the same on every rank */
static unsigned long long shared; /* shapes: the same sequence on every rank */
static unsigned long long mine;   /* stragglers: this rank's own sequence */

static void launch(weft_kernel_t *k, void **args) { gemm_test_launch(k, args, s); }

static size_t out_size(weft_dtype_t t) { return t == WEFT_DTYPE_FP32 ? 4 : 2; }

/* Rank q's input `which` (0: A, 1: B) of case id: any rank can draw it. */
static unsigned long long data_seed(int q, int which, int id) {
  unsigned long long x = base * 0x9E3779B97F4A7C15ull ^ ((unsigned long long)id << 20) ^
                         ((unsigned long long)q << 4) ^ (unsigned long long)which;
  return test_rand(&x) | 1;
}

static void fill(CUdeviceptr p, size_t n, int fp16, unsigned long long seed) {
  unsigned long long nn = n;
  void *a[] = {&p, &nn, &fp16, &seed};
  launch(k_fill, a);
}

static void reference(CUdeviceptr ref, CUdeviceptr a, CUdeviceptr b, int m, int n, int k,
                      long long lda, long long ldb, int kmaj, int fp16, int accumulate) {
  void *args[] = {&ref, &a, &b, &m, &n, &k, &lda, &ldb, &kmaj, &fp16, &accumulate};
  launch(k_ref, args);
}

/* Every element of c ([m, ldc], columns n.. poisoned) against ref ([m, n]). */
static void check(CUdeviceptr c, CUdeviceptr ref, int m, int n, long long ldc, weft_dtype_t out,
                  double tol, const char *what) {
  unsigned long long b[2];
  double err = gemm_test_compare(comm, k_cmp, s, c, ref, m, n, ldc, out, b);
  int ok = b[0] == 0 && b[1] == 0 && err <= tol;
  cases++;
  if (!ok) failures++;
  printf("[%d] %s %s: err %.2e (tol %.0e), %llu non-finite, %llu padding changed\n", me,
         ok ? "ok  " : "FAIL", what, err, tol, b[0], b[1]);
  fflush(stdout);
}

static void same_bytes(CUdeviceptr got, CUdeviceptr want, size_t bytes, const char *what) {
  OK(weft_stream_synchronize(comm, s));
  unsigned char *g = malloc(bytes), *w = malloc(bytes);
  CU(cuMemcpyDtoH(g, got, bytes));
  CU(cuMemcpyDtoH(w, want, bytes));
  size_t i = 0;
  while (i < bytes && g[i] == w[i]) i++;
  cases++;
  if (i < bytes) failures++;
  if (i < bytes)
    printf("[%d] FAIL %s: byte %zu of %zu differs (0x%02x, expected 0x%02x)\n", me, what, i, bytes,
           g[i], w[i]);
  else
    printf("[%d] ok   %s: %zu bytes bit for bit\n", me, what, bytes);
  free(g);
  free(w);
}

static CUdeviceptr dev_alloc(size_t bytes) {
  CUdeviceptr p;
  CU(cuMemAlloc(&p, bytes + 16));
  return p;
}
static void *sym_alloc(size_t bytes) {
  void *p;
  OK(weft_malloc(comm, bytes + 16, &p));
  return p;
}
#define DP(p) ((CUdeviceptr)(uintptr_t)(p))
#define VP(p) ((void *)(uintptr_t)(p))

/* One problem of one op, its buffers and its reference. m: AG rows per rank; RS/AR all rows. */
typedef struct tcase {
  int op, id;
  int m, n, k, kmaj, in_place, pad_a, pad_b, pad_c;
  int c_off; /* AR: c starts this many bytes into its symmetric allocation */
  weft_dtype_t in, out;
  weft_algo_t algo;
  /* buffers */
  CUdeviceptr a, b, c, ref, afull;
  void *sym;  /* AG: the gathered A; RS / AR: the workspace */
  void *csym; /* AR: c */
  long long lda, ldb, ldc;
  int c_rows;
  size_t c_bytes, sym_bytes;
} tcase_t;

static const char *algo_name(weft_algo_t a) {
  return a == WEFT_ALGO_AUTO ? "auto" : a == WEFT_ALGO_COPY_ENGINE ? "overlapped"
         : a == WEFT_ALGO_SM ? "sm" : a == WEFT_ALGO_LL ? "ll"
         : a == WEFT_ALGO_TWO_SHOT ? "two_shot" : "sequential";
}

static void describe(const tcase_t *t, char *buf, size_t n) {
  snprintf(buf, n, "%s %-10s m %5d n %5d k %5d %s %s->%s%s", op_names[t->op], algo_name(t->algo),
           t->m, t->n, t->k, t->kmaj ? "NK" : "KN", t->in == WEFT_DTYPE_FP16 ? "fp16" : "bf16",
           t->out == WEFT_DTYPE_FP32 ? "fp32" : t->out == WEFT_DTYPE_FP16 ? "fp16" : "bf16",
           t->in_place ? " in place" : "");
}

/* Allocates and fills the inputs, computes the reference (collective: symmetric buffers). */
static void setup(tcase_t *t) {
  int fp16 = t->in == WEFT_DTYPE_FP16, brows = t->kmaj ? t->n : t->k;
  size_t eo = out_size(t->out);
  t->ldb = (t->kmaj ? t->k : t->n) + t->pad_b;
  t->b = dev_alloc((size_t)brows * t->ldb * 2);
  if (t->op == OP_AG) {
    int M = world * t->m;
    t->lda = t->k;
    t->ldc = t->n + t->pad_c;
    t->c_rows = M;
    size_t shard = (size_t)t->m * t->k * 2;
    t->afull = dev_alloc(shard * world);
    for (int q = 0; q < world; q++)
      fill(t->afull + q * shard, (size_t)t->m * t->k, fp16, data_seed(q, 0, t->id));
    t->sym_bytes = shard * world;
    t->sym = sym_alloc(t->sym_bytes);
    t->a = t->in_place ? DP(t->sym) + me * shard : dev_alloc(shard);
    fill(t->b, (size_t)brows * t->ldb, fp16, data_seed(me, 1, t->id));
    t->ref = dev_alloc((size_t)M * t->n * 8);
    reference(t->ref, t->afull, t->b, M, t->n, t->k, t->lda, t->ldb, t->kmaj, fp16, 0);
  } else {
    int rows = t->op == OP_RS ? t->m / world : t->m, r0 = t->op == OP_RS ? me * rows : 0;
    t->lda = t->k + t->pad_a;
    t->ldc = t->n;
    t->c_rows = rows;
    size_t na = (size_t)t->m * t->lda, nb = (size_t)brows * t->ldb;
    t->a = dev_alloc(na * 2);
    size_t ws;
    OK(weft_gemm_rs_workspace_size(comm, t->m, t->n, t->out, &ws));
    t->sym_bytes = ws;
    t->sym = sym_alloc(ws);
    if (t->op == OP_AR) t->csym = sym_alloc((size_t)t->m * t->n * eo + (size_t)t->c_off);
    /* the reference sums every rank's partial of these rows, drawn again from its seeds */
    CUdeviceptr qa = dev_alloc(na * 2), qb = dev_alloc(nb * 2);
    t->ref = dev_alloc((size_t)rows * t->n * 8);
    for (int q = 0; q < world; q++) {
      fill(qa, na, fp16, data_seed(q, 0, t->id));
      fill(qb, nb, fp16, data_seed(q, 1, t->id));
      reference(t->ref, qa + (size_t)r0 * t->lda * 2, qb, rows, t->n, t->k, t->lda, t->ldb,
                t->kmaj, fp16, q > 0);
    }
    OK(weft_stream_synchronize(comm, s));
    CU(cuMemFree(qa));
    CU(cuMemFree(qb));
    fill(t->a, na, fp16, data_seed(me, 0, t->id));
    fill(t->b, nb, fp16, data_seed(me, 1, t->id));
  }
  t->c_bytes = (size_t)t->c_rows * t->ldc * eo;
  if (t->op != OP_AR) t->c = dev_alloc(t->c_bytes);
  else t->c = DP(t->csym) + (size_t)t->c_off;
  OK(weft_stream_synchronize(comm, s));
}

/* Poisons what the op writes (and, for AG, this rank's shard in place again). */
static void poison(tcase_t *t) {
  CU(cuMemsetD8Async(t->c, 0xFF, t->c_bytes, s));
  CU(cuMemsetD8Async(DP(t->sym), 0xFF, t->sym_bytes, s));
  if (t->op == OP_AG) {
    size_t shard = (size_t)t->m * t->k * 2;
    CU(cuMemcpyDtoDAsync(t->a, t->afull + me * shard, shard, s));
  }
}

/* Poisons every case of t[0..n) and waits for every rank's poison before any op writes, so that
 * no rank's poison lands on what a peer's call has already stored into its symmetric buffers
 * (the two-shot epilogue once staged in the workspace, and a fast peer's partials were lost). */
static void poison_all(tcase_t *t, int n) {
  for (int i = 0; i < n; i++) poison(&t[i]);
  OK(weft_stream_barrier(comm, s));
}

static weft_status_t call_as(tcase_t *t, weft_algo_t algo) {
  weft_gemm_layout_t l = t->kmaj ? WEFT_GEMM_LAYOUT_NK : WEFT_GEMM_LAYOUT_KN;
  if (t->op == OP_AG)
    return weft_ag_gemm(comm, VP(t->a), t->sym, VP(t->b), (int)t->ldb, VP(t->c), (int)t->ldc, t->m,
                        t->n, t->k, t->in, t->out, l, algo, s);
  if (t->op == OP_RS)
    return weft_gemm_rs(comm, VP(t->a), (int)t->lda, VP(t->b), (int)t->ldb, VP(t->c), t->sym,
                        t->m, t->n, t->k, t->in, t->out, l, algo, s);
  return weft_gemm_ar(comm, VP(t->a), (int)t->lda, VP(t->b), (int)t->ldb, VP(t->c), t->sym, t->m,
                      t->n, t->k, t->in, t->out, l, algo, s);
}

/* The call in t's form. Ranks that share a GPU have no copy-engine form (weft_ops_engine_form):
 * asked for, it must be refused with WEFT_STATUS_NOT_SUPPORTED, enqueueing nothing, and AUTO
 * runs in its place (what a caller would do), so the case still checks a result. */
static void call(tcase_t *t) {
  if (t->algo == WEFT_ALGO_COPY_ENGINE && comm->gpu_shared) {
    weft_status_t st = call_as(t, WEFT_ALGO_COPY_ENGINE);
    if (st != WEFT_STATUS_NOT_SUPPORTED) {
      cases++, failures++;
      printf("[%d] FAIL %s's copy-engine form on a shared GPU: %s (not supported expected)\n", me,
             op_names[t->op], weft_get_error_string(st));
    }
    OK(call_as(t, WEFT_ALGO_AUTO));
    return;
  }
  OK(call_as(t, t->algo));
}

static void verify(tcase_t *t, const char *when) {
  char what[200], d[160];
  describe(t, d, sizeof d);
  snprintf(what, sizeof what, "%s%s", d, when);
  double tol = t->out == WEFT_DTYPE_FP32 ? 1e-4 : t->op == OP_AG ? 5e-3 : 1e-2;
  check(t->c, t->ref, t->c_rows, t->n, t->ldc, t->out, tol, what);
  if (t->op == OP_AG) {
    snprintf(what, sizeof what, "%s: gathered A%s", d, when);
    same_bytes(DP(t->sym), t->afull, (size_t)world * t->m * t->k * 2, what);
  }
}

static void teardown(tcase_t *t) {
  OK(weft_stream_synchronize(comm, s));
  OK(weft_comm_barrier(comm)); /* no peer still pushes into the symmetric buffers */
  if (!(t->op == OP_AG && t->in_place)) CU(cuMemFree(t->a));
  CU(cuMemFree(t->b));
  CU(cuMemFree(t->ref));
  if (t->afull) CU(cuMemFree(t->afull));
  if (t->op != OP_AR) CU(cuMemFree(t->c));
  if (t->csym) OK(weft_free(comm, t->csym));
  OK(weft_free(comm, t->sym));
}

static int next_id;
static tcase_t make(int op, int m, int n, int k, int kmaj, weft_dtype_t in, weft_dtype_t out,
                    weft_algo_t algo) {
  tcase_t t;
  memset(&t, 0, sizeof t);
  t.op = op, t.id = next_id++, t.m = m, t.n = n, t.k = k, t.kmaj = kmaj, t.in = in, t.out = out;
  t.algo = algo;
  return t;
}

/* WEFT_TEST_TRACE=1: each step of each case on stderr as it starts (where a run stops). */
static int trace;
static void step(const tcase_t *t, const char *what) {
  if (!trace) return;
  char d[160];
  describe(t, d, sizeof d);
  fprintf(stderr, "[%d] %.3f s %s: %s\n", me, (double)weft_now_ns() / 1e9, d, what);
}

/* One case: set up, poison, call, check. fused >= 0 (GEMM + AllReduce asked for WEFT_ALGO_LL or
 * the two-shot epilogue: WEFT_ALGO_TWO_SHOT, or AUTO where it takes the shape): also whether that
 * form ran (1) or the sequential one (0), from the workspace's first bytes: the sequential form
 * fills them with the partial product, the LL and two-shot forms leave them poisoned. */
static void one_form(tcase_t t, int fused) {
  int ll = t.algo == WEFT_ALGO_LL;
  step(&t, "setup");
  setup(&t);
  poison_all(&t, 1);
  step(&t, "call");
  call(&t);
  step(&t, "verify");
  verify(&t, "");
  if (fused >= 0) {
    unsigned char w[256];
    char d[160];
    OK(weft_stream_synchronize(comm, s));
    CU(cuMemcpyDtoH(w, DP(t.sym), sizeof w));
    int untouched = 1;
    for (size_t i = 0; i < sizeof w; i++) untouched &= w[i] == 0xFF;
    describe(&t, d, sizeof d);
    cases++;
    if (untouched != fused) failures++;
    const char *form = ll ? "LL" : "two-shot";
    printf("[%d] %s %s: the %s form ran (%s expected)\n", me, untouched == fused ? "ok  " : "FAIL",
           d, untouched ? form : "sequential", fused ? form : "sequential");
  }
  step(&t, "teardown");
  teardown(&t);
}

static void one(tcase_t t) { one_form(t, -1); }

/* The communicator, the seeds, the test kernels (compiled first: a CPU-only machine still checks
 * them) and the stream. */
static weft_module_t *overlap_test_init(const char *name) {
  weft_module_t *mod;
  test_precompile(gemm_test_src, name);
  comm = test_init();
  me = comm->rank;
  world = comm->world;
  unsigned long long seed = test_seed(comm);
  base = seed / 1000003ull;
  shared = base * 2654435761ull | 1;
  mine = seed | 1;
  OK(weft_module_load(comm, gemm_test_src, name, NULL, 0, &mod));
  k_fill = test_kernel(mod, "fill");
  k_ref = test_kernel(mod, "reference");
  k_cmp = test_kernel(mod, "compare");
  k_delay = test_kernel(mod, "delay");
  CU(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
  trace = getenv("WEFT_TEST_TRACE") != NULL;
  return mod;
}

#endif
