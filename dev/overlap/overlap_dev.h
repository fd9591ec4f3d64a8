/*
 * dev/overlap/overlap_dev.h — what the overlap research drivers share: exit-on-error checks,
 * bf16 conversions, random fills, TMA maps for kernels/gemm/gemm.cu, and the host-side medians and
 * errors. Dev tooling only (exit on error).
 */
#ifndef WEFT_OVERLAP_DEV_H
#define WEFT_OVERLAP_DEV_H

#include <cublas_v2.h>
#include <math.h>
#include <nccl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "runtime/module.h"
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

/* kernels/gemm/gemm.cu as the drivers use it: BM=128 BN=256, 4 stages, 2x1 clusters, bf16. */
enum { GEMM_BM = 128, GEMM_BN = 256, GEMM_CL = 2 };
#define GEMM_SMEM (4 * (GEMM_BM * 64 * 2 + GEMM_BN * 64 * 2) + 2 * 2 * 8192 + 16 * 4 + 112 + 1024)

/* extra: hook defines ("-DWEFT_GEMM_HOOK_WAIT=1", ...) */
static weft_kernel_t *gemm_load(weft_comm_t *comm, const char *const *extra, int nextra,
                                weft_module_t **mod) {
  const char *opts[12] = {"-DWEFT_GEMM_BM=128", "-DWEFT_GEMM_BN=256", "-DWEFT_GEMM_STAGES=4",
                          "-DWEFT_GEMM_CLUSTER_M=2", "-DWEFT_GEMM_EPI_BUFS=2"};
  int n = 5;
  for (int i = 0; i < nextra && n < 12; i++) opts[n++] = extra[i];
  weft_kernel_t *k;
  W(weft_module_load_embedded(comm, "kernels/gemm/gemm.cu", opts, n, mod));
  W(weft_module_get_kernel(*mod, "weft_gemm", &k));
  return k;
}

typedef struct gemm_hooks {
  int rotate_m;                 /* first cluster tile-row */
  const uint64_t *wait_signals; /* HOOK_WAIT */
  int wait_rows;
  uint64_t *notify;             /* HOOK_NOTIFY */
  int notify_rows;
} gemm_hooks_t;

/* C[M, N] = A[M, K] B[N, K]^T with the maps of encode(); hooks as compiled in. The arguments
 * follow kernels/gemm/gemm.cu's weft_gemm parameter list, all 39 of them. */
static void gemm_launch(weft_comm_t *comm, weft_kernel_t *k, int sms, CUtensorMap *ta,
                        CUtensorMap *tb, CUtensorMap *tc, CUdeviceptr c, int M, int N, int K,
                        const gemm_hooks_t *h, CUstream s) {
  weft_launch_config_t cfg = WEFT_LAUNCH_CONFIG_INIT;
  cfg.grid[0] = (unsigned)(sms & ~1);
  cfg.block[0] = 384;
  cfg.cluster[0] = GEMM_CL, cfg.cluster[1] = cfg.cluster[2] = 1;
  cfg.shared_bytes = GEMM_SMEM;
  void *cptr = (void *)(uintptr_t)c;
  const int *table = NULL;
  int rot = h ? h->rotate_m : 0, wrows = h && h->wait_rows ? h->wait_rows : 1;
  int nrows = h && h->notify_rows ? h->notify_rows : 1, one = 1;
  const uint64_t *sig = h ? h->wait_signals : NULL;
  uint64_t *notify = h ? h->notify : NULL;
  unsigned long long expected = 1, timeout = 5000000000ull;
  float *ws = NULL;
  unsigned *ctr = NULL;
  void *err = (void *)(uintptr_t)comm->error_dev;
  long long ldc = N, peer_stride = 0;
  /* the parameters of the forms the drivers do not compile in (split tail, LL epilogue, own rows
   * of A, the AllReduce epilogues, the partial-row A map): neutral values, A's map for the maps */
  int tail = 0, ll_rank = 0, ll_world = 1, own_row0 = 0, own_rows = 0, ar_row0 = 0, ar_rows = 0;
  int ar_chunk = 1, a_tail_rows = 0;
  const unsigned long long *ll_epoch = NULL, *ar_flags = NULL;
  unsigned long long ll_slot = 0, ar_slot = 0;
  const char *ar_staging = NULL;
  char *ar_c = NULL;
  void *args[] = {ta,       tb,       tc,          &cptr,    &M,          &N,       &K,
                  &table,   &rot,     &sig,        &wrows,   &expected,   &timeout, &notify,
                  &nrows,   &ws,      &ctr,        &one,     &err,        &ldc,     &peer_stride,
                  &tail,    &ll_epoch, &ll_slot,   &ll_rank, &ll_world,   ta,       &own_row0,
                  &own_rows, ta,      &ar_staging, &ar_slot, &ar_flags,   &ar_row0, &ar_rows,
                  &ar_chunk, &ar_c,   ta,          &a_tail_rows};
  W(weft_kernel_launch(k, &cfg, args, (weft_stream_t)s));
}

static double max_across(weft_comm_t *comm, double v) {
  double *all = calloc((size_t)comm->world, sizeof *all);
  all[comm->rank] = v;
  W(weft_bootstrap_allgather(comm->bootstrap, all, sizeof *all));
  double m = all[0];
  for (int i = 1; i < comm->world; i++) m = all[i] > m ? all[i] : m;
  free(all);
  return m;
}

static int cmp_d(const void *a, const void *b) {
  double u = *(const double *)a, v = *(const double *)b;
  return u < v ? -1 : u > v;
}

/* ||weft - ref|| / ||ref|| over every element; NaN (the poison) counts as wrong */
static double compare(CUdeviceptr got, CUdeviceptr ref, size_t n, long *nans) {
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

static double median(double *v, int n) {
  qsort(v, (size_t)n, sizeof *v, cmp_d);
  return v[n / 2];
}

/* ---- the drivers' environment: communicator, streams, NCCL, cuBLAS, options ---- */

enum { DEV_MAX_SIDE = 7, DEV_BATCH = 5, DEV_MAX_SHAPES = 16, DEV_MAX_RUNS = 10 };

typedef struct dev_env {
  weft_comm_t *comm;
  int me, ws, sms;
  CUstream s0, side[DEV_MAX_SIDE]; /* the caller's stream; one side stream per peer */
  CUevent fork, join[DEV_MAX_SIDE];
  ncclComm_t nc;
  cublasHandle_t blas;
  CUdeviceptr blas_ws; /* its 32 MiB workspace */
  int shapes[DEV_MAX_SHAPES][3], nshapes, samples, warmup;
} dev_env_t;

/* Options -s M,N,K (repeatable; default: the given table), -n samples, -w warm-up; then the
 * communicator, streams, NCCL and cuBLAS (on s0). */
static void dev_env_init(dev_env_t *e, int argc, char **argv, const char *name,
                         const int (*def)[3], int ndef) {
  memset(e, 0, sizeof *e);
  e->samples = 15, e->warmup = 3;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "-s") && i + 1 < argc && e->nshapes < DEV_MAX_SHAPES) {
      int *s = e->shapes[e->nshapes++];
      if (sscanf(argv[++i], "%d,%d,%d", &s[0], &s[1], &s[2]) != 3) DIE("-s takes M,N,K");
    } else if (!strcmp(argv[i], "-n") && i + 1 < argc) {
      e->samples = atoi(argv[++i]);
    } else if (!strcmp(argv[i], "-w") && i + 1 < argc) {
      e->warmup = atoi(argv[++i]);
    } else {
      DIE("usage: weftrun -n N %s [-s M,N,K]... [-n samples] [-w warmup]", name);
    }
  }
  if (!e->nshapes) {
    memcpy(e->shapes, def, (size_t)ndef * sizeof *def);
    e->nshapes = ndef;
  }
  W(weft_comm_init(&e->comm, NULL));
  e->me = e->comm->rank, e->ws = e->comm->world;
  if (e->ws - 1 > DEV_MAX_SIDE) DIE("at most %d ranks", DEV_MAX_SIDE + 1);
  CU(cuDeviceGetAttribute(&e->sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, e->comm->device));
  CU(cuStreamCreate(&e->s0, CU_STREAM_NON_BLOCKING));
  CU(cuEventCreate(&e->fork, CU_EVENT_DISABLE_TIMING));
  for (int i = 0; i < e->ws - 1; i++) {
    CU(cuStreamCreate(&e->side[i], CU_STREAM_NON_BLOCKING));
    CU(cuEventCreate(&e->join[i], CU_EVENT_DISABLE_TIMING));
  }
  ncclUniqueId *ids = calloc((size_t)e->ws, sizeof *ids);
  if (e->me == 0) NC(ncclGetUniqueId(&ids[0]));
  W(weft_bootstrap_allgather(e->comm->bootstrap, ids, sizeof *ids));
  NC(ncclCommInitRank(&e->nc, e->ws, ids[0], e->me));
  free(ids);
  CB(cublasCreate(&e->blas));
  CB(cublasSetStream(e->blas, (cudaStream_t)e->s0));
  /* the workspace weft-bench gives cuBLAS (tools/bench.h) */
  CU(cuMemAlloc(&e->blas_ws, 32u << 20));
  CB(cublasSetWorkspace(e->blas, (void *)(uintptr_t)e->blas_ws, 32u << 20));
}

static void dev_env_fini(dev_env_t *e) {
  cublasDestroy(e->blas);
  CU(cuMemFree(e->blas_ws));
  ncclCommDestroy(e->nc);
  W(weft_comm_destroy(e->comm));
}

/* Side stream k-1 (k = 1 .. ws-1) starts after everything so far on s0. */
static void dev_fork(dev_env_t *e) {
  CU(cuEventRecord(e->fork, e->s0));
  for (int k = 0; k < e->ws - 1; k++) CU(cuStreamWaitEvent(e->side[k], e->fork, 0));
}
/* s0 continues after everything on the side streams. */
static void dev_join(dev_env_t *e) {
  for (int k = 0; k < e->ws - 1; k++) {
    CU(cuEventRecord(e->join[k], e->side[k]));
    CU(cuStreamWaitEvent(e->s0, e->join[k], 0));
  }
}

/* Times nruns ways interleaved (sample i of every run before sample i+1 of any), each sample
 * DEV_BATCH calls back to back after a host barrier; med[r] = median ms per call, slowest rank. */
static void dev_time(dev_env_t *e, int nruns, void (*run)(void *, int), void *ctx, double *med) {
  double *t[DEV_MAX_RUNS];
  CUevent e0, e1;
  CU(cuEventCreate(&e0, CU_EVENT_DEFAULT));
  CU(cuEventCreate(&e1, CU_EVENT_DEFAULT));
  for (int r = 0; r < nruns; r++) t[r] = calloc((size_t)e->samples, sizeof(double));
  for (int i = -e->warmup; i < e->samples; i++)
    for (int r = 0; r < nruns; r++) {
      W(weft_comm_barrier(e->comm));
      CU(cuEventRecord(e0, e->s0));
      for (int b = 0; b < DEV_BATCH; b++) run(ctx, r);
      CU(cuEventRecord(e1, e->s0));
      W(weft_stream_synchronize(e->comm, (weft_stream_t)e->s0));
      float ms;
      CU(cuEventElapsedTime(&ms, e0, e1));
      if (i >= 0) t[r][i] = ms / DEV_BATCH;
    }
  for (int r = 0; r < nruns; r++) {
    med[r] = max_across(e->comm, median(t[r], e->samples));
    free(t[r]);
  }
  CU(cuEventDestroy(e0));
  CU(cuEventDestroy(e1));
}

/* The table: a header naming the runs, then one row per shape (rank 0 prints). */
static void dev_header(dev_env_t *e, const char *name, const char *what, int nruns,
                       const char *const *runs) {
  if (e->me) return;
  printf("# %s: %d ranks, bf16, %s; medians of %d interleaved samples of %d calls, ms, slowest "
         "rank\n#%5s %6s %6s |", name, e->ws, what, e->samples, DEV_BATCH, "M", "N", "K");
  for (int r = 0; r < nruns; r++) printf(" %11.11s", runs[r]);
  printf(" | speedup  bound%%\n");
}
static void dev_row(dev_env_t *e, const int *s, int nruns, const double *med, double baseline,
                    double fused, double bound, double err, int bad) {
  if (e->me) return;
  printf("%6d %6d %6d |", s[0], s[1], s[2]);
  for (int r = 0; r < nruns; r++) printf(" %11.3f", med[r]);
  printf(" | %6.3fx %6.1f%% | err %.1e%s\n", baseline / fused, 100.0 * bound / fused, err,
         bad ? " WRONG" : "");
  fflush(stdout);
}

#endif
