/*
 * bench_collectives.c — `weft-bench allgather`: weft beside NCCL in the same process and run,
 * nccl-tests columns. For every size: both ops are checked once bit for bit on fresh data (output
 * poisoned first), then timed interleaved (weft, NCCL, weft, ...), -n samples each after -w
 * warm-up, each sample BATCH calls back to back between events on one stream (nccl-tests'
 * way); medians; the slowest rank is reported. Sizes are totals (the gathered array), as nccl-tests prints them.
 */
#include <string.h>

#include <nccl.h>

#include "bench.h"

#define BATCH 10 /* calls per timed sample */

#define NCCL_CHECK(call)                                                                  \
  do {                                                                                    \
    ncclResult_t r_ = (call);                                                             \
    if (r_ != ncclSuccess) {                                                              \
      fprintf(stderr, "weft-bench: %s failed: %s\n", #call, ncclGetErrorString(r_));       \
      exit(1);                                                                            \
    }                                                                                     \
  } while (0)

static ncclComm_t nccl_init(bench_t *b) {
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

static weft_algo_t parse_algo(const char *a) {
  if (!a || !strcmp(a, "auto")) return WEFT_ALGO_AUTO;
  if (!strcmp(a, "ce")) return WEFT_ALGO_COPY_ENGINE;
  if (!strcmp(a, "sm")) return WEFT_ALGO_SM;
  if (!strcmp(a, "ll")) return WEFT_ALGO_LL;
  fprintf(stderr, "weft-bench: -a takes auto, ce, sm or ll\n");
  exit(2);
}

static void fill(unsigned char *h, size_t n, unsigned seed) {
  unsigned long long x = 0x9e3779b97f4a7c15ull ^ ((unsigned long long)seed << 17);
  for (size_t i = 0; i < n; i++) x ^= x << 13, x ^= x >> 7, x ^= x << 17, h[i] = (unsigned char)(x >> 24);
}

int main_allgather(int argc, char **argv) {
  bench_t b;
  bench_parse(&b, argc, argv, 8, 256 << 20);
  bench_init(&b, "allgather");
  ncclComm_t nc = nccl_init(&b);
  weft_algo_t algo = parse_algo(b.opt.algo);
  size_t maxb = b.opt.max_bytes;
  unsigned char *recv;
  CUdeviceptr send, nrecv;
  BENCH_CHECK(weft_malloc(b.comm, maxb, (void **)&recv));
  BENCH_CU(cuMemAlloc(&send, maxb / b.world + 64));
  BENCH_CU(cuMemAlloc(&nrecv, maxb));
  unsigned char *hsend = malloc(maxb / b.world + 64), *hrecv = malloc(maxb), *want = malloc(maxb);
  CUevent e0, e1;
  BENCH_CU(cuEventCreate(&e0, CU_EVENT_DEFAULT));
  BENCH_CU(cuEventCreate(&e1, CU_EVENT_DEFAULT));
  int n = b.opt.iters;
  double *tw = calloc((size_t)n, sizeof *tw), *tn = calloc((size_t)n, sizeof *tn);
  double factor = (double)(b.world - 1) / b.world;
  if (b.rank == 0)
    printf("#\n# allgather, algorithm %s; sizes are the gathered totals; times in us\n"
           "#%12s %12s %6s | %9s %8s %8s %6s | %9s %8s %8s %6s | %7s\n", b.opt.algo ? b.opt.algo : "auto",
           "size", "count", "type", "weft", "algbw", "busbw", "#wrong", "nccl", "algbw", "busbw",
           "#wrong", "speedup");
  unsigned round = 0;
  /* WEFT_BENCH_IN_PLACE=1: weft gathers in place (its send is its own slot of recv). */
  int in_place = getenv("WEFT_BENCH_IN_PLACE") && !strcmp(getenv("WEFT_BENCH_IN_PLACE"), "1");
  for (size_t total = b.opt.min_bytes; total <= maxb; total = (size_t)(total * b.opt.factor) > total ? (size_t)(total * b.opt.factor) : total + 1) {
    size_t per = total / (size_t)b.world;
    if (per == 0) continue;
    size_t tot = per * (size_t)b.world;
    int wrong[2] = {0, 0};
    /* check both once: fresh data, poisoned outputs */
    for (int r = 0; r < b.world; r++) fill(want + (size_t)r * per, per, (unsigned)(r * 131 + round));
    memcpy(hsend, want + (size_t)b.rank * per, per);
    BENCH_CU(cuMemcpyHtoD(send, hsend, per));
    BENCH_CU(cuMemsetD8((CUdeviceptr)(uintptr_t)recv, 0xEE, tot));
    void *wsend = in_place ? (void *)(recv + (size_t)b.rank * per) : (void *)(uintptr_t)send;
    if (in_place) BENCH_CU(cuMemcpyHtoD((CUdeviceptr)(uintptr_t)wsend, hsend, per));
    BENCH_CU(cuMemsetD8(nrecv, 0xEE, tot));
    BENCH_CU(cuStreamSynchronize(NULL));
    BENCH_CHECK(weft_comm_barrier(b.comm));
    BENCH_CHECK(weft_allgather(b.comm, wsend, recv, per, WEFT_DTYPE_UINT8, algo, b.stream));
    NCCL_CHECK(ncclAllGather((void *)(uintptr_t)send, (void *)(uintptr_t)nrecv, per, ncclUint8, nc, b.stream));
    BENCH_CHECK(weft_stream_synchronize(b.comm, b.stream));
    BENCH_CU(cuMemcpyDtoH(hrecv, (CUdeviceptr)(uintptr_t)recv, tot));
    for (size_t i = 0; i < tot; i++) wrong[0] += hrecv[i] != want[i];
    BENCH_CU(cuMemcpyDtoH(hrecv, nrecv, tot));
    for (size_t i = 0; i < tot; i++) wrong[1] += hrecv[i] != want[i];
    b.wrong += wrong[0];
    round++;
    /* Time, interleaved: each sample is BATCH calls back to back between two events (as
     * nccl-tests times), weft's batch then NCCL's; a host barrier before each batch. */
    for (int i = -b.opt.warmup; i < n; i++) {
      for (int which = 0; which < 2; which++) {
        BENCH_CHECK(weft_comm_barrier(b.comm));
        BENCH_CU(cuEventRecord(e0, b.stream));
        for (int c = 0; c < BATCH; c++) {
          if (which == 0)
            BENCH_CHECK(weft_allgather(b.comm, wsend, recv, per, WEFT_DTYPE_UINT8, algo, b.stream));
          else
            NCCL_CHECK(ncclAllGather((void *)(uintptr_t)send, (void *)(uintptr_t)nrecv, per, ncclUint8, nc, b.stream));
        }
        BENCH_CU(cuEventRecord(e1, b.stream));
        BENCH_CU(cuEventSynchronize(e1));
        float ms;
        BENCH_CU(cuEventElapsedTime(&ms, e0, e1));
        if (i >= 0) (which ? tn : tw)[i] = ms * 1e3 / BATCH;
      }
    }
    double us_w = bench_max_across_ranks(&b, bench_median(tw, n));
    double us_n = bench_max_across_ranks(&b, bench_median(tn, n));
    int ww = (int)bench_max_across_ranks(&b, wrong[0]), wn = (int)bench_max_across_ranks(&b, wrong[1]);
    if (b.rank == 0) {
      double aw = tot / us_w / 1e3, an = tot / us_n / 1e3;
      printf(" %12zu %12zu %6s | %9.2f %8.2f %8.2f %6d | %9.2f %8.2f %8.2f %6d | %7.2f\n", tot, tot,
             "uint8", us_w, aw, aw * factor, ww, us_n, an, an * factor, wn, us_n / us_w);
      const char *k[] = {"bytes", "weft_us", "weft_busbw", "nccl_us", "nccl_busbw", "speedup", "wrong"};
      double v[] = {(double)tot, us_w, aw * factor, us_n, an * factor, us_n / us_w, ww};
      bench_json_row(&b, "allgather", b.opt.algo ? b.opt.algo : "auto", 7, k, v);
    }
  }
  ncclCommDestroy(nc);
  BENCH_CU(cuMemFree(send));
  BENCH_CU(cuMemFree(nrecv));
  BENCH_CHECK(weft_free(b.comm, recv));
  free(hsend), free(hrecv), free(want), free(tw), free(tn);
  bench_finish(&b);
  return 0;
}
