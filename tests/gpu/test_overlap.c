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
#include "ops/ops.h" /* weft_autotune_forget, the trials count */
#include "overlap_test.h"

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
    unsigned long before = comm->ops->tune_trials;
    const char *when[] = {" (autotuned: trials)", " (autotuned: table)", " (autotuned: disk)"};
    for (int i = 0; i < 3; i++) {
      if (i == 2) weft_autotune_forget(comm);
      poison_all(&t, 1);
      call(&t);
      verify(&t, when[i]);
    }
    cases++;
    if (comm->ops->tune_trials != before + 1) {
      failures++;
      printf("[%d] FAIL %s autotune: %lu timed decisions for one shape (expected 1)\n", me,
             op_names[op], comm->ops->tune_trials - before);
    }
    teardown(&t);
  }
  /* a shape first seen while capturing */
  tcase_t t = make(OP_RS, world * 704, 768, 320, 1, WEFT_DTYPE_BF16, WEFT_DTYPE_BF16, WEFT_ALGO_AUTO);
  setup(&t);
  unsigned long before = comm->ops->tune_trials;
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
  if (comm->ops->tune_trials != before) {
    failures++;
    printf("[%d] FAIL autotune ran trials during a capture\n", me);
  }
  CU(cuGraphExecDestroy(ge));
  CU(cuGraphDestroy(g));
  teardown(&t);
  OK(weft_comm_set_autotune(comm, 0));
}

int main(void) {
  weft_module_t *mod = overlap_test_init("test_overlap.cu");
  /* SM: GEMM + ReduceScatter (fused scatter) and GEMM + AllReduce */
  const weft_algo_t algos[] = {WEFT_ALGO_COPY_ENGINE, WEFT_ALGO_SEQUENTIAL, WEFT_ALGO_AUTO, WEFT_ALGO_SM};

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
       * part-filled), [k, n] B, fp32 C: segments that split one tile row between the ranks */
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
