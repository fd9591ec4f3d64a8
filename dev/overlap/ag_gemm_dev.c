/*
 * dev/overlap/ag_gemm_dev.c — research driver for AG+GEMM (issue 5), before the op exists in the
 * library: the copy-engine AllGather with one signal per rank chunk, overlapped with
 * kernels/gemm.cu waiting per tile (HOOK_WAIT), against NCCL AllGather then cuBLAS in the same
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
#include <cublas_v2.h>
#include <math.h>
#include <nccl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "jit/jit.h"
#include "runtime/comm.h"
#include "runtime/loader.h"
#include "weft.h"

#define DIE(...)                                                                           \
  do {                                                                                     \
    fprintf(stderr, "ag_gemm_dev: " __VA_ARGS__);                                          \
    fprintf(stderr, "\n");                                                                 \
    exit(1);                                                                               \
  } while (0)
#define W(call)                                                                            \
  do {                                                                                     \
    weft_status_t s_ = (call);                                                             \
    if (s_) DIE("%s: %s: %s", #call, weft_get_error_string(s_), weft_get_last_error());    \
  } while (0)
#define CU(call)                                                                           \
  do {                                                                                     \
    CUresult r_ = weft_cu.call;                                                            \
    if (r_) {                                                                              \
      const char *n_ = "?";                                                                \
      weft_cu.cuGetErrorName(r_, &n_);                                                     \
      DIE("%s: %s", #call, n_);                                                            \
    }                                                                                      \
  } while (0)
#define NC(call)                                                                           \
  do {                                                                                     \
    ncclResult_t r_ = (call);                                                              \
    if (r_ != ncclSuccess) DIE("%s: %s", #call, ncclGetErrorString(r_));                   \
  } while (0)
#define CB(call)                                                                           \
  do {                                                                                     \
    cublasStatus_t r_ = (call);                                                            \
    if (r_ != CUBLAS_STATUS_SUCCESS) DIE("%s: cuBLAS status %d", #call, (int)r_);          \
  } while (0)

enum { BM = 128, BN = 256, STAGES = 4, CL = 2, EPI = 2, BATCH = 5, MAX_SIDE = 7 };
#define SMEM (STAGES * (BM * 64 * 2 + BN * 64 * 2) + 2 * EPI * 8192 + 16 * STAGES + 16 + 1024)

typedef struct ctx {
  weft_comm_t *comm;
  int me, ws, sms;
  CUstream s0, side[MAX_SIDE];
  CUevent fork, join[MAX_SIDE];
  ncclComm_t nc;
  cublasHandle_t blas;
  weft_kernel_t *gemm_wait, *gemm_plain;
  /* per shape */
  int M, N, K, mloc, nloc;
  unsigned short *ag;  /* symmetric [M, K]: the gathered A */
  uint64_t *sig;       /* symmetric [ws] */
  CUdeviceptr a, b, c, cref, afull;
  CUtensorMap tm_ag, tm_afull, tm_b, tm_c;
} ctx_t;

static unsigned short to_bf16(float f) {
  unsigned u;
  memcpy(&u, &f, 4);
  return (unsigned short)((u + 0x7FFF + ((u >> 16) & 1)) >> 16);
}
static float from_bf16(unsigned short h) {
  unsigned u = (unsigned)h << 16;
  float f;
  memcpy(&f, &u, 4);
  return f;
}

static void fill_random(CUdeviceptr d, size_t n, unsigned long long seed) {
  unsigned short *h = malloc(n * 2);
  unsigned long long x = seed * 0x9E3779B97F4A7C15ull + 1;
  for (size_t i = 0; i < n; i++) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    h[i] = to_bf16((float)((x >> 11) * (1.0 / 9007199254740992.0)) * 2.f - 1.f);
  }
  CU(cuMemcpyHtoD(d, h, n * 2));
  free(h);
}

static void encode(CUtensorMap *m, void *p, uint64_t inner, uint64_t outer, uint32_t box_in,
                   uint32_t box_out) {
  cuuint64_t dims[2] = {inner, outer}, strides[1] = {inner * 2};
  cuuint32_t box[2] = {box_in, box_out}, es[2] = {1, 1};
  CU(cuTensorMapEncodeTiled(m, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 2, p, dims, strides, box, es,
                            CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
                            CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE));
}

static void launch_gemm(ctx_t *x, weft_kernel_t *k, CUtensorMap *ta, CUstream s) {
  weft_launch_config_t cfg = WEFT_LAUNCH_CONFIG_INIT;
  cfg.grid[0] = (unsigned)(x->sms & ~1);
  cfg.block[0] = 384;
  cfg.cluster[0] = CL, cfg.cluster[1] = cfg.cluster[2] = 1;
  cfg.shared_bytes = SMEM;
  void *cptr = (void *)(uintptr_t)x->c;
  int M = x->M, N = x->nloc, K = x->K, rot = x->me * x->mloc / (BM * CL), rps = x->mloc, one = 1;
  const int *table = NULL;
  const uint64_t *sig = x->sig;
  unsigned long long expected = 1, timeout = 5000000000ull;
  uint64_t *notify = NULL;
  float *ws = NULL;
  unsigned *ctr = NULL;
  void *err = (void *)(uintptr_t)x->comm->error_dev;
  void *args[] = {ta,    &x->tm_b, &x->tm_c, &cptr,   &M,  &N,  &K,   &table, &rot, &sig,
                  &rps,  &expected, &timeout, &notify, &one, &ws, &ctr, &one,   &err};
  W(weft_kernel_launch(k, &cfg, args, (weft_stream_t)s));
}

/* The fused op (see the file comment). */
static void fused(ctx_t *x) {
  size_t bytes = (size_t)x->mloc * x->K * 2;
  unsigned short *slot = x->ag + (size_t)x->me * x->mloc * x->K;
  W(weft_stream_barrier(x->comm, (weft_stream_t)x->s0));
  CU(cuMemcpyAsync((CUdeviceptr)(uintptr_t)slot, x->a, bytes, x->s0));
  W(weft_stream_signal_set(x->comm, x->sig + x->me, 1, x->me, (weft_stream_t)x->s0));
  CU(cuEventRecord(x->fork, x->s0));
  for (int k = 1; k < x->ws; k++) {
    CUstream s = x->side[k - 1];
    CU(cuStreamWaitEvent(s, x->fork, 0));
    W(weft_stream_put_signal(x->comm, slot, (void *)(uintptr_t)x->a, bytes, x->sig + x->me, 1,
                             (x->me + k) % x->ws, (weft_stream_t)s));
  }
  launch_gemm(x, x->gemm_wait, &x->tm_ag, x->s0);
  for (int k = 1; k < x->ws; k++) {
    CU(cuEventRecord(x->join[k - 1], x->side[k - 1]));
    CU(cuStreamWaitEvent(x->s0, x->join[k - 1], 0));
  }
  CU(cuMemsetD8Async((CUdeviceptr)(uintptr_t)x->sig, 0, (size_t)x->ws * 8, x->s0));
}

/* The copy-engine AllGather alone (the fused op's communication, no GEMM). */
static void ce_allgather(ctx_t *x) {
  size_t bytes = (size_t)x->mloc * x->K * 2;
  unsigned short *slot = x->ag + (size_t)x->me * x->mloc * x->K;
  W(weft_stream_barrier(x->comm, (weft_stream_t)x->s0));
  CU(cuMemcpyAsync((CUdeviceptr)(uintptr_t)slot, x->a, bytes, x->s0));
  CU(cuEventRecord(x->fork, x->s0));
  for (int k = 1; k < x->ws; k++) {
    CUstream s = x->side[k - 1];
    CU(cuStreamWaitEvent(s, x->fork, 0));
    W(weft_stream_put(x->comm, slot, (void *)(uintptr_t)x->a, bytes, (x->me + k) % x->ws,
                      (weft_stream_t)s));
    CU(cuEventRecord(x->join[k - 1], s));
    CU(cuStreamWaitEvent(x->s0, x->join[k - 1], 0));
  }
}

static void cublas_gemm(ctx_t *x, CUdeviceptr a, CUdeviceptr c) {
  float one = 1.f, zero = 0.f;
  /* row-major C[M, n] = A[M, K] B[n, K]^T is column-major C^T = B^T A (B^T: op T of B's K x n) */
  CB(cublasGemmEx(x->blas, CUBLAS_OP_T, CUBLAS_OP_N, x->nloc, x->M, x->K, &one, (void *)(uintptr_t)x->b,
                  CUDA_R_16BF, x->K, (void *)(uintptr_t)a, CUDA_R_16BF, x->K, &zero,
                  (void *)(uintptr_t)c, CUDA_R_16BF, x->nloc, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
}

static void baseline(ctx_t *x) {
  NC(ncclAllGather((void *)(uintptr_t)x->a, (void *)(uintptr_t)x->afull, (size_t)x->mloc * x->K,
                   ncclBfloat16, x->nc, x->s0));
  cublas_gemm(x, x->afull, x->cref);
}

enum { R_GEMM_CUBLAS, R_GEMM_WEFT, R_AG_NCCL, R_AG_CE, R_BASELINE, R_FUSED, R_COUNT };
static const char *run_names[R_COUNT] = {"gemm cuBLAS", "gemm weft", "AG NCCL", "AG weft CE",
                                         "cuBLAS+NCCL", "weft fused"};

static void run(ctx_t *x, int r) {
  switch (r) {
  case R_GEMM_CUBLAS: cublas_gemm(x, x->afull, x->cref); break;
  case R_GEMM_WEFT: launch_gemm(x, x->gemm_plain, &x->tm_afull, x->s0); break;
  case R_AG_NCCL:
    NC(ncclAllGather((void *)(uintptr_t)x->a, (void *)(uintptr_t)x->afull, (size_t)x->mloc * x->K,
                     ncclBfloat16, x->nc, x->s0));
    break;
  case R_AG_CE: ce_allgather(x); break;
  case R_BASELINE: baseline(x); break;
  case R_FUSED: fused(x); break;
  }
}

static double max_across(ctx_t *x, double v) {
  double *all = calloc((size_t)x->ws, sizeof *all);
  all[x->me] = v;
  W(weft_bootstrap_allgather(x->comm->bootstrap, all, sizeof *all));
  double m = all[0];
  for (int i = 1; i < x->ws; i++) m = all[i] > m ? all[i] : m;
  free(all);
  return m;
}

static int cmp_d(const void *a, const void *b) {
  double u = *(const double *)a, v = *(const double *)b;
  return u < v ? -1 : u > v;
}

/* ||weft - ref|| / ||ref|| over every element; NaN (the poison) counts as wrong */
static double compare(ctx_t *x, CUdeviceptr got, CUdeviceptr ref, long *nans) {
  size_t n = (size_t)x->M * x->nloc;
  unsigned short *g = malloc(n * 2), *r = malloc(n * 2);
  CU(cuMemcpyDtoH(g, got, n * 2));
  CU(cuMemcpyDtoH(r, ref, n * 2));
  double num = 0, den = 0;
  *nans = 0;
  for (size_t i = 0; i < n; i++) {
    double a = from_bf16(g[i]), b = from_bf16(r[i]);
    if (a != a) {
      ++*nans;
      continue;
    }
    num += (a - b) * (a - b);
    den += b * b;
  }
  free(g), free(r);
  return sqrt(num / (den > 0 ? den : 1));
}

static int shape(ctx_t *x, int M, int N, int K, int samples, int warmup) {
  x->M = M, x->N = N, x->K = K, x->mloc = M / x->ws, x->nloc = N / x->ws;
  W(weft_malloc(x->comm, (size_t)M * K * 2, (void **)&x->ag));
  W(weft_malloc(x->comm, (size_t)x->ws * 8, (void **)&x->sig));
  CU(cuMemsetD8((CUdeviceptr)(uintptr_t)x->sig, 0, (size_t)x->ws * 8));
  CU(cuMemAlloc(&x->a, (size_t)x->mloc * K * 2));
  CU(cuMemAlloc(&x->b, (size_t)x->nloc * K * 2));
  CU(cuMemAlloc(&x->c, (size_t)M * x->nloc * 2));
  CU(cuMemAlloc(&x->cref, (size_t)M * x->nloc * 2));
  CU(cuMemAlloc(&x->afull, (size_t)M * K * 2));
  unsigned long long seed = (unsigned long long)time(NULL) * 7919 + (unsigned)x->me * 104729;
  fill_random(x->a, (size_t)x->mloc * K, seed);
  fill_random(x->b, (size_t)x->nloc * K, seed ^ 0xABCDEF);
  encode(&x->tm_ag, x->ag, K, M, 64, BM);
  encode(&x->tm_afull, (void *)(uintptr_t)x->afull, K, M, 64, BM);
  encode(&x->tm_b, (void *)(uintptr_t)x->b, K, x->nloc, 64, BN / CL);
  encode(&x->tm_c, (void *)(uintptr_t)x->c, x->nloc, M, 64, 64);
  /* correctness: the fused op against NCCL + cuBLAS, twice (signals must reset themselves) */
  double err = 0;
  long nans = 0;
  for (int rep = 0; rep < 2 && !nans; rep++) {
    CU(cuMemsetD8(x->c, 0xFF, (size_t)M * x->nloc * 2)); /* bf16 0xFFFF: NaN */
    CU(cuMemsetD8(x->cref, 0xFF, (size_t)M * x->nloc * 2));
    baseline(x);
    fused(x);
    W(weft_stream_synchronize(x->comm, (weft_stream_t)x->s0));
    err = compare(x, x->c, x->cref, &nans);
  }
  int bad = nans || !(err <= 5e-3);
  /* timing, interleaved: sample i of every run before sample i+1 of any */
  double *t[R_COUNT];
  CUevent e0, e1;
  CU(cuEventCreate(&e0, CU_EVENT_DEFAULT));
  CU(cuEventCreate(&e1, CU_EVENT_DEFAULT));
  for (int r = 0; r < R_COUNT; r++) t[r] = calloc((size_t)samples, sizeof(double));
  for (int i = -warmup; i < samples; i++)
    for (int r = 0; r < R_COUNT; r++) {
      W(weft_comm_barrier(x->comm));
      CU(cuEventRecord(e0, x->s0));
      for (int b = 0; b < BATCH; b++) run(x, r);
      CU(cuEventRecord(e1, x->s0));
      W(weft_stream_synchronize(x->comm, (weft_stream_t)x->s0));
      float ms;
      CU(cuEventElapsedTime(&ms, e0, e1));
      if (i >= 0) t[r][i] = ms / BATCH;
    }
  double med[R_COUNT];
  for (int r = 0; r < R_COUNT; r++) {
    qsort(t[r], (size_t)samples, sizeof(double), cmp_d);
    med[r] = max_across(x, t[r][samples / 2]);
    free(t[r]);
  }
  err = max_across(x, err);
  bad = (int)max_across(x, bad);
  if (x->me == 0) {
    double gemm = med[R_GEMM_WEFT], comm = med[R_AG_CE];
    double bound = gemm > comm ? gemm : comm;
    printf("%6d %6d %6d |", M, N, K);
    for (int r = 0; r < R_COUNT; r++) printf(" %8.3f", med[r]);
    printf(" | %6.3fx %6.1f%% | err %.1e%s\n", med[R_BASELINE] / med[R_FUSED],
           100.0 * bound / med[R_FUSED], err, bad ? " WRONG" : "");
    fflush(stdout);
  }
  CU(cuEventDestroy(e0));
  CU(cuEventDestroy(e1));
  W(weft_free(x->comm, x->ag));
  W(weft_free(x->comm, x->sig));
  CU(cuMemFree(x->a));
  CU(cuMemFree(x->b));
  CU(cuMemFree(x->c));
  CU(cuMemFree(x->cref));
  CU(cuMemFree(x->afull));
  return bad;
}

int main(int argc, char **argv) {
  int shapes[16][3], nshapes = 0, samples = 15, warmup = 3;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "-s") && i + 1 < argc && nshapes < 16) {
      if (sscanf(argv[++i], "%d,%d,%d", &shapes[nshapes][0], &shapes[nshapes][1],
                 &shapes[nshapes][2]) != 3)
        DIE("-s takes M,N,K");
      nshapes++;
    } else if (!strcmp(argv[i], "-n") && i + 1 < argc) {
      samples = atoi(argv[++i]);
    } else if (!strcmp(argv[i], "-w") && i + 1 < argc) {
      warmup = atoi(argv[++i]);
    } else {
      DIE("usage: weftrun -n N ag_gemm_dev [-s M,N,K]... [-n samples] [-w warmup]");
    }
  }
  if (!nshapes) {
    /* DESIGN.md's AG+GEMM table (M, N, K of the whole layer) */
    static const int def[][3] = {{8192, 11008, 4096}, {8192, 14336, 4096}, {8192, 28672, 8192},
                                 {8192, 53248, 16384}, {8192, 29568, 8192}};
    memcpy(shapes, def, sizeof def);
    nshapes = 5;
  }
  ctx_t x;
  memset(&x, 0, sizeof x);
  W(weft_comm_init(&x.comm, NULL));
  x.me = x.comm->rank, x.ws = x.comm->world;
  if (x.ws - 1 > MAX_SIDE) DIE("at most %d ranks", MAX_SIDE + 1);
  CU(cuDeviceGetAttribute(&x.sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, x.comm->device));
  CU(cuStreamCreate(&x.s0, CU_STREAM_NON_BLOCKING));
  CU(cuEventCreate(&x.fork, CU_EVENT_DISABLE_TIMING));
  for (int i = 0; i < x.ws - 1; i++) {
    CU(cuStreamCreate(&x.side[i], CU_STREAM_NON_BLOCKING));
    CU(cuEventCreate(&x.join[i], CU_EVENT_DISABLE_TIMING));
  }
  ncclUniqueId id;
  if (x.me == 0) NC(ncclGetUniqueId(&id));
  ncclUniqueId *ids = calloc((size_t)x.ws, sizeof *ids);
  ids[x.me] = id;
  W(weft_bootstrap_allgather(x.comm->bootstrap, ids, sizeof *ids));
  NC(ncclCommInitRank(&x.nc, x.ws, ids[0], x.me));
  free(ids);
  CB(cublasCreate(&x.blas));
  CB(cublasSetStream(x.blas, (cudaStream_t)x.s0));
  const char *common[] = {"-DWEFT_GEMM_BM=128", "-DWEFT_GEMM_BN=256", "-DWEFT_GEMM_STAGES=4",
                          "-DWEFT_GEMM_CLUSTER_M=2", "-DWEFT_GEMM_EPI_BUFS=2", "-DWEFT_GEMM_HOOK_WAIT=1"};
  weft_module_t *mw, *mp;
  W(weft_module_load_embedded(x.comm, "kernels/gemm.cu", common, 6, &mw));
  W(weft_module_load_embedded(x.comm, "kernels/gemm.cu", common, 5, &mp));
  W(weft_module_get_kernel(mw, "weft_gemm", &x.gemm_wait));
  W(weft_module_get_kernel(mp, "weft_gemm", &x.gemm_plain));
  if (x.me == 0) {
    printf("# ag_gemm_dev: %d ranks, bf16, B [N/ws, K]; medians of %d interleaved samples of %d "
           "calls, ms, slowest rank\n#%5s %6s %6s |", x.ws, samples, BATCH, "M", "N", "K");
    for (int r = 0; r < R_COUNT; r++) printf(" %8.8s", run_names[r]);
    printf(" | speedup  bound%% (max(gemm weft, AG weft CE) / fused)\n");
  }
  int bad = 0;
  for (int i = 0; i < nshapes; i++) {
    if (shapes[i][0] % (x.ws * BM) || shapes[i][1] % (x.ws * 8) || shapes[i][2] % 64)
      DIE("shape %d,%d,%d: M must be a multiple of %d, N of %d, K of 64", shapes[i][0],
          shapes[i][1], shapes[i][2], x.ws * BM, x.ws * 8);
    bad |= shape(&x, shapes[i][0], shapes[i][1], shapes[i][2], samples, warmup);
  }
  W(weft_module_unload(mw));
  W(weft_module_unload(mp));
  cublasDestroy(x.blas);
  ncclCommDestroy(x.nc);
  W(weft_comm_destroy(x.comm));
  return bad;
}
