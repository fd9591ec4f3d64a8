/*
 * dev/overlap/gemm_rs_dev.c — reference driver for GEMM+RS, its protocol built outside the
 * library: kernels/gemm/gemm.cu notifying per output segment (HOOK_NOTIFY: one counter per rank's
 * M/ws rows), the copy engines sending each finished segment to its owner as soon as its counter
 * is complete, and the owner's reduction after its own GEMM; against cuBLAS then NCCL
 * ReduceScatter in the same run, on the same random data.
 *
 *   weftrun -n N build/dev/overlap/gemm_rs_dev [-s M,N,K]... [-n samples] [-w warmup]
 *
 * Per rank: A [M, K/ws], B [N, K/ws] (weights), the partial C [M, N]; out [M/ws, N] = the sum
 * over ranks of their C's rows of this rank's segment. bf16 in and out (partials in bf16, as
 * cuBLAS + NCCL do them).
 *
 * One fused call, on s0 plus one side stream per peer:
 *   stream barrier (every rank finished its previous call: scratch slots free, counters and
 *   signals reset);
 *   fork: side stream of peer p waits until p's segment counter is complete (a stream wait: the
 *   GEMM holds every SM, so nothing else can poll), copies that segment of C into p's scratch
 *   slot of this rank, and sets p's signal of this rank;
 *   the GEMM, tile rows from segment rank+1 on (the order of the sends), notifying per segment;
 *   then on s0: wait for every peer's signal (bounded kernel waits), reduce own segment + the
 *   peers' slots into out; join; reset counters and signals.
 * The stream waits on the counters have no deadline: a research shortcut the library op must
 * not take (its scatter will be fused into the GEMM's epilogue or polled by a bounded waiter).
 */
#include "overlap_dev.h"

/* out = own + sum of the other ranks' slots, fp32 accumulation, 8 bf16 per thread per step */
static const char *reduce_src =
    "extern \"C\" __global__ void rs_reduce(const unsigned short *own, const unsigned short "
    "*scratch, unsigned short *out, unsigned long long n8, unsigned long long seg, int ws, int "
    "me) {\n"
    "  for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; i < "
    "n8; i += (unsigned long long)gridDim.x * blockDim.x) {\n"
    "    uint4 v = ((const uint4 *)own)[i];\n"
    "    unsigned w[4] = {v.x, v.y, v.z, v.w};\n"
    "    float a[8];\n"
    "    for (int j = 0; j < 4; j++) { a[2*j] = __uint_as_float(w[j] << 16); a[2*j+1] = "
    "__uint_as_float(w[j] & 0xffff0000u); }\n"
    "    for (int s = 0; s < ws; s++) {\n"
    "      if (s == me) continue;\n"
    "      uint4 u = ((const uint4 *)(scratch + s * seg))[i];\n"
    "      unsigned q[4] = {u.x, u.y, u.z, u.w};\n"
    "      for (int j = 0; j < 4; j++) { a[2*j] += __uint_as_float(q[j] << 16); a[2*j+1] += "
    "__uint_as_float(q[j] & 0xffff0000u); }\n"
    "    }\n"
    "    unsigned r[4];\n"
    "    for (int j = 0; j < 4; j++) {\n"
    "      unsigned lo = __float_as_uint(a[2*j]), hi = __float_as_uint(a[2*j+1]);\n"
    "      lo = (lo + 0x7fffu + ((lo >> 16) & 1u)) >> 16; hi = (hi + 0x7fffu + ((hi >> 16) & 1u)) "
    ">> 16;\n"
    "      r[j] = lo | (hi << 16);\n"
    "    }\n"
    "    ((uint4 *)out)[i] = make_uint4(r[0], r[1], r[2], r[3]);\n"
    "  }\n"
    "}\n";

typedef struct ctx {
  dev_env_t e;
  weft_kernel_t *gemm_notify, *gemm_plain, *reduce;
  /* per shape */
  int M, N, K, kloc, mloc;
  unsigned short *scratch; /* symmetric [ws][M/ws, N]: the slots peers send into */
  uint64_t *sig;           /* symmetric [ws]: peer r's slot arrived */
  CUdeviceptr a, b, c, cref, out, outref, ctr; /* ctr: [ws] segment counters of the GEMM */
  CUtensorMap tm_a, tm_b, tm_c;
} ctx_t;

static void launch_gemm(ctx_t *x, weft_kernel_t *k, int notify) {
  int first = (x->e.me + 1) % x->e.ws; /* the first segment to send */
  gemm_hooks_t h = {first * x->mloc / (GEMM_BM * GEMM_CL), NULL, 0,
                    notify ? (uint64_t *)(uintptr_t)x->ctr : NULL, x->mloc};
  gemm_launch(x->e.comm, k, x->e.sms, &x->tm_a, &x->tm_b, &x->tm_c, x->c, x->M, x->N, x->kloc, &h,
              x->e.s0);
}

/* Sends (after their segment's GEMM tiles when gemm), waits, reduce; the GEMM in between. */
static void reduce_scatter(ctx_t *x, int gemm) {
  dev_env_t *e = &x->e;
  size_t seg = (size_t)x->mloc * x->N;
  /* the GEMM adds 1 per stored 64-row half tile: a segment is complete at this count */
  cuuint64_t expected = (cuuint64_t)(x->mloc / 64) * (cuuint64_t)((x->N + GEMM_BN - 1) / GEMM_BN);
  W(weft_stream_barrier(e->comm, (weft_stream_t)e->s0));
  dev_fork(e);
  for (int k = 1; k < e->ws; k++) {
    CUstream s = e->side[k - 1];
    int p = (e->me + k) % e->ws;
    if (gemm)
      CU(cuStreamWaitValue64(s, x->ctr + (CUdeviceptr)p * 8, expected, CU_STREAM_WAIT_VALUE_GEQ));
    W(weft_stream_put_signal(e->comm, x->scratch + (size_t)e->me * seg,
                             (void *)(uintptr_t)(x->c + (CUdeviceptr)p * seg * 2), seg * 2,
                             x->sig + e->me, 1, p, (weft_stream_t)s));
  }
  if (gemm) launch_gemm(x, x->gemm_notify, 1);
  for (int k = 1; k < e->ws; k++) {
    int src = (e->me + e->ws - k) % e->ws;
    W(weft_stream_signal_wait(e->comm, x->sig + src, WEFT_CMP_GE, 1, (weft_stream_t)e->s0));
  }
  weft_launch_config_t cfg = WEFT_LAUNCH_CONFIG_INIT;
  cfg.grid[0] = (unsigned)e->sms * 2;
  cfg.block[0] = 512;
  CUdeviceptr own = x->c + (CUdeviceptr)e->me * seg * 2;
  unsigned long long n8 = seg / 8, segl = seg;
  int ws = e->ws, me = e->me;
  void *args[] = {&own, &x->scratch, &x->out, &n8, &segl, &ws, &me};
  W(weft_kernel_launch(x->reduce, &cfg, args, (weft_stream_t)e->s0));
  dev_join(e);
  CU(cuMemsetD8Async((CUdeviceptr)(uintptr_t)x->sig, 0, (size_t)e->ws * 8, e->s0));
  if (gemm) CU(cuMemsetD8Async(x->ctr, 0, (size_t)e->ws * 8, e->s0));
}

static void cublas_gemm(ctx_t *x) {
  float one = 1.f, zero = 0.f;
  /* row-major C[M, N] = A[M, k] B[N, k]^T is column-major C^T = B^T A */
  CB(cublasGemmEx(x->e.blas, CUBLAS_OP_T, CUBLAS_OP_N, x->N, x->M, x->kloc, &one,
                  (void *)(uintptr_t)x->b, CUDA_R_16BF, x->kloc, (void *)(uintptr_t)x->a,
                  CUDA_R_16BF, x->kloc, &zero, (void *)(uintptr_t)x->cref, CUDA_R_16BF, x->N,
                  CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
}

static void nccl_reduce_scatter(ctx_t *x) {
  NC(ncclReduceScatter((void *)(uintptr_t)x->cref, (void *)(uintptr_t)x->outref,
                       (size_t)x->mloc * x->N, ncclBfloat16, ncclSum, x->e.nc, x->e.s0));
}

enum { R_GEMM_CUBLAS, R_GEMM_WEFT, R_RS_NCCL, R_RS_WEFT, R_BASELINE, R_FUSED, R_COUNT };
static const char *run_names[R_COUNT] = {"GEMM cuBLAS", "GEMM weft", "RS NCCL", "RS weft CE",
                                         "cuBLAS+NCCL", "weft fused"};

static void run(void *ctx, int r) {
  ctx_t *x = ctx;
  switch (r) {
  case R_GEMM_CUBLAS: cublas_gemm(x); break;
  case R_GEMM_WEFT: launch_gemm(x, x->gemm_plain, 0); break;
  case R_RS_NCCL: nccl_reduce_scatter(x); break;
  case R_RS_WEFT: reduce_scatter(x, 0); break;
  case R_BASELINE:
    cublas_gemm(x);
    nccl_reduce_scatter(x);
    break;
  case R_FUSED: reduce_scatter(x, 1); break;
  }
}

static int shape(ctx_t *x, const int *s) {
  dev_env_t *e = &x->e;
  int M = s[0], N = s[1], K = s[2];
  x->M = M, x->N = N, x->K = K, x->kloc = K / e->ws, x->mloc = M / e->ws;
  size_t seg = (size_t)x->mloc * N;
  W(weft_malloc(e->comm, (size_t)e->ws * seg * 2, (void **)&x->scratch));
  W(weft_malloc(e->comm, (size_t)e->ws * 8, (void **)&x->sig));
  CU(cuMemsetD8((CUdeviceptr)(uintptr_t)x->sig, 0, (size_t)e->ws * 8));
  CU(cuMemAlloc(&x->ctr, (size_t)e->ws * 8));
  CU(cuMemsetD8(x->ctr, 0, (size_t)e->ws * 8));
  CU(cuMemAlloc(&x->a, (size_t)M * x->kloc * 2));
  CU(cuMemAlloc(&x->b, (size_t)N * x->kloc * 2));
  CU(cuMemAlloc(&x->c, (size_t)M * N * 2));
  CU(cuMemAlloc(&x->cref, (size_t)M * N * 2));
  CU(cuMemAlloc(&x->out, seg * 2));
  CU(cuMemAlloc(&x->outref, seg * 2));
  unsigned long long seed = (unsigned long long)time(NULL) * 7919 + (unsigned)e->me * 104729;
  fill_random(x->a, (size_t)M * x->kloc, seed);
  fill_random(x->b, (size_t)N * x->kloc, seed ^ 0xABCDEF);
  encode(&x->tm_a, (void *)(uintptr_t)x->a, x->kloc, M, 64, GEMM_BM);
  encode(&x->tm_b, (void *)(uintptr_t)x->b, x->kloc, N, 64, GEMM_BN / GEMM_CL);
  encode(&x->tm_c, (void *)(uintptr_t)x->c, N, M, 64, 64);
  /* correctness: the fused op against cuBLAS + NCCL, twice (counters and signals must reset);
   * partial sums are rounded to bf16 on both sides, in different orders: 1e-2 */
  double err = 0;
  long nans = 0;
  for (int rep = 0; rep < 2 && !nans; rep++) {
    CU(cuMemsetD8(x->out, 0xFF, seg * 2)); /* bf16 0xFFFF: NaN */
    CU(cuMemsetD8(x->outref, 0xFF, seg * 2));
    run(x, R_BASELINE);
    run(x, R_FUSED);
    W(weft_stream_synchronize(e->comm, (weft_stream_t)e->s0));
    err = compare(x->out, x->outref, seg, &nans);
  }
  int bad = nans || !(err <= 1e-2);
  double med[R_COUNT];
  dev_time(e, R_COUNT, run, x, med);
  err = max_across(e->comm, err);
  bad = (int)max_across(e->comm, bad);
  double bound = med[R_GEMM_WEFT] > med[R_RS_WEFT] ? med[R_GEMM_WEFT] : med[R_RS_WEFT];
  dev_row(e, s, R_COUNT, med, med[R_BASELINE], med[R_FUSED], bound, err, bad);
  W(weft_free(e->comm, x->scratch));
  W(weft_free(e->comm, x->sig));
  CU(cuMemFree(x->ctr));
  CU(cuMemFree(x->a));
  CU(cuMemFree(x->b));
  CU(cuMemFree(x->c));
  CU(cuMemFree(x->cref));
  CU(cuMemFree(x->out));
  CU(cuMemFree(x->outref));
  return bad;
}

int main(int argc, char **argv) {
  /* weft-bench gemm_rs's default shapes (tools/bench_overlap.c: M, N, K of the whole layer) */
  static const int def[][3] = {{8192, 4096, 11008}, {8192, 4096, 14336}, {8192, 8192, 28672},
                               {8192, 16384, 53248}, {8192, 8192, 29568}};
  ctx_t x;
  memset(&x, 0, sizeof x);
  dev_env_init(&x.e, argc, argv, "gemm_rs_dev", def, 5);
  const char *notify[] = {"-DWEFT_GEMM_HOOK_NOTIFY=1", "-DWEFT_GEMM_NOTIFY_SYS=1"};
  weft_module_t *mn, *mp, *mr;
  x.gemm_notify = gemm_load(x.e.comm, notify, 2, &mn);
  x.gemm_plain = gemm_load(x.e.comm, NULL, 0, &mp);
  W(weft_module_load(x.e.comm, reduce_src, "rs_reduce.cu", NULL, 0, &mr));
  W(weft_module_get_kernel(mr, "rs_reduce", &x.reduce));
  dev_header(&x.e, "gemm_rs_dev",
             "B [N, K/ws]; bound = max(GEMM weft, RS weft CE) / fused", R_COUNT, run_names);
  int bad = 0;
  for (int i = 0; i < x.e.nshapes; i++) {
    const int *s = x.e.shapes[i];
    if (s[0] % (x.e.ws * GEMM_BM) || s[1] % 8 || s[2] % (x.e.ws * 8))
      DIE("shape %d,%d,%d: M must be a multiple of %d, N of 8, K of %d", s[0], s[1], s[2],
          x.e.ws * GEMM_BM, x.e.ws * 8);
    bad |= shape(&x, s);
  }
  W(weft_module_unload(mn));
  W(weft_module_unload(mp));
  W(weft_module_unload(mr));
  dev_env_fini(&x.e);
  return bad;
}
