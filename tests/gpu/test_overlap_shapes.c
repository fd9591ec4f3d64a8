/*
 * test_overlap_shapes.c — the overlapped ops (weft_ag_gemm, weft_gemm_rs, weft_gemm_ar) on random
 * shapes in every form: rows per rank 1..3000 (AG+GEMM's m; GEMM+RS's segments; GEMM+AR's m is
 * the ranks' rows, less up to world - 1, so not always a multiple of the world), n and k random
 * multiples of 8 in 8..8192 (half drawn uniformly, half log-uniformly), either B layout, bf16 or
 * fp16 in and out, at this run's world size (ctest: 2, 3 and 4 ranks, on shared GPUs where there
 * are fewer), against the float64 reference, every element (overlap_test.h). The seed is printed
 * and WEFT_TEST_SEED replays it; WEFT_TEST_SHAPES sets the random cases per op (default 100).
 * Every shape that once failed is kept in `regressions` and runs first, in each form, every run.
 */
// weft-test: ranks=2,3,4 timeout=1500
#include "overlap_test.h"

static const weft_algo_t forms_ag[] = {WEFT_ALGO_COPY_ENGINE, WEFT_ALGO_SEQUENTIAL, WEFT_ALGO_AUTO};
static const weft_algo_t forms_rs[] = {WEFT_ALGO_COPY_ENGINE, WEFT_ALGO_SM, WEFT_ALGO_SEQUENTIAL,
                                       WEFT_ALGO_AUTO};
static const weft_algo_t forms_ar[] = {WEFT_ALGO_COPY_ENGINE, WEFT_ALGO_SM,   WEFT_ALGO_LL,
                                       WEFT_ALGO_TWO_SHOT,    WEFT_ALGO_SEQUENTIAL, WEFT_ALGO_AUTO};
static const weft_algo_t *const forms[] = {forms_ag, forms_rs, forms_ar};
static const int nforms[] = {3, 4, 6};

/* Shapes that failed once (rows per rank, n, k, [n, k] B, fp16): the first two hung or faulted
 * in the copy-engine forms on a shared GPU at 2 ranks (AG+GEMM: 1041 rows per rank, n 3072;
 * GEMM+RS: 1024-row segments, n 3000). */
static const struct {
  int op, rows, n, k, kmaj, fp16;
} regressions[] = {
    {OP_AG, 1041, 3072, 4096, 1, 0},
    {OP_RS, 1024, 3000, 4096, 1, 0},
};

/* A multiple of 8 in 8..8192: uniform, or log-uniform (small and mid sizes as often as large) */
static int dim(void) {
  if (test_rand(&shared) & 1) return 8 * (1 + (int)(test_rand(&shared) % 1024));
  double u = (double)(test_rand(&shared) % 1000000) / 1e6;
  int v = (int)exp(u * log(1024.0)); /* 1..1024 */
  return 8 * (v < 1 ? 1 : v > 1024 ? 1024 : v);
}

/* The case of op with `rows` rows per rank in form algo. */
static tcase_t shaped(int op, int rows, int n, int k, int kmaj, int fp16, weft_algo_t algo) {
  weft_dtype_t t = fp16 ? WEFT_DTYPE_FP16 : WEFT_DTYPE_BF16;
  int m = op == OP_AG ? rows : world * rows;
  if (op == OP_AR && rows > 1) m -= (int)(test_rand(&shared) % (unsigned long long)world);
  return make(op, m, n, k, kmaj, t, t, algo);
}

int main(void) {
  weft_module_t *mod = overlap_test_init("test_overlap_shapes.cu");
  const char *env = getenv("WEFT_TEST_SHAPES");
  int per_op = env && atoi(env) > 0 ? atoi(env) : 100;
  for (size_t i = 0; i < sizeof regressions / sizeof regressions[0]; i++)
    for (int f = 0; f < nforms[regressions[i].op]; f++)
      one(shaped(regressions[i].op, regressions[i].rows, regressions[i].n, regressions[i].k,
                 regressions[i].kmaj, regressions[i].fp16, forms[regressions[i].op][f]));
  for (int op = 0; op < 3; op++)
    for (int i = 0; i < per_op; i++) {
      int rows = 1 + (int)(test_rand(&shared) % 3000), n = dim(), k = dim();
      int kmaj = (int)(test_rand(&shared) & 1), fp16 = (int)(test_rand(&shared) & 1);
      one(shaped(op, rows, n, k, kmaj, fp16, forms[op][i % nforms[op]]));
    }
  printf("[%d] %d of %d checks passed (%d random cases per op at %d ranks)\n", me,
         cases - failures, cases, per_op, world);
  OK(weft_module_unload(mod));
  CU(cuStreamDestroy(s));
  OK(weft_comm_destroy(comm));
  return failures ? 1 : 0;
}
