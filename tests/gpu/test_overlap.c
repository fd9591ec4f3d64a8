/*
 * test_overlap.c — the overlapped tensor-parallel ops (weft_ag_gemm, weft_gemm_rs, weft_gemm_ar)
 * against float64 references that each rank computes on its GPU from every rank's inputs (a
 * rank regenerates its peers' random inputs from their seeds): random shapes (m not a multiple
 * of tile x world, odd n, wider row strides), both B layouts, bf16 and fp16 inputs, bf16, fp16
 * and fp32 outputs, each op's overlapped form(s), its sequential form and AUTO; the gathered A of
 * AG+GEMM bit for bit; that GEMM+AR's LL form runs where it takes the shape (and only there). Inputs are drawn fresh each run; outputs, the gathered A and the
 * workspaces are poisoned (NaN) before each call; every element is checked. Then the three ops
 * (GEMM+AR in three forms) captured in one CUDA graph and replayed, and 200 back-to-back calls of
 * each op (and of GEMM+AR's LL form) with random straggler delays (a hang is a timeout, which
 * fails the test).
 * Tolerances, ||out - ref|| / ||ref||: 1e-4 with fp32 outputs, 1e-2 with 16-bit ones (GEMM+RS and
 * GEMM+AR round each rank's partial product to the output type before the sum, as cuBLAS + NCCL
 * do; AG+GEMM is one GEMM: 5e-3 as in test_gemm.c).
 */
// weft-test: ranks=2,4 timeout=900
#include <math.h>

#include "gpu_test.h"
#include "gemm_test.h"
#include "jit/jit.h" /* weft_autotune_forget */

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

static void call(tcase_t *t) {
  weft_gemm_layout_t l = t->kmaj ? WEFT_GEMM_LAYOUT_NK : WEFT_GEMM_LAYOUT_KN;
  if (t->op == OP_AG)
    OK(weft_ag_gemm(comm, VP(t->a), t->sym, VP(t->b), (int)t->ldb, VP(t->c), (int)t->ldc, t->m,
                    t->n, t->k, t->in, t->out, l, t->algo, s));
  else if (t->op == OP_RS)
    OK(weft_gemm_rs(comm, VP(t->a), (int)t->lda, VP(t->b), (int)t->ldb, VP(t->c), t->sym, t->m,
                    t->n, t->k, t->in, t->out, l, t->algo, s));
  else
    OK(weft_gemm_ar(comm, VP(t->a), (int)t->lda, VP(t->b), (int)t->ldb, VP(t->c), t->sym, t->m,
                    t->n, t->k, t->in, t->out, l, t->algo, s));
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

/* A random problem of op: sizes off every tile multiple; the same on every rank. */
static tcase_t random_case(int op, weft_algo_t algo, int large) {
  static const weft_dtype_t ins[] = {WEFT_DTYPE_BF16, WEFT_DTYPE_FP16},
                            outs[] = {WEFT_DTYPE_BF16, WEFT_DTYPE_FP16, WEFT_DTYPE_FP32};
  int kmaj = (int)(test_rand(&shared) & 1);
  int n = 1 + (int)(test_rand(&shared) % (large ? 1200 : 700));
  /* contiguous [k, n] B needs 16-byte rows; so does C for the fused scatter's TMA stores */
  if (!kmaj || (op == OP_RS && algo == WEFT_ALGO_SM)) n = 8 * (1 + n / 8);
  int k = 8 * (1 + (int)(test_rand(&shared) % (large ? 96 : 48)));
  int rows = large ? 600 + (int)(test_rand(&shared) % 900) : 1 + (int)(test_rand(&shared) % 300);
  int m = op == OP_AG ? rows : op == OP_RS ? world * rows : world * rows + (int)(test_rand(&shared) % 2 ? 0 : test_rand(&shared) % world);
  tcase_t t = make(op, m, n, k, kmaj, ins[test_rand(&shared) & 1], outs[test_rand(&shared) % 3], algo);
  t.pad_a = 8 * (int)(test_rand(&shared) % 3);
  t.pad_b = kmaj || test_rand(&shared) % 2 ? 8 * (int)(test_rand(&shared) % 3) : 0;
  t.pad_c = (int)(test_rand(&shared) % 5);
  t.in_place = op == OP_AG && (test_rand(&shared) & 1);
  return t;
}

/* The three ops captured in one graph, replayed three times. */
static void graph(void) {
  enum { N = 8 };
  tcase_t t[N] = {make(OP_AG, 700, 520, 256, 1, WEFT_DTYPE_BF16, WEFT_DTYPE_BF16, WEFT_ALGO_COPY_ENGINE),
                  make(OP_AG, 512, 264, 256, 1, WEFT_DTYPE_BF16, WEFT_DTYPE_BF16, WEFT_ALGO_COPY_ENGINE),
                  make(OP_RS, world * 530, 264, 320, 0, WEFT_DTYPE_FP16, WEFT_DTYPE_FP32, WEFT_ALGO_COPY_ENGINE),
                  make(OP_RS, world * 530, 264, 320, 1, WEFT_DTYPE_BF16, WEFT_DTYPE_BF16, WEFT_ALGO_SM),
                  make(OP_AR, world * 512, 384, 256, 1, WEFT_DTYPE_BF16, WEFT_DTYPE_BF16, WEFT_ALGO_COPY_ENGINE),
                  make(OP_AR, 777, 200, 128, 0, WEFT_DTYPE_FP16, WEFT_DTYPE_FP32, WEFT_ALGO_SM),
                  make(OP_AR, 64, 256, 256, 1, WEFT_DTYPE_BF16, WEFT_DTYPE_BF16, WEFT_ALGO_LL),
                  make(OP_AR, 128, 9216, 512, 1, WEFT_DTYPE_BF16, WEFT_DTYPE_BF16, WEFT_ALGO_TWO_SHOT)};
  for (int i = 0; i < N; i++) {
    setup(&t[i]);
    poison_all(&t[i], 1);
    call(&t[i]); /* compiles and loads before the capture */
    verify(&t[i], " (before capture)");
  }
  CU(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
  for (int i = 0; i < N; i++) call(&t[i]);
  CUgraph g;
  CUgraphExec ge;
  CU(cuStreamEndCapture(s, &g));
  CU(cuGraphInstantiateWithFlags(&ge, g, 0));
  for (int rep = 0; rep < 3; rep++) {
    poison_all(t, N);
    CU(cuGraphLaunch(ge, s));
    for (int i = 0; i < N; i++) verify(&t[i], " (graph replay)");
  }
  CU(cuGraphExecDestroy(ge));
  CU(cuGraphDestroy(g));
  for (int i = 0; i < N; i++) teardown(&t[i]);
}

/* Call i's form in stress: every op's overlapped forms, the last call (the one checked)
 * overlapped (SM: GEMM + ReduceScatter's fused scatter, GEMM + AllReduce's consumer). */
static weft_algo_t overlapped_forms(int op, int i) {
  return i % 10 == 8             ? WEFT_ALGO_SEQUENTIAL
         : op != OP_AG && i % 2 ? WEFT_ALGO_SM
                                : WEFT_ALGO_COPY_ENGINE;
}
/* GEMM + AllReduce's LL form, alternating with the sequential form (whose AllReduce takes LL
 * at small sizes too: the two share the LL area's epochs and parities); the last call LL. */
static weft_algo_t ll_forms(int op, int i) {
  (void)op;
  return i % 3 == 1 ? WEFT_ALGO_SEQUENTIAL : WEFT_ALGO_LL;
}
/* GEMM + AllReduce's two-shot epilogue, alternating with the sequential and LL forms; the last
 * call two-shot. */
static weft_algo_t two_shot_forms(int op, int i) {
  (void)op;
  return i % 3 == 2 ? WEFT_ALGO_SEQUENTIAL : i % 5 == 3 ? WEFT_ALGO_LL : WEFT_ALGO_TWO_SHOT;
}

/* A random straggler: one call in three, this rank's stream first spins up to 300 us. */
static void straggle(void) {
  if (test_rand(&mine) % 3) return;
  unsigned long long ns = test_rand(&mine) % 300000;
  void *a[] = {&ns};
  weft_launch_config_t c = WEFT_LAUNCH_CONFIG_INIT;
  OK(weft_kernel_launch(k_delay, &c, a, s));
}

/* 200 back-to-back calls of t in the forms form(op, i) with random stragglers, then the last
 * result checked. */
static void stress(tcase_t t, weft_algo_t (*form)(int op, int i)) {
  setup(&t);
  poison_all(&t, 1);
  for (int i = 0; i < 200; i++) {
    straggle();
    t.algo = form(t.op, i);
    call(&t);
  }
  verify(&t, " (after 200 calls with stragglers)");
  teardown(&t);
}

/* weft_gemm_rs (each of its forms in turn) and a two-shot weft_gemm_ar on one workspace, as
 * python/weft calls them, 100 pairs with random stragglers, the last pair checked. A rank done
 * with its gemm_rs (no form ends with a handshake) may start the gemm_ar while a peer still reads
 * its workspace for gemm_rs: the two-shot form, which once staged there, must not write it. */
static void mixed(void) {
  tcase_t rs = make(OP_RS, world * 128, 9216, 512, 1, WEFT_DTYPE_BF16, WEFT_DTYPE_BF16,
                    WEFT_ALGO_COPY_ENGINE);
  tcase_t ar = make(OP_AR, 128, 9216, 512, 1, WEFT_DTYPE_BF16, WEFT_DTYPE_BF16, WEFT_ALGO_TWO_SHOT);
  setup(&rs);
  setup(&ar);
  void *own = ar.sym;
  ar.sym = rs.sym; /* rs's is the larger: world times the rows */
  poison(&ar);
  poison_all(&rs, 1);
  static const weft_algo_t rs_forms[] = {WEFT_ALGO_COPY_ENGINE, WEFT_ALGO_SM, WEFT_ALGO_SEQUENTIAL};
  for (int i = 0; i < 100; i++) {
    straggle();
    rs.algo = rs_forms[i % 3];
    call(&rs);
    straggle();
    call(&ar);
  }
  verify(&rs, " (after 100 pairs with a two-shot gemm_ar on its workspace)");
  verify(&ar, " (after 100 pairs with gemm_rs on its workspace)");
  ar.sym = own;
  teardown(&ar);
  teardown(&rs);
}

/* The autotuner on each op (WEFT_ALGO_AUTO, shapes drawn fresh so that no disk entry exists):
 * the first call times the candidate plans on its own buffers, then runs the winner (checked);
 * the second is answered by the process's table; with the table forgotten, the third by the
 * disk entry the first wrote (no trials: the count of timed decisions is unchanged); and a new
 * shape first seen inside a graph capture takes the heuristic's plan (checked after replay). */
static void autotune(void) {
  OK(weft_comm_set_autotune(comm, 1));
  for (int op = 0; op < 3; op++) {
    int m = 512 + 64 * (int)(test_rand(&shared) % 8);
    tcase_t t = make(op, op == OP_AG ? m : world * m, 1024, 256 + 64 * (int)(test_rand(&shared) % 4),
                     1, WEFT_DTYPE_BF16, WEFT_DTYPE_BF16, WEFT_ALGO_AUTO);
    setup(&t);
    unsigned long before = comm->tune_trials;
    const char *when[] = {" (autotuned: trials)", " (autotuned: table)", " (autotuned: disk)"};
    for (int i = 0; i < 3; i++) {
      if (i == 2) weft_autotune_forget(comm);
      poison_all(&t, 1);
      call(&t);
      verify(&t, when[i]);
    }
    cases++;
    if (comm->tune_trials != before + 1) {
      failures++;
      printf("[%d] FAIL %s autotune: %lu timed decisions for one shape (expected 1)\n", me,
             op_names[op], comm->tune_trials - before);
    }
    teardown(&t);
  }
  /* a shape first seen while capturing */
  tcase_t t = make(OP_RS, world * 704, 768, 320, 1, WEFT_DTYPE_BF16, WEFT_DTYPE_BF16, WEFT_ALGO_AUTO);
  setup(&t);
  unsigned long before = comm->tune_trials;
  CU(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
  call(&t);
  CUgraph g;
  CUgraphExec ge;
  CU(cuStreamEndCapture(s, &g));
  CU(cuGraphInstantiateWithFlags(&ge, g, 0));
  poison_all(&t, 1);
  CU(cuGraphLaunch(ge, s));
  verify(&t, " (autotune on, first seen in a capture)");
  cases++;
  if (comm->tune_trials != before) {
    failures++;
    printf("[%d] FAIL autotune ran trials during a capture\n", me);
  }
  CU(cuGraphExecDestroy(ge));
  CU(cuGraphDestroy(g));
  teardown(&t);
  OK(weft_comm_set_autotune(comm, 0));
}

int main(void) {
  test_precompile(gemm_test_src, "test_overlap.cu");
  comm = test_init();
  me = comm->rank;
  world = comm->world;
  unsigned long long seed = test_seed(comm);
  base = seed / 1000003ull;
  shared = base * 2654435761ull | 1;
  mine = seed | 1;
  weft_module_t *mod;
  OK(weft_module_load(comm, gemm_test_src, "test_overlap.cu", NULL, 0, &mod));
  k_fill = test_kernel(mod, "fill");
  k_ref = test_kernel(mod, "reference");
  k_cmp = test_kernel(mod, "compare");
  k_delay = test_kernel(mod, "delay");
  CU(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
  /* SM: GEMM + ReduceScatter (fused scatter) and GEMM + AllReduce */
  const weft_algo_t algos[] = {WEFT_ALGO_COPY_ENGINE, WEFT_ALGO_SEQUENTIAL, WEFT_ALGO_AUTO, WEFT_ALGO_SM};

  trace = getenv("WEFT_TEST_TRACE") != NULL;
  /* WEFT_TEST_OPS (e.g. "gemm_rs,gemm_ar"): only these ops' cases */
  const char *only = getenv("WEFT_TEST_OPS");
  for (int op = 0; op < 3; op++) {
    if (only && !strstr(only, op_names[op])) continue;
    for (int a = 0; a < (op == OP_AG ? 3 : 4); a++)
      for (int i = 0; i < 4; i++) one(random_case(op, algos[a], i >= 2));
    /* AUTO's overlapped form on a larger problem, segments of whole 64-row sub-tiles (RS/AR) */
    one(make(op, op == OP_AG ? 1100 : world * 1024, 1000, 512, 1, WEFT_DTYPE_BF16,
             WEFT_DTYPE_BF16, WEFT_ALGO_AUTO));
    /* AG: m a multiple of the tile's rows, where the GEMM reads the own rows from a (A_OWN) and
     * copies them into the gathered A after the pushes; in place, where it reads the slot */
    if (op == OP_AG) {
      one(make(op, 512, 1000, 512, 1, WEFT_DTYPE_BF16, WEFT_DTYPE_BF16, WEFT_ALGO_COPY_ENGINE));
      one(make(op, 256, 520, 256, 0, WEFT_DTYPE_FP16, WEFT_DTYPE_FP32, WEFT_ALGO_COPY_ENGINE));
      tcase_t t =
          make(op, 384, 520, 256, 1, WEFT_DTYPE_BF16, WEFT_DTYPE_BF16, WEFT_ALGO_COPY_ENGINE);
      t.in_place = 1;
      one(t);
    }
    /* the fused scatter with segments of whole sub-tiles, and m = 320: segments of 160, 80 or
     * 40 rows at 2, 4 or 8 ranks, so that 64-row sub-tiles straddle two or three segments */
    if (op == OP_RS) {
      one(make(op, world * 1024, 1000, 512, 1, WEFT_DTYPE_BF16, WEFT_DTYPE_BF16, WEFT_ALGO_SM));
      if (320 % world == 0)
        one(make(op, 320, 520, 192, 0, WEFT_DTYPE_FP16, WEFT_DTYPE_FP16, WEFT_ALGO_SM));
    }
    /* GEMM + AllReduce's copy-engine form (its reduction stores into every rank's c): segments
     * of 192 rows, fp32 C, and segments of 200 rows (not whole 64-row sub-tiles); segments of
     * whole cluster tiles (256 and 512 rows) with 16-bit C, where the own segment is reduced in
     * the GEMM's epilogue (WEFT_GEMM_AR_OWN; 512 rows: two chunks): n a tile's multiple or not,
     * both layouts, bf16 and fp16 */
    if (op == OP_AR) {
      one(make(op, world * 192, 520, 256, 1, WEFT_DTYPE_BF16, WEFT_DTYPE_BF16, WEFT_ALGO_COPY_ENGINE));
      one(make(op, world * 256, 264, 320, 0, WEFT_DTYPE_FP16, WEFT_DTYPE_FP32, WEFT_ALGO_COPY_ENGINE));
      one(make(op, world * 200, 520, 256, 1, WEFT_DTYPE_BF16, WEFT_DTYPE_BF16, WEFT_ALGO_COPY_ENGINE));
      one(make(op, world * 512, 520, 256, 1, WEFT_DTYPE_BF16, WEFT_DTYPE_BF16, WEFT_ALGO_COPY_ENGINE));
      one(make(op, world * 256, 1024, 320, 0, WEFT_DTYPE_FP16, WEFT_DTYPE_FP16, WEFT_ALGO_COPY_ENGINE));
      /* k per rank at the summers' threshold or over (GEMM_AR_SUMMERS_K_PER_RANK x world,
       * gemm_rs.c; 12288 at 4 ranks): the storers' lanes sum the own rows,
       * on more own tiles than the grid's last round (n not a tile's multiple) */
      one(make(op, world * 2048, 4040, 12288, 1, WEFT_DTYPE_BF16, WEFT_DTYPE_BF16, WEFT_ALGO_COPY_ENGINE));
      /* one row of 128-row tiles asked for on the copy engine (segments of 128 / world rows,
       * or its sequential fallback where the GEMM splits k): 100 rows (the second sub-tile
       * part-filled), [k, n] B, fp32 C; stop 32's column-form cases, kept after its revert */
      one(make(op, 128, 9216, 2048, 1, WEFT_DTYPE_BF16, WEFT_DTYPE_BF16, WEFT_ALGO_COPY_ENGINE));
      one(make(op, 100, 9216, 1536, 0, WEFT_DTYPE_FP16, WEFT_DTYPE_FP32, WEFT_ALGO_COPY_ENGINE));
    }
    /* GEMM + AllReduce's LL form (the direct-store kernel, rows of 8-byte multiples): KN and
     * NK, fp32 C, a clustered split-K decode shape, odd n (LL refuses: sequential), and random
     * small shapes */
    if (op == OP_AR) {
      one_form(make(op, 100, 520, 256, 1, WEFT_DTYPE_BF16, WEFT_DTYPE_BF16, WEFT_ALGO_LL), 1);
      one_form(make(op, 17, 1000, 512, 0, WEFT_DTYPE_FP16, WEFT_DTYPE_FP32, WEFT_ALGO_LL), 1);
      one_form(make(op, 128, 2048, 1024, 0, WEFT_DTYPE_BF16, WEFT_DTYPE_BF16, WEFT_ALGO_LL), 1);
      one_form(make(op, 64, 333, 256, 1, WEFT_DTYPE_BF16, WEFT_DTYPE_BF16, WEFT_ALGO_LL), 0);
      for (int i = 0; i < 4; i++) one(random_case(op, WEFT_ALGO_LL, 0));
    }
    /* GEMM + AllReduce's two-shot epilogue (one row of unsplit 128x128 tiles: m 65-128, at
     * least 67 tile columns; or 128x64 where 128x128 would split in k, 99-132 tile columns): a
     * full tile row, NK; m = 100 (the second sub-tile part-filled) with n = 9000 (the last tile
     * column part-filled, the segments uneven), KN, fp16; AUTO's choice at m = 128; n = 8448
     * (132 tiles of 64 columns, in place of 66 128x128 ones split in k) and m = 96, n = 8192 (128
     * of them, in place of two rows of 64x128); the sequential form where it does not take it: fp32 C,
     * m = 64 (64-row tiles), n = 4096 (split tiles, 64 of 64 columns) */
    if (op == OP_AR) {
      one_form(make(op, 128, 9216, 2048, 1, WEFT_DTYPE_BF16, WEFT_DTYPE_BF16, WEFT_ALGO_TWO_SHOT), 1);
      one_form(make(op, 100, 9000, 1536, 0, WEFT_DTYPE_FP16, WEFT_DTYPE_FP16, WEFT_ALGO_TWO_SHOT), 1);
      one_form(make(op, 128, 12288, 1024, 1, WEFT_DTYPE_BF16, WEFT_DTYPE_BF16, WEFT_ALGO_AUTO), 1);
      one_form(make(op, 128, 9216, 1024, 1, WEFT_DTYPE_BF16, WEFT_DTYPE_FP32, WEFT_ALGO_TWO_SHOT), 0);
      one_form(make(op, 64, 9216, 1024, 1, WEFT_DTYPE_BF16, WEFT_DTYPE_BF16, WEFT_ALGO_TWO_SHOT), 0);
      one_form(make(op, 128, 8448, 1024, 1, WEFT_DTYPE_FP16, WEFT_DTYPE_BF16, WEFT_ALGO_TWO_SHOT), 1);
      one_form(make(op, 96, 8192, 2048, 0, WEFT_DTYPE_BF16, WEFT_DTYPE_BF16, WEFT_ALGO_TWO_SHOT), 1);
      one_form(make(op, 128, 4096, 1024, 1, WEFT_DTYPE_BF16, WEFT_DTYPE_BF16, WEFT_ALGO_TWO_SHOT), 0);
      /* c 8 bytes off 16-byte alignment (its sums' TMA stores need it): the sequential form; and
       * the copy-engine form's reduction after the GEMM in place of its own-segment epilogue */
      tcase_t off = make(op, 128, 9216, 1024, 1, WEFT_DTYPE_BF16, WEFT_DTYPE_BF16, WEFT_ALGO_TWO_SHOT);
      off.c_off = 8;
      one_form(off, 0);
      off = make(op, world * 256, 1024, 320, 0, WEFT_DTYPE_FP16, WEFT_DTYPE_FP16, WEFT_ALGO_COPY_ENGINE);
      off.c_off = 8;
      one(off);
    }
    /* k = 0 */
    one(make(op, op == OP_AG ? 70 : world * 70, 90, 0, 1, WEFT_DTYPE_BF16, WEFT_DTYPE_FP32,
             WEFT_ALGO_COPY_ENGINE));
  }
  if (!only) {
    autotune();
    graph();
    for (int op = 0; op < 3; op++)
      stress(make(op, op == OP_AG ? 640 : world * 600, 512, 256, 1, WEFT_DTYPE_BF16, WEFT_DTYPE_BF16,
                  WEFT_ALGO_COPY_ENGINE),
             overlapped_forms);
    stress(make(OP_AR, 96, 512, 256, 1, WEFT_DTYPE_BF16, WEFT_DTYPE_BF16, WEFT_ALGO_LL), ll_forms);
    stress(make(OP_AR, 112, 9216, 512, 1, WEFT_DTYPE_BF16, WEFT_DTYPE_BF16, WEFT_ALGO_TWO_SHOT),
           two_shot_forms);
    mixed();
  }

  printf("[%d] %d of %d checks passed\n", me, cases - failures, cases);
  OK(weft_module_unload(mod));
  CU(cuStreamDestroy(s));
  OK(weft_comm_destroy(comm));
  return failures ? 1 : 0;
}
