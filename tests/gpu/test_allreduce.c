/*
 * test_allreduce.c — weft_allreduce against a float64 reference and NCCL's ncclAllReduce on
 * the same inputs (reduce_test.h gives the bounds): every algorithm (SM one-shot, two-shot, LL,
 * auto), sum and (fewer sizes) the other operators, fp16 / bf16 / fp32, counts from 1 to 64M elements including odd ones, odd element
 * offsets of both buffers, in place, guard zones around the output, bit-identical results on
 * every rank, CUDA-graph capture and replay, and 1,000 back-to-back calls with random per-rank
 * delays and no host synchronisation. Inputs are drawn fresh each run (the seed is printed), the
 * output is poisoned (NaN) before every call.
 */
// weft-test: ranks=2,4 timeout=600
#include "ops/ops.h" /* the ops' sizes that decide the forms */
#include "reduce_test.h"

#define MAX_COUNT (64ull << 20)
#define GUARD 256 /* bytes poisoned on each side of the output */

static const weft_algo_t algos[] = {WEFT_ALGO_SM, WEFT_ALGO_TWO_SHOT, WEFT_ALGO_LL, WEFT_ALGO_AUTO};
static const char *anames[] = {"SM one-shot", "two-shot", "LL", "auto"};
static const weft_dtype_t dts[] = {WEFT_DTYPE_FP16, WEFT_DTYPE_BF16, WEFT_DTYPE_FP32};

static int world; /* ranks */

static int takes(weft_algo_t a, size_t bytes, int in_place) {
  if (a == WEFT_ALGO_LL) return bytes <= WEFT_ALLREDUCE_LL_MAX_BYTES(world);
  if (a == WEFT_ALGO_SM) return !in_place;
  return 1;
}

static char *sendb, *recvb; /* symmetric, with room for offsets and guards */

/* rt_call_fn: the input of call c into sendb, recvb poisoned, weft_allreduce (AUTO where algo
 * does not take the size), the check. */
static void checked_call(rt_t *t, size_t n, weft_dtype_t dt, weft_algo_t algo, unsigned c, CUstream s) {
  if (!takes(algo, n * weft_dtype_size(dt), 0)) algo = WEFT_ALGO_AUTO;
  rt_fill(t, sendb, n, dt, t->rank, c, 0, s);
  CU(cuMemsetD8Async((CUdeviceptr)(uintptr_t)recvb, 0xFF, n * 4, s));
  OK(weft_allreduce(t->comm, sendb, recvb, n, dt, WEFT_RED_OP_SUM, algo, s));
  rt_check(t, recvb, n, dt, c, 0, NULL, s);
}

int main(void) {
  setenv("WEFT_HEAP_SIZE", "1G", 0);
  rt_t t;
  rt_init(&t, "test_allreduce.cu");
  int me = t.rank;
  world = t.world;
  size_t max_bytes = MAX_COUNT * 4;
  OK(weft_malloc(t.comm, max_bytes + 4096, (void **)&sendb));
  OK(weft_malloc(t.comm, max_bytes + 4096, (void **)&recvb));
  CUdeviceptr nsend, nrecv;
  CU(cuMemAlloc(&nsend, max_bytes));
  CU(cuMemAlloc(&nrecv, max_bytes));
  CUstream s;
  CU(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
  unsigned long long x = t.seed | 1, st[RT_STATS];
  unsigned call = 0;
  int fails = 0;
  double worst = 0;

  /* Counts 1, 4, ..., 64M, each also odd; random dtype; odd offsets for the odd ones. */
  for (size_t count = 1; count <= MAX_COUNT; count *= 4) {
    for (int odd = 0; odd < 2; odd++) {
      weft_dtype_t dt = dts[test_rand(&x) % 3];
      size_t elem = weft_dtype_size(dt), n = count;
      if (odd) n = count + 1 + test_rand(&x) % 7;
      if (n > MAX_COUNT) n = MAX_COUNT - 1;
      size_t soff = odd ? 1 + test_rand(&x) % 63 : 0, roff = GUARD / elem + (odd ? 1 + test_rand(&x) % 63 : 0);
      char *send = sendb + soff * elem, *recv = recvb + roff * elem;
      size_t bytes = n * elem;
      for (int a = 0; a < 4; a++) {
        if (!takes(algos[a], bytes, 0)) continue;
        CU(cuMemsetD8(t.stats, 0, RT_STATS * 8));
        call++;
        rt_fill(&t, send, n, dt, me, call, 0, s);
        rt_fill(&t, (void *)(uintptr_t)nsend, n, dt, me, call, 0, s);
        CU(cuMemsetD8Async((CUdeviceptr)(uintptr_t)(recv - GUARD), 0xFF, bytes + 2 * GUARD, s));
        CU(cuMemsetD8Async(nrecv, 0xFF, bytes, s));
        OK(weft_allreduce(t.comm, send, recv, n, dt, WEFT_RED_OP_SUM, algos[a], s));
        if (t.nc) NCCL_OK(ncclAllReduce((void *)(uintptr_t)nsend, (void *)(uintptr_t)nrecv, n, rt_nccl_type(dt),
                              ncclSum, t.nc, s));
        rt_check(&t, recv, n, dt, call, 0, t.nc ? (void *)(uintptr_t)nrecv : NULL, s);
        rt_guard(&t, recv - GUARD, GUARD, s);
        rt_guard(&t, recv + bytes, GUARD, s);
        rt_same(&t, recv, bytes, t.comm->node_first_rank, s);
        rt_stats(&t, s, st);
        double ne = rt_maxerr(st);
        if (ne > worst) worst = ne;
        if (st[0] || st[1] || st[4] || st[5]) {
          fails++;
          printf("[%d] FAIL %s: %zu x %s (send +%zu, recv +%zu el.): %llu off the float64 sum, %llu "
                 "off NCCL's, %llu guard bytes changed, %llu bytes differ from rank 0's\n",
                 me, anames[a], n, rt_type_name(dt), soff, roff - GUARD / elem, st[0], st[1], st[4], st[5]);
        }
        if (st[2]) printf("[%d] note: NCCL off the float64 sum on %llu elements (%s, %zu x %s)\n", me, st[2],
                          anames[a], n, rt_type_name(dt));
      }
    }
  }
  printf("[%d] counts 1 .. 64M, every algorithm: %s (largest normalised error %.3f ulp)\n", me,
         fails ? "FAILED" : "ok", worst);

  /* In place (sendbuf == recvbuf), every algorithm that takes it, bf16 sizes around each
   * threshold: AUTO's LL limit where the LL128 form is off (each rank pushes 2 MiB), LL's
   * largest, where AUTO takes the LL128 two-shot (512 KiB) and its limit
   * (WEFT_ALLREDUCE_LL128_BYTES), past the pushes' limit (WEFT_ALLREDUCE_PUSH_BYTES: the pull
   * two-shot); both limits as this communicator read them. */
  {
    size_t auto_ll = ((size_t)2 << 20) / (size_t)(world - 1) / 2;
    size_t ll_max = WEFT_ALLREDUCE_LL_MAX_BYTES(world) / 2, ll128 = t.comm->ops->red_ll128_max / 2;
    size_t push = t.comm->ops->red_push2_max / 2;
    const size_t counts[] = {3,       4099,    auto_ll, auto_ll + 1, ll_max,  ll_max + 5,
                             262143,  262144,  3000001, ll128,       ll128 + 5, push + 5};
    CU(cuMemsetD8(t.stats, 0, RT_STATS * 8));
    for (size_t i = 0; i < sizeof counts / sizeof counts[0]; i++)
      for (int a = 0; a < 4; a++) {
        weft_dtype_t dt = WEFT_DTYPE_BF16;
        /* (a limit set to 0 or past the buffers: its threshold goes untested) */
        if (!takes(algos[a], counts[i] * 2, 1) || !counts[i] || 2 * (counts[i] + 3) > max_bytes)
          continue;
        char *buf = sendb + 2 * 3; /* odd element offset */
        rt_fill(&t, buf, counts[i], dt, me, ++call, 0, s);
        OK(weft_allreduce(t.comm, buf, buf, counts[i], dt, WEFT_RED_OP_SUM, algos[a], s));
        rt_check(&t, buf, counts[i], dt, call, 0, NULL, s);
        rt_same(&t, buf, counts[i] * 2, t.comm->node_first_rank, s);
      }
    rt_stats(&t, s, st);
    if (st[0] || st[5]) fails++, printf("[%d] FAIL in place: %llu wrong, %llu differ from rank 0\n", me, st[0], st[5]);
    /* one-shot refuses in place */
    if (weft_allreduce(t.comm, sendb, sendb, 100, WEFT_DTYPE_FP32, WEFT_RED_OP_SUM, WEFT_ALGO_SM, s) !=
        WEFT_STATUS_INVALID_ARGUMENT)
      fails++, printf("[%d] FAIL: SM one-shot accepted in place\n", me);
  }

  /* Buffers outside the heap (cuMemAlloc, as a framework's allocator gives them): the forms that
   * move everything through internal symmetric areas take any device memory for both (LL one-
   * and two-shot, the LL128 two-shot); the pushes need a symmetric recvbuf only; the forms that
   * reach them from the peers refuse them. nsend / nrecv are such buffers. */
  {
    size_t ll_max = WEFT_ALLREDUCE_LL_MAX_BYTES(world) / 2, ll128 = t.comm->ops->red_ll128_max / 2;
    size_t push = t.comm->ops->red_push2_max / 2;
    const struct {
      weft_algo_t algo;
      size_t n;
      int heap_recv; /* recvbuf from the heap (the pushes), else cuMemAlloc's */
    } cases[] = {{WEFT_ALGO_LL, 5, 0},          {WEFT_ALGO_LL, ll_max - 3, 0},
                 {WEFT_ALGO_TWO_SHOT, 3001, 0}, {WEFT_ALGO_TWO_SHOT, ll128, 0},
                 {WEFT_ALGO_AUTO, 200001, 0},   {WEFT_ALGO_TWO_SHOT, ll128 + 77, 1},
                 {WEFT_ALGO_AUTO, push, 1}};
    CU(cuMemsetD8(t.stats, 0, RT_STATS * 8));
    int before = fails;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
      size_t n = cases[i].n;
      if (!n || 2 * n > max_bytes || (cases[i].heap_recv && n <= ll128)) continue; /* a limit set to 0 */
      char *out = cases[i].heap_recv ? recvb : (char *)(uintptr_t)nrecv;
      rt_fill(&t, (void *)(uintptr_t)nsend, n, WEFT_DTYPE_BF16, me, ++call, 0, s);
      CU(cuMemsetD8Async((CUdeviceptr)(uintptr_t)out, 0xFF, n * 2, s));
      weft_status_t r = weft_allreduce(t.comm, (void *)(uintptr_t)nsend, out, n, WEFT_DTYPE_BF16,
                                       WEFT_RED_OP_SUM, cases[i].algo, s);
      if (r != WEFT_STATUS_SUCCESS) {
        fails++;
        printf("[%d] FAIL %zu x bf16 (algo %d) from cuMemAlloc memory refused: %s\n", me, n,
               (int)cases[i].algo, weft_comm_get_last_error(t.comm));
        continue;
      }
      rt_check(&t, out, n, WEFT_DTYPE_BF16, call, 0, NULL, s);
    }
    rt_stats(&t, s, st);
    if (st[0]) fails++, printf("[%d] FAIL buffers outside the heap: %llu wrong\n", me, st[0]);
    /* refused before anything is enqueued, the same on every rank */
    if (weft_allreduce(t.comm, (void *)(uintptr_t)nsend, recvb, 1000, WEFT_DTYPE_BF16,
                       WEFT_RED_OP_SUM, WEFT_ALGO_SM, s) != WEFT_STATUS_INVALID_ARGUMENT)
      fails++, printf("[%d] FAIL: the SM one-shot accepted a sendbuf outside the heap\n", me);
    if (ll128 + 8 <= max_bytes / 2 &&
        weft_allreduce(t.comm, sendb, (void *)(uintptr_t)nrecv, ll128 + 8, WEFT_DTYPE_BF16,
                       WEFT_RED_OP_SUM, WEFT_ALGO_TWO_SHOT, s) != WEFT_STATUS_INVALID_ARGUMENT)
      fails++, printf("[%d] FAIL: the push two-shot accepted a recvbuf outside the heap\n", me);
    printf("[%d] buffers outside the heap (LL, LL128, pushes): %s\n", me,
           fails > before ? "FAILED" : "ok");
  }

  /* An operator's first call inside a CUDA graph capture, the strictest a caller can make
   * (global mode, on a blocking stream): its kernels are compiled and loaded there, and the
   * graph replays the call. */
  {
    const weft_red_op_t op = WEFT_RED_OP_MAX;
    const size_t n = 100003;
    int fresh = t.comm->ops->red[op].mod == NULL;
    CUstream cs;
    CU(cuStreamCreate(&cs, CU_STREAM_DEFAULT));
    CU(cuMemsetD8(t.stats, 0, RT_STATS * 8));
    t.op = op;
    call++;
    CUgraph g;
    CUgraphExec ge;
    CU(cuStreamBeginCapture(cs, CU_STREAM_CAPTURE_MODE_GLOBAL));
    rt_fill(&t, sendb, n, WEFT_DTYPE_BF16, me, call, 0, cs);
    CU(cuMemsetD8Async((CUdeviceptr)(uintptr_t)recvb, 0xFF, n * 2, cs));
    OK(weft_allreduce(t.comm, sendb, recvb, n, WEFT_DTYPE_BF16, op, WEFT_ALGO_AUTO, cs));
    rt_check(&t, recvb, n, WEFT_DTYPE_BF16, call, 0, NULL, cs);
    CU(cuStreamEndCapture(cs, &g));
    CU(cuGraphInstantiateWithFlags(&ge, g, 0));
    for (int r = 0; r < 3; r++) CU(cuGraphLaunch(ge, cs));
    rt_stats(&t, cs, st);
    CU(cuGraphExecDestroy(ge));
    CU(cuGraphDestroy(g));
    CU(cuStreamDestroy(cs));
    t.op = WEFT_RED_OP_SUM;
    int ok = fresh && t.comm->ops->red[op].mod && !st[0];
    if (!ok) fails++;
    printf("[%d] %s: max's first call inside a capture (%s), 3 replays: %llu wrong\n", me,
           ok ? "ok" : "FAIL", fresh ? "loaded there" : "already loaded before", st[0]);
  }

  /* The other operators, every algorithm, against float64 and NCCL's same operator: sizes that
   * reach LL, the LL128 two-shot, the pushes and (fp32, 36 MB) the pull two-shot. */
  {
    const size_t counts[] = {1, 4099, 262147, 1000003, 9000001};
    int before = fails;
    for (int op = WEFT_RED_OP_PROD; op < WEFT_RED_OP_COUNT; op++) {
      t.op = (weft_red_op_t)op;
      for (size_t i = 0; i < sizeof counts / sizeof counts[0]; i++)
        for (int a = 0; a < 4; a++) {
          weft_dtype_t dt = counts[i] > 4000000 ? WEFT_DTYPE_FP32 : dts[(i + (size_t)op) % 3];
          size_t n = counts[i], bytes = n * weft_dtype_size(dt);
          if (!takes(algos[a], bytes, 0)) continue;
          CU(cuMemsetD8(t.stats, 0, RT_STATS * 8));
          call++;
          rt_fill(&t, sendb, n, dt, me, call, 0, s);
          rt_fill(&t, (void *)(uintptr_t)nsend, n, dt, me, call, 0, s);
          CU(cuMemsetD8Async((CUdeviceptr)(uintptr_t)recvb, 0xFF, bytes, s));
          CU(cuMemsetD8Async(nrecv, 0xFF, bytes, s));
          OK(weft_allreduce(t.comm, sendb, recvb, n, dt, t.op, algos[a], s));
          if (t.nc) NCCL_OK(ncclAllReduce((void *)(uintptr_t)nsend, (void *)(uintptr_t)nrecv, n,
                                          rt_nccl_type(dt), rt_nccl_op(t.op), t.nc, s));
          rt_check(&t, recvb, n, dt, call, 0, t.nc ? (void *)(uintptr_t)nrecv : NULL, s);
          rt_same(&t, recvb, bytes, t.comm->node_first_rank, s);
          rt_stats(&t, s, st);
          if (st[0] || st[1] || st[5]) {
            fails++;
            printf("[%d] FAIL %s %s: %zu x %s: %llu off float64, %llu off NCCL's, %llu bytes differ "
                   "from rank 0's\n", me, rt_op_name(t.op), anames[a], n, rt_type_name(dt), st[0],
                   st[1], st[5]);
          }
          if (st[2]) printf("[%d] note: NCCL's %s off float64 on %llu elements (%s, %zu x %s)\n", me,
                            rt_op_name(t.op), st[2], anames[a], n, rt_type_name(dt));
        }
    }
    t.op = WEFT_RED_OP_SUM;
    if (weft_allreduce(t.comm, sendb, recvb, 100, WEFT_DTYPE_FP32, WEFT_RED_OP_COUNT, WEFT_ALGO_AUTO, s) !=
        WEFT_STATUS_INVALID_ARGUMENT)
      fails++, printf("[%d] FAIL: an operator out of range accepted\n", me);
    printf("[%d] prod, max, min, avg, every algorithm: %s\n", me, fails > before ? "FAILED" : "ok");
  }

  fails += rt_graph(&t, checked_call, 5003, algos, 4, dts, 0, &call, s);
  fails += rt_stragglers(&t, checked_call, 200000, algos, 4, dts, &x, &call, s);

  CU(cuStreamDestroy(s));
  CU(cuMemFree(nsend));
  CU(cuMemFree(nrecv));
  OK(weft_free(t.comm, recvb));
  OK(weft_free(t.comm, sendb));
  rt_finish(&t);
  printf("[%d] %s\n", me, fails ? "FAILED" : "ok");
  return fails ? 1 : 0;
}
