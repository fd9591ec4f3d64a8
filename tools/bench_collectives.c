/*
 * bench_collectives.c — the machinery every collective suite shares (NCCL beside weft in the same
 * process and run, nccl-tests columns: see bench.h), and `weft-bench allgather`. For every size
 * both ops are checked once on fresh data (outputs poisoned first), then timed interleaved.
 * Sizes are totals (the gathered array), as nccl-tests prints them.
 */
#include <string.h>

#include <nccl.h>

#include "bench.h"

/* ---- shared by the collective suites (bench.h) --------------------------------------------- */

ncclComm_t bench_nccl_init(bench_t *b) {
  /* NCCL creates NVLink multicast objects unless told not to (DESIGN.md, Safety). */
  const char *mc = getenv("WEFT_ENABLE_MULTICAST");
  if (!mc || strcmp(mc, "1")) setenv("NCCL_NVLS_ENABLE", "0", 1);
  ncclUniqueId *ids = calloc((size_t)b->world, sizeof *ids);
  if (b->rank == 0) NCCL_CHECK(ncclGetUniqueId(&ids[0]));
  BENCH_CHECK(weft_bootstrap_allgather(b->comm->bootstrap, ids, sizeof *ids));
  ncclComm_t nc;
  NCCL_CHECK(ncclCommInitRank(&nc, b->world, ids[0], b->rank));
  free(ids);
  return nc;
}

weft_algo_t bench_parse_algo(const char *a) {
  static const struct {
    const char *name;
    weft_algo_t algo;
  } algos[] = {{"auto", WEFT_ALGO_AUTO}, {"ce", WEFT_ALGO_COPY_ENGINE}, {"sm", WEFT_ALGO_SM},
               {"ll", WEFT_ALGO_LL}, {"two_shot", WEFT_ALGO_TWO_SHOT},
               {"ring", WEFT_ALGO_RING}};
  if (!a) return WEFT_ALGO_AUTO;
  for (size_t i = 0; i < sizeof algos / sizeof algos[0]; i++)
    if (!strcmp(a, algos[i].name)) return algos[i].algo;
  fprintf(stderr, "weft-bench: unknown algorithm '%s' (-a takes", a);
  for (size_t i = 0; i < sizeof algos / sizeof algos[0]; i++) fprintf(stderr, " %s", algos[i].name);
  fprintf(stderr, ")\n");
  exit(2);
}

void bench_parse_dtype(const char *name, weft_dtype_t *wt, ncclDataType_t *nt) {
  static const struct {
    const char *name;
    weft_dtype_t w;
    ncclDataType_t n;
  } types[] = {{"uint8", WEFT_DTYPE_UINT8, ncclUint8}, {"int32", WEFT_DTYPE_INT32, ncclInt32},
               {"fp16", WEFT_DTYPE_FP16, ncclFloat16}, {"bf16", WEFT_DTYPE_BF16, ncclBfloat16},
               {"fp32", WEFT_DTYPE_FP32, ncclFloat32}, {"fp64", WEFT_DTYPE_FP64, ncclFloat64}};
  for (size_t i = 0; i < sizeof types / sizeof types[0]; i++)
    if (!strcmp(name, types[i].name)) {
      *wt = types[i].w;
      *nt = types[i].n;
      return;
    }
  fprintf(stderr, "weft-bench: unknown dtype '%s' (uint8 int32 fp16 bf16 fp32 fp64)\n", name);
  exit(2);
}

void bench_fill(void *h, size_t n, unsigned seed) {
  unsigned char *p = h;
  unsigned long long x = 0x9e3779b97f4a7c15ull ^ ((unsigned long long)seed << 17);
  for (size_t i = 0; i < n; i++) x ^= x << 13, x ^= x >> 7, x ^= x << 17, p[i] = (unsigned char)(x >> 24);
}

void bench_time_pair(bench_t *b, bench_call_fn call, void *ctx, double *us_weft, double *us_nccl) {
  int n = b->opt.iters;
  double *t[2] = {calloc((size_t)n, sizeof(double)), calloc((size_t)n, sizeof(double))};
  CUevent e0, e1;
  BENCH_CU(cuEventCreate(&e0, CU_EVENT_DEFAULT));
  BENCH_CU(cuEventCreate(&e1, CU_EVENT_DEFAULT));
  for (int i = -b->opt.warmup; i < n; i++)
    for (int which = 0; which < 2; which++) {
      BENCH_CHECK(weft_comm_barrier(b->comm));
      BENCH_CU(cuEventRecord(e0, b->stream));
      for (int c = 0; c < BENCH_BATCH; c++) call(b, ctx, which);
      BENCH_CU(cuEventRecord(e1, b->stream));
      BENCH_CU(cuEventSynchronize(e1));
      float ms;
      BENCH_CU(cuEventElapsedTime(&ms, e0, e1));
      if (i >= 0) t[which][i] = ms * 1e3 / BENCH_BATCH;
    }
  *us_weft = bench_max_across_ranks(b, bench_median(t[0], n));
  *us_nccl = bench_max_across_ranks(b, bench_median(t[1], n));
  BENCH_CU(cuEventDestroy(e0));
  BENCH_CU(cuEventDestroy(e1));
  free(t[0]), free(t[1]);
}

void bench_coll_header(bench_t *b, const char *suite) {
  if (b->rank == 0)
    printf("#\n# %s, algorithm %s; size in bytes as nccl-tests prints it; times in us\n"
           "#%12s %12s %6s | %9s %8s %8s %6s | %9s %8s %8s %6s | %7s\n",
           suite, b->opt.algo ? b->opt.algo : "auto", "size", "count", "type", "weft", "algbw",
           "busbw", "#wrong", "nccl", "algbw", "busbw", "#wrong", "speedup");
}

void bench_coll_row(bench_t *b, const char *suite, size_t bytes, size_t count, const char *type,
                    double us_w, double us_n, double bus_factor, int wrong_w, int wrong_n) {
  b->wrong += wrong_w;
  int ww = (int)bench_max_across_ranks(b, wrong_w), wn = (int)bench_max_across_ranks(b, wrong_n);
  if (b->rank) return;
  double aw = bytes / us_w / 1e3, an = bytes / us_n / 1e3;
  printf(" %12zu %12zu %6s | %9.2f %8.2f %8.2f %6d | %9.2f %8.2f %8.2f %6d | %7.2f\n", bytes, count,
         type, us_w, aw, aw * bus_factor, ww, us_n, an, an * bus_factor, wn, us_n / us_w);
  const char *k[] = {"bytes", "weft_us", "weft_busbw", "nccl_us", "nccl_busbw", "speedup", "wrong"};
  double v[] = {(double)bytes, us_w, aw * bus_factor, us_n, an * bus_factor, us_n / us_w, ww};
  bench_json_row(b, suite, b->opt.algo ? b->opt.algo : "auto", 7, k, v);
}

/* ---- allgather ------------------------------------------------------------------------------- */

typedef struct ag_ctx {
  ncclComm_t nc;
  weft_algo_t algo;
  void *wsend, *recv;
  CUdeviceptr send, nrecv;
  size_t per;
} ag_ctx_t;

static void ag_call(bench_t *b, void *ctx, int which) {
  ag_ctx_t *x = ctx;
  if (which == 0)
    BENCH_CHECK(weft_allgather(b->comm, x->wsend, x->recv, x->per, WEFT_DTYPE_UINT8, x->algo, b->stream));
  else
    NCCL_CHECK(ncclAllGather((void *)(uintptr_t)x->send, (void *)(uintptr_t)x->nrecv, x->per, ncclUint8,
                             x->nc, b->stream));
}

int main_allgather(int argc, char **argv) {
  bench_t b;
  bench_parse(&b, argc, argv, 8, 256 << 20);
  bench_init(&b, "allgather");
  ag_ctx_t x = {bench_nccl_init(&b), bench_parse_algo(b.opt.algo), NULL, NULL, 0, 0, 0};
  size_t maxb = b.opt.max_bytes;
  unsigned char *recv;
  BENCH_CHECK(weft_malloc(b.comm, maxb, (void **)&recv));
  x.recv = recv;
  BENCH_CU(cuMemAlloc(&x.send, maxb / b.world + 64));
  BENCH_CU(cuMemAlloc(&x.nrecv, maxb));
  unsigned char *hsend = malloc(maxb / b.world + 64), *hrecv = malloc(maxb), *want = malloc(maxb);
  bench_coll_header(&b, "allgather");
  unsigned round = 0;
  /* WEFT_BENCH_IN_PLACE=1: weft gathers in place (its send is its own slot of recv). */
  int in_place = getenv("WEFT_BENCH_IN_PLACE") && !strcmp(getenv("WEFT_BENCH_IN_PLACE"), "1");
  for (size_t total = b.opt.min_bytes; total <= maxb; total = (size_t)(total * b.opt.factor) > total ? (size_t)(total * b.opt.factor) : total + 1) {
    size_t per = total / (size_t)b.world;
    if (per == 0) continue;
    size_t tot = per * (size_t)b.world;
    x.per = per;
    int wrong[2] = {0, 0};
    /* check both once: fresh data, poisoned outputs */
    for (int r = 0; r < b.world; r++) bench_fill(want + (size_t)r * per, per, (unsigned)(r * 131 + round));
    memcpy(hsend, want + (size_t)b.rank * per, per);
    BENCH_CU(cuMemcpyHtoD(x.send, hsend, per));
    BENCH_CU(cuMemsetD8((CUdeviceptr)(uintptr_t)recv, 0xEE, tot));
    x.wsend = in_place ? (void *)(recv + (size_t)b.rank * per) : (void *)(uintptr_t)x.send;
    if (in_place) BENCH_CU(cuMemcpyHtoD((CUdeviceptr)(uintptr_t)x.wsend, hsend, per));
    BENCH_CU(cuMemsetD8(x.nrecv, 0xEE, tot));
    BENCH_CU(cuStreamSynchronize(NULL));
    BENCH_CHECK(weft_comm_barrier(b.comm));
    ag_call(&b, &x, 0);
    ag_call(&b, &x, 1);
    BENCH_CHECK(weft_stream_synchronize(b.comm, b.stream));
    BENCH_CU(cuMemcpyDtoH(hrecv, (CUdeviceptr)(uintptr_t)recv, tot));
    for (size_t i = 0; i < tot; i++) wrong[0] += hrecv[i] != want[i];
    BENCH_CU(cuMemcpyDtoH(hrecv, x.nrecv, tot));
    for (size_t i = 0; i < tot; i++) wrong[1] += hrecv[i] != want[i];
    round++;
    double us_w, us_n;
    bench_time_pair(&b, ag_call, &x, &us_w, &us_n);
    bench_coll_row(&b, "allgather", tot, tot, "uint8", us_w, us_n, (double)(b.world - 1) / b.world,
                   wrong[0], wrong[1]);
  }
  ncclCommDestroy(x.nc);
  BENCH_CU(cuMemFree(x.send));
  BENCH_CU(cuMemFree(x.nrecv));
  BENCH_CHECK(weft_free(b.comm, recv));
  free(hsend), free(hrecv), free(want);
  bench_finish(&b);
  return 0;
}
