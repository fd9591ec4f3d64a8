/*
 * test_reduce_scatter.c — weft_reduce_scatter against a float64 reference and NCCL's
 * ncclReduceScatter on the same inputs (reduce_test.h gives the bounds): every algorithm (SM, copy
 * engine, ring, LL where a segment fits, auto), sum and (fewer sizes) the other operators, fp16 /
 * bf16 / fp32, totals from world to 64M elements including odd counts, odd element offsets of both
 * buffers, a recvbuf outside the symmetric heap, in place (recvbuf = this rank's segment of
 * sendbuf), guard zones around the output, copy-engine calls of many rounds (the staging area is
 * made small), CUDA-graph capture and replay, and 1,000 back-to-back calls with random per-rank
 * delays and no host synchronisation. Inputs are drawn fresh each run (the seed is printed), the
 * output is poisoned (NaN) before every call.
 */
// weft-test: ranks=2,4 timeout=600
#include "ops/ops.h" /* the ops' sizes that decide the forms */
#include "reduce_test.h"

#define MAX_TOTAL (64ull << 20) /* elements of sendbuf */
#define GUARD 256               /* bytes poisoned on each side of the output */

/* LL last: the graph and straggler blocks take the first four (AUTO is LL on their fp16/bf16
 * calls); LL runs where a segment fits (WEFT_ALLREDUCE_LL_MAX_BYTES(world)). */
static const weft_algo_t algos[] = {WEFT_ALGO_SM, WEFT_ALGO_COPY_ENGINE, WEFT_ALGO_AUTO, WEFT_ALGO_RING,
                                    WEFT_ALGO_LL};
static const char *anames[] = {"SM", "copy engine", "auto", "ring", "LL"};
#define NALGOS 5
static int world; /* ranks */
static int algo_takes(weft_algo_t a, size_t seg_bytes) {
  return a != WEFT_ALGO_LL || seg_bytes <= WEFT_ALLREDUCE_LL_MAX_BYTES(world);
}
static const weft_dtype_t dts[] = {WEFT_DTYPE_FP16, WEFT_DTYPE_BF16, WEFT_DTYPE_FP32};

static char *sendb, *recvb; /* symmetric sendbuf; recvbuf outside the heap */

/* rt_call_fn: the input of call c into sendb (every segment), recvb poisoned,
 * weft_reduce_scatter, the check of this rank's segment. */
static void checked_call(rt_t *t, size_t n, weft_dtype_t dt, weft_algo_t algo, unsigned c, CUstream s) {
  rt_fill(t, sendb, n * (size_t)t->world, dt, t->rank, c, 0, s);
  CU(cuMemsetD8Async((CUdeviceptr)(uintptr_t)recvb, 0xFF, n * 4, s));
  OK(weft_reduce_scatter(t->comm, sendb, recvb, n, dt, WEFT_RED_OP_SUM, algo, s));
  rt_check(t, recvb, n, dt, c, (size_t)t->rank * n, NULL, s);
}

int main(void) {
  setenv("WEFT_HEAP_SIZE", "1G", 0);
  /* Small staging: copy-engine calls from 1 MiB per rank on run in several rounds. */
  setenv("WEFT_REDUCE_STAGING_BYTES", "4M", 0);
  rt_t t;
  rt_init(&t, "test_reduce_scatter.cu");
  int me = t.rank;
  world = t.world;
  size_t max_bytes = MAX_TOTAL * 4;
  OK(weft_malloc(t.comm, max_bytes + 4096, (void **)&sendb));
  CUdeviceptr recvd, nsend, nrecv; /* recv outside the heap: any device memory is allowed */
  CU(cuMemAlloc(&recvd, max_bytes / (size_t)world + 4096));
  CU(cuMemAlloc(&nsend, max_bytes));
  CU(cuMemAlloc(&nrecv, max_bytes / (size_t)world + 64));
  recvb = (char *)(uintptr_t)recvd;
  CUstream s;
  CU(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
  unsigned long long x = t.seed | 1, st[RT_STATS];
  unsigned call = 0;
  int fails = 0;
  double worst = 0;

  /* Totals world, 4 world, ... up to 64M elements; each also with an odd recvcount; random
   * dtype; odd offsets for the odd ones. */
  for (size_t rc = 1; rc * (size_t)world <= MAX_TOTAL; rc *= 4) {
    for (int odd = 0; odd < 2; odd++) {
      weft_dtype_t dt = dts[test_rand(&x) % 3];
      size_t elem = weft_dtype_size(dt), n = rc;
      if (odd) n = rc + 1 + test_rand(&x) % 7;
      if (n * (size_t)world > MAX_TOTAL) n = MAX_TOTAL / (size_t)world - 1;
      size_t soff = odd ? 1 + test_rand(&x) % 63 : 0, roff = GUARD / elem + (odd ? 1 + test_rand(&x) % 63 : 0);
      char *send = sendb + soff * elem, *recv = recvb + roff * elem;
      size_t bytes = n * elem;
      for (int a = 0; a < NALGOS; a++) {
        if (!algo_takes(algos[a], bytes)) continue;
        CU(cuMemsetD8(t.stats, 0, RT_STATS * 8));
        call++;
        rt_fill(&t, send, n * (size_t)world, dt, me, call, 0, s);
        rt_fill(&t, (void *)(uintptr_t)nsend, n * (size_t)world, dt, me, call, 0, s);
        CU(cuMemsetD8Async((CUdeviceptr)(uintptr_t)(recv - GUARD), 0xFF, bytes + 2 * GUARD, s));
        CU(cuMemsetD8Async(nrecv, 0xFF, bytes, s));
        OK(weft_reduce_scatter(t.comm, send, recv, n, dt, WEFT_RED_OP_SUM, algos[a], s));
        if (t.nc) NCCL_OK(ncclReduceScatter((void *)(uintptr_t)nsend, (void *)(uintptr_t)nrecv, n, rt_nccl_type(dt),
                                  ncclSum, t.nc, s));
        rt_check(&t, recv, n, dt, call, (size_t)me * n, t.nc ? (void *)(uintptr_t)nrecv : NULL, s);
        rt_guard(&t, recv - GUARD, GUARD, s);
        rt_guard(&t, recv + bytes, GUARD, s);
        rt_stats(&t, s, st);
        double ne = rt_maxerr(st);
        if (ne > worst) worst = ne;
        if (st[0] || st[1] || st[4]) {
          fails++;
          printf("[%d] FAIL %s: recvcount %zu x %s (send +%zu, recv +%zu el.): %llu off the float64 "
                 "sum, %llu off NCCL's, %llu guard bytes changed\n",
                 me, anames[a], n, rt_type_name(dt), soff, roff - GUARD / elem, st[0], st[1], st[4]);
        }
        if (st[2]) printf("[%d] note: NCCL off the float64 sum on %llu elements (%s, %zu x %s)\n", me, st[2],
                          anames[a], n, rt_type_name(dt));
      }
    }
  }
  printf("[%d] totals %d .. 64M elements, every algorithm: %s (largest normalised error %.3f ulp)\n",
         me, world, fails ? "FAILED" : "ok", worst);

  /* In place: recvbuf = sendbuf + rank * recvcount, every algorithm, odd offset; from 1500001 on
   * several copy-engine rounds; 4500001 (18 MB a segment) past the SM form's pushes (a segment of
   * WEFT_ALLREDUCE_PUSH_BYTES / world at most, 32 MiB unless set): its pull. */
  {
    const size_t counts[] = {1, 4099, 300007, 1500001, 4500001};
    CU(cuMemsetD8(t.stats, 0, RT_STATS * 8));
    for (size_t i = 0; i < sizeof counts / sizeof counts[0]; i++)
      for (int a = 0; a < NALGOS; a++) {
        weft_dtype_t dt = WEFT_DTYPE_FP32;
        size_t n = counts[i];
        if (!algo_takes(algos[a], n * 4)) continue;
        char *send = sendb + 4 * 5;
        rt_fill(&t, send, n * (size_t)world, dt, me, ++call, 0, s);
        char *mine = send + (size_t)me * n * 4;
        OK(weft_reduce_scatter(t.comm, send, mine, n, dt, WEFT_RED_OP_SUM, algos[a], s));
        rt_check(&t, mine, n, dt, call, (size_t)me * n, NULL, s);
      }
    rt_stats(&t, s, st);
    if (st[0]) fails++, printf("[%d] FAIL in place: %llu wrong\n", me, st[0]);
  }

  /* A sendbuf outside the heap (nsend, cuMemAlloc's) through every form that pushes it from this
   * rank (LL, the SM pushes, the copy engines over several rounds, the ring), into recvb (also
   * outside); the SM pulls (segments above the pushes' limit) refuse it. */
  {
    const size_t counts[] = {3, 4099, 300001, 1500001};
    size_t pulls = t.comm->ops->red_push2_max / (size_t)world / 2 + 1; /* bf16 elements a segment */
    CU(cuMemsetD8(t.stats, 0, RT_STATS * 8));
    int before = fails;
    for (size_t i = 0; i < sizeof counts / sizeof counts[0]; i++)
      for (int a = 0; a < NALGOS; a++) {
        size_t n = counts[i];
        if (!algo_takes(algos[a], n * 2) || (algos[a] == WEFT_ALGO_SM && n >= pulls)) continue;
        rt_fill(&t, (void *)(uintptr_t)nsend, n * (size_t)world, WEFT_DTYPE_BF16, me, ++call, 0, s);
        CU(cuMemsetD8Async((CUdeviceptr)(uintptr_t)recvb, 0xFF, n * 2, s));
        weft_status_t r = weft_reduce_scatter(t.comm, (void *)(uintptr_t)nsend, recvb, n,
                                              WEFT_DTYPE_BF16, WEFT_RED_OP_SUM, algos[a], s);
        if (r != WEFT_STATUS_SUCCESS) {
          fails++;
          printf("[%d] FAIL %s, %zu x bf16 from a cuMemAlloc sendbuf refused: %s\n", me, anames[a],
                 n, weft_comm_get_last_error(t.comm));
          continue;
        }
        rt_check(&t, recvb, n, WEFT_DTYPE_BF16, call, (size_t)me * n, NULL, s);
      }
    rt_stats(&t, s, st);
    if (st[0]) fails++, printf("[%d] FAIL a sendbuf outside the heap: %llu wrong\n", me, st[0]);
    if (pulls * (size_t)world * 2 <= max_bytes &&
        weft_reduce_scatter(t.comm, (void *)(uintptr_t)nsend, recvb, pulls, WEFT_DTYPE_BF16,
                            WEFT_RED_OP_SUM, WEFT_ALGO_SM, s) != WEFT_STATUS_INVALID_ARGUMENT)
      fails++, printf("[%d] FAIL: the SM pulls accepted a sendbuf outside the heap\n", me);
    printf("[%d] a sendbuf outside the heap (LL, SM pushes, copy engine, ring): %s\n", me,
           fails > before ? "FAILED" : "ok");
  }

  /* The other operators, every algorithm, against float64 and NCCL's same operator; 1500001 in
   * several copy-engine rounds, 4500001 (fp32, 18 MB a segment) the SM form's pull. */
  {
    const size_t counts[] = {1, 4099, 300007, 1500001, 4500001};
    int before = fails;
    for (int op = WEFT_RED_OP_PROD; op < WEFT_RED_OP_COUNT; op++) {
      t.op = (weft_red_op_t)op;
      for (size_t i = 0; i < sizeof counts / sizeof counts[0]; i++)
        for (int a = 0; a < NALGOS; a++) {
          weft_dtype_t dt = counts[i] > 4000000 ? WEFT_DTYPE_FP32 : dts[(i + (size_t)op) % 3];
          size_t n = counts[i], bytes = n * weft_dtype_size(dt);
          if (!algo_takes(algos[a], bytes)) continue;
          CU(cuMemsetD8(t.stats, 0, RT_STATS * 8));
          call++;
          rt_fill(&t, sendb, n * (size_t)world, dt, me, call, 0, s);
          rt_fill(&t, (void *)(uintptr_t)nsend, n * (size_t)world, dt, me, call, 0, s);
          CU(cuMemsetD8Async((CUdeviceptr)(uintptr_t)recvb, 0xFF, bytes, s));
          CU(cuMemsetD8Async(nrecv, 0xFF, bytes, s));
          OK(weft_reduce_scatter(t.comm, sendb, recvb, n, dt, t.op, algos[a], s));
          if (t.nc) NCCL_OK(ncclReduceScatter((void *)(uintptr_t)nsend, (void *)(uintptr_t)nrecv, n,
                                              rt_nccl_type(dt), rt_nccl_op(t.op), t.nc, s));
          rt_check(&t, recvb, n, dt, call, (size_t)me * n, t.nc ? (void *)(uintptr_t)nrecv : NULL, s);
          rt_stats(&t, s, st);
          if (st[0] || st[1]) {
            fails++;
            printf("[%d] FAIL %s %s: recvcount %zu x %s: %llu off float64, %llu off NCCL's\n", me,
                   rt_op_name(t.op), anames[a], n, rt_type_name(dt), st[0], st[1]);
          }
          if (st[2]) printf("[%d] note: NCCL's %s off float64 on %llu elements (%s, %zu x %s)\n", me,
                            rt_op_name(t.op), st[2], anames[a], n, rt_type_name(dt));
        }
    }
    t.op = WEFT_RED_OP_SUM;
    printf("[%d] prod, max, min, avg, every algorithm: %s\n", me, fails > before ? "FAILED" : "ok");
  }

  /* n = 70001: copy engine in 2 rounds at 4 ranks with 4 MiB staging in fp32 (the ring's rounds
   * come in the totals above: 4 MiB of staging holds 512 Ki elements of a segment) */
  fails += rt_graph(&t, checked_call, 70001, algos, 4, dts, 2, &call, s);
  fails += rt_stragglers(&t, checked_call, 100000, algos, 4, dts, &x, &call, s);

  CU(cuStreamDestroy(s));
  CU(cuMemFree(recvd));
  CU(cuMemFree(nsend));
  CU(cuMemFree(nrecv));
  OK(weft_free(t.comm, sendb));
  rt_finish(&t);
  printf("[%d] %s\n", me, fails ? "FAILED" : "ok");
  return fails ? 1 : 0;
}
