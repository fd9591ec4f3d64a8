/*
 * dev/overlap/ag_gemm_dev.c — reference driver for AG+GEMM, its protocol built outside the
 * library: the copy-engine AllGather with one signal per rank chunk, overlapped with
 * kernels/gemm/gemm.cu waiting per tile (HOOK_WAIT), against NCCL AllGather then cuBLAS in the same
 * run, on the same random data.
 *
 *   weftrun -n N build/dev/overlap/ag_gemm_dev [-s M,N,K]... [-n samples] [-w warmup]
 *
 * Shapes (per rank): A [M/ws, K] (gathered into the symmetric [M, K]), B [N/ws, K] (weights,
 * [N,K] layout), C [M, N/ws], bf16 in and out. M must be a multiple of ws * 128.
 *
 * One fused call, all on the caller's stream s0 plus ws-1 side streams (copy engines, no SM):
 *   stream barrier (every rank finished its previous call: nobody still reads the slots that
 *   are about to be overwritten, and every rank's signals were reset)
 *   local copy of A into its slot, its own signal set;
 *   fork: push A to every peer (rank+1 first) with a signal set behind each push;
 *   the GEMM, starting at this rank's rows (order_rotate_m), its producer waiting per tile on the
 *   signal of the rows it loads;
 *   join; reset this rank's signals to 0 (the next call starts with a barrier, so no peer can
 *   signal before the reset).
 * Signals are set with stream memory operations, not kernels: the GEMM holds every SM (one CTA
 * with 230 KB of shared memory and all registers), so a signalling kernel could not start until
 * it ended, and the GEMM would wait for it forever.
 */
#include "overlap_dev.h"

typedef struct ctx {
  dev_env_t e;
  weft_kernel_t *gemm_wait, *gemm_plain;
  /* per shape */
  int M, N, K, mloc, nloc;
  unsigned short *ag; /* symmetric [M, K]: the gathered A */
  uint64_t *sig;      /* symmetric [ws] */
  CUdeviceptr a, b, c, cref, afull;
  CUtensorMap tm_ag, tm_afull, tm_b, tm_c;
} ctx_t;

static void launch_gemm(ctx_t *x, weft_kernel_t *k, CUtensorMap *ta) {
  gemm_hooks_t h = {x->e.me * x->mloc / (GEMM_BM * GEMM_CL), x->sig, x->mloc, NULL, 0};
  gemm_launch(x->e.comm, k, x->e.sms, ta, &x->tm_b, &x->tm_c, x->c, x->M, x->nloc, x->K, &h,
              x->e.s0);
}

/* The copy-engine AllGather (with the signals when the GEMM waits on them). */
static void allgather(ctx_t *x, int signals) {
  dev_env_t *e = &x->e;
  size_t bytes = (size_t)x->mloc * x->K * 2;
  unsigned short *slot = x->ag + (size_t)e->me * x->mloc * x->K;
  W(weft_stream_barrier(e->comm, (weft_stream_t)e->s0));
  CU(cuMemcpyAsync((CUdeviceptr)(uintptr_t)slot, x->a, bytes, e->s0));
  if (signals) W(weft_stream_signal_set(e->comm, x->sig + e->me, 1, e->me, (weft_stream_t)e->s0));
  dev_fork(e);
  for (int k = 1; k < e->ws; k++) {
    weft_stream_t s = (weft_stream_t)e->side[k - 1];
    int peer = (e->me + k) % e->ws;
    if (signals)
      W(weft_stream_put_signal(e->comm, slot, (void *)(uintptr_t)x->a, bytes, x->sig + e->me, 1,
                               peer, s));
    else
      W(weft_stream_put(e->comm, slot, (void *)(uintptr_t)x->a, bytes, peer, s));
  }
}

/* The fused op (see the file comment). */
static void fused(ctx_t *x) {
  allgather(x, 1);
  launch_gemm(x, x->gemm_wait, &x->tm_ag);
  dev_join(&x->e);
  CU(cuMemsetD8Async((CUdeviceptr)(uintptr_t)x->sig, 0, (size_t)x->e.ws * 8, x->e.s0));
}

static void cublas_gemm(ctx_t *x, CUdeviceptr a, CUdeviceptr c) {
  float one = 1.f, zero = 0.f;
  /* row-major C[M, n] = A[M, K] B[n, K]^T is column-major C^T = B^T A (B^T: op T of B's K x n) */
  CB(cublasGemmEx(x->e.blas, CUBLAS_OP_T, CUBLAS_OP_N, x->nloc, x->M, x->K, &one,
                  (void *)(uintptr_t)x->b, CUDA_R_16BF, x->K, (void *)(uintptr_t)a, CUDA_R_16BF, x->K,
                  &zero, (void *)(uintptr_t)c, CUDA_R_16BF, x->nloc, CUBLAS_COMPUTE_32F,
                  CUBLAS_GEMM_DEFAULT));
}

static void nccl_allgather(ctx_t *x) {
  NC(ncclAllGather((void *)(uintptr_t)x->a, (void *)(uintptr_t)x->afull, (size_t)x->mloc * x->K,
                   ncclBfloat16, x->e.nc, x->e.s0));
}

enum { R_GEMM_CUBLAS, R_GEMM_WEFT, R_AG_NCCL, R_AG_CE, R_BASELINE, R_FUSED, R_COUNT };
static const char *run_names[R_COUNT] = {"GEMM cuBLAS", "GEMM weft", "AG NCCL", "AG weft CE",
                                         "cuBLAS+NCCL", "weft fused"};

static void run(void *ctx, int r) {
  ctx_t *x = ctx;
  switch (r) {
  case R_GEMM_CUBLAS: cublas_gemm(x, x->afull, x->cref); break;
  case R_GEMM_WEFT: launch_gemm(x, x->gemm_plain, &x->tm_afull); break;
  case R_AG_NCCL: nccl_allgather(x); break;
  case R_AG_CE:
    allgather(x, 0);
    dev_join(&x->e);
    break;
  case R_BASELINE:
    nccl_allgather(x);
    cublas_gemm(x, x->afull, x->cref);
    break;
  case R_FUSED: fused(x); break;
  }
}

static int shape(ctx_t *x, const int *s) {
  dev_env_t *e = &x->e;
  int M = s[0], N = s[1], K = s[2];
  x->M = M, x->N = N, x->K = K, x->mloc = M / e->ws, x->nloc = N / e->ws;
  W(weft_malloc(e->comm, (size_t)M * K * 2, (void **)&x->ag));
  W(weft_malloc(e->comm, (size_t)e->ws * 8, (void **)&x->sig));
  CU(cuMemsetD8((CUdeviceptr)(uintptr_t)x->sig, 0, (size_t)e->ws * 8));
  CU(cuMemAlloc(&x->a, (size_t)x->mloc * K * 2));
  CU(cuMemAlloc(&x->b, (size_t)x->nloc * K * 2));
  CU(cuMemAlloc(&x->c, (size_t)M * x->nloc * 2));
  CU(cuMemAlloc(&x->cref, (size_t)M * x->nloc * 2));
  CU(cuMemAlloc(&x->afull, (size_t)M * K * 2));
  unsigned long long seed = (unsigned long long)time(NULL) * 7919 + (unsigned)e->me * 104729;
  fill_random(x->a, (size_t)x->mloc * K, seed);
  fill_random(x->b, (size_t)x->nloc * K, seed ^ 0xABCDEF);
  encode(&x->tm_ag, x->ag, K, M, 64, GEMM_BM);
  encode(&x->tm_afull, (void *)(uintptr_t)x->afull, K, M, 64, GEMM_BM);
  encode(&x->tm_b, (void *)(uintptr_t)x->b, K, x->nloc, 64, GEMM_BN / GEMM_CL);
  encode(&x->tm_c, (void *)(uintptr_t)x->c, x->nloc, M, 64, 64);
  /* correctness: the fused op against NCCL + cuBLAS, twice (signals must reset themselves) */
  double err = 0;
  long nans = 0;
  for (int rep = 0; rep < 2 && !nans; rep++) {
    CU(cuMemsetD8(x->c, 0xFF, (size_t)M * x->nloc * 2)); /* bf16 0xFFFF: NaN */
    CU(cuMemsetD8(x->cref, 0xFF, (size_t)M * x->nloc * 2));
    run(x, R_BASELINE);
    fused(x);
    W(weft_stream_synchronize(e->comm, (weft_stream_t)e->s0));
    err = compare(x->c, x->cref, (size_t)M * x->nloc, &nans);
  }
  int bad = nans || !(err <= 5e-3);
  double med[R_COUNT];
  dev_time(e, R_COUNT, run, x, med);
  err = max_across(e->comm, err);
  bad = (int)max_across(e->comm, bad);
  double bound = med[R_GEMM_WEFT] > med[R_AG_CE] ? med[R_GEMM_WEFT] : med[R_AG_CE];
  dev_row(e, s, R_COUNT, med, med[R_BASELINE], med[R_FUSED], bound, err, bad);
  W(weft_free(e->comm, x->ag));
  W(weft_free(e->comm, x->sig));
  CU(cuMemFree(x->a));
  CU(cuMemFree(x->b));
  CU(cuMemFree(x->c));
  CU(cuMemFree(x->cref));
  CU(cuMemFree(x->afull));
  return bad;
}

int main(int argc, char **argv) {
  /* weft-bench ag_gemm's default shapes (tools/bench_overlap.c: M, N, K of the whole layer) */
  static const int def[][3] = {{8192, 11008, 4096}, {8192, 14336, 4096}, {8192, 28672, 8192},
                               {8192, 53248, 16384}, {8192, 29568, 8192}};
  ctx_t x;
  memset(&x, 0, sizeof x);
  dev_env_init(&x.e, argc, argv, "ag_gemm_dev", def, 5);
  const char *wait[] = {"-DWEFT_GEMM_HOOK_WAIT=1"};
  weft_module_t *mw, *mp;
  x.gemm_wait = gemm_load(x.e.comm, wait, 1, &mw);
  x.gemm_plain = gemm_load(x.e.comm, NULL, 0, &mp);
  dev_header(&x.e, "ag_gemm_dev", "B [N/ws, K]; bound = max(GEMM weft, AG weft CE) / fused",
             R_COUNT, run_names);
  int bad = 0;
  for (int i = 0; i < x.e.nshapes; i++) {
    const int *s = x.e.shapes[i];
    if (s[0] % (x.e.ws * GEMM_BM) || s[1] % (x.e.ws * 8) || s[2] % 64)
      DIE("shape %d,%d,%d: M must be a multiple of %d, N of %d, K of 64", s[0], s[1], s[2],
          x.e.ws * GEMM_BM, x.e.ws * 8);
    bad |= shape(&x, s);
  }
  W(weft_module_unload(mw));
  W(weft_module_unload(mp));
  dev_env_fini(&x.e);
  return bad;
}
