/*
 * test_hang_report.c — a planted hang inside an overlapped op, end to end. The driver (run by
 * ctest with weftrun's path) starts 2- and 3-rank jobs (on shared GPUs where there are fewer) in
 * which rank 1 never sends its rows while the other ranks call weft_ag_gemm or weft_gemm_rs: in
 * the copy engine's form, or on a shared GPU, where that form cannot run (weft_ops_engine_form),
 * AG+GEMM's AUTO (the sequential form) and GEMM+RS's fused scatter. Where the form begins with a
 * stream barrier of the ranks, rank 1 passes it too, so that the others wait inside the op
 * proper. A wait on rank 1 inside the op (the GEMM's per-tile wait, the AllGather's or the
 * reduction's wait on rank 1's arrival flag) must time out, and then:
 *   - every rank prints exactly one line (the watchdog's): a waiting rank names the op, itself,
 *     rank 1 and the signal; rank 1, which waits on nothing, says which rank's failure ended it;
 *   - the waiting ranks get WEFT_STATUS_TIMEOUT or WEFT_STATUS_ABORTED from the call or from
 *     weft_stream_synchronize (a call that goes on after its rank's wait trapped gets the
 *     timeout's status, not the driver's CUDA error), and rank 1 sees the abort
 *     (weft_comm_get_async_error) long before its own deadline: the abort reached every rank;
 *   - the job exits non-zero well within the deadline + a few seconds.
 */
// weft-test: ranks=driver timeout=300
#include "gpu_test.h"

#define TIMEOUT_MS 3000
#define VP(p) ((void *)(uintptr_t)(p))

static int child(const char *op) {
  weft_comm_t *comm = test_init();
  int me = comm->rank, world = comm->world, m = 256, n = 512, k = 256;
  int ag = !strcmp(op, "ag_gemm");
  CUstream s;
  CU(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
  CUdeviceptr a, b, c;
  size_t arows = ag ? (size_t)m : (size_t)m * world;
  CU(cuMemAlloc(&a, arows * k * 2));
  CU(cuMemAlloc(&b, (size_t)n * k * 2));
  CU(cuMemAlloc(&c, (size_t)m * world * n * 2));
  CU(cuMemsetD8(a, 0x3c, arows * k * 2));
  CU(cuMemsetD8(b, 0x3c, (size_t)n * k * 2));
  void *sym;
  size_t ws = (size_t)m * world * k * 2;
  if (!ag) OK(weft_gemm_rs_workspace_size(comm, m * world, n, WEFT_DTYPE_BF16, &ws));
  OK(weft_malloc(comm, ws, &sym));
  OK(weft_comm_barrier(comm));
  uint64_t t0 = weft_now_ns();
  weft_status_t st;
  /* AG+GEMM's sequential form (on a shared GPU) starts with the AllGather itself */
  int barrier_first = !ag || !comm->gpu_shared;
  if (me == 1) {
    /* the op's first step, then nothing: the others pass their barrier and wait for rank 1 */
    if (barrier_first) {
      OK(weft_stream_barrier(comm, s));
      OK(weft_stream_synchronize(comm, s));
    }
    while ((st = weft_comm_get_async_error(comm)) == WEFT_STATUS_SUCCESS &&
           weft_now_ns() - t0 < (TIMEOUT_MS + 20000) * 1000000ull)
      usleep(1000);
  } else {
    weft_algo_t form = !comm->gpu_shared ? WEFT_ALGO_COPY_ENGINE : ag ? WEFT_ALGO_AUTO : WEFT_ALGO_SM;
    printf("CHILD rank %d form=%s\n", me, form == WEFT_ALGO_COPY_ENGINE ? "copy_engine" : "other");
    if (ag)
      st = weft_ag_gemm(comm, VP(a), sym, VP(b), k, VP(c), n, m, n, k, WEFT_DTYPE_BF16,
                        WEFT_DTYPE_BF16, WEFT_GEMM_LAYOUT_NK, form, s);
    else
      st = weft_gemm_rs(comm, VP(a), k, VP(b), k, VP(c), sym, m * world, n, k, WEFT_DTYPE_BF16,
                        WEFT_DTYPE_BF16, WEFT_GEMM_LAYOUT_NK, form, s);
    if (st == WEFT_STATUS_SUCCESS) st = weft_stream_synchronize(comm, s);
  }
  double ms = (double)(weft_now_ns() - t0) / 1e6;
  printf("CHILD rank %d status=%s after %.0f ms\n", me, weft_get_error_string(st), ms);
  fflush(stdout);
  fflush(stderr);
  /* the first rank to exit ends the job (weftrun): the others' calls, which end after their
   * waits were aborted, get this long to return and say so */
  usleep(2000 * 1000);
  /* no destroy: a trapped context cannot finish its work; the job ends with this process */
  _exit(st == WEFT_STATUS_TIMEOUT || st == WEFT_STATUS_ABORTED ? 3 : 1);
}

/* Lines of out that contain every one of the (up to two) strings. */
static int count(const char *out, const char *a, const char *b) {
  int n = 0;
  for (const char *l = out; l && *l;) {
    const char *e = strchr(l, '\n');
    size_t len = e ? (size_t)(e - l) : strlen(l);
    char line[2048];
    snprintf(line, sizeof line, "%.*s", (int)(len < sizeof line ? len : sizeof line - 1), l);
    if (strstr(line, a) && (!b || strstr(line, b))) n++;
    l = e ? e + 1 : NULL;
  }
  return n;
}

int main(int argc, char **argv) {
  const char *mode = getenv("WEFT_TEST_MODE");
  if (mode && (!strcmp(mode, "ag_gemm") || !strcmp(mode, "gemm_rs"))) return child(mode);
  if (argc < 2) {
    fprintf(stderr, "usage: %s <weftrun>\n", argv[0]);
    return 2;
  }
  static char out[1 << 16];
  char cmd[4096], who[64];
  int fails = 0;
  const char *ops[] = {"ag_gemm", "gemm_rs"};
  const char *what[] = {"timed out in ag_gemm tile", "timed out in gemm_rs(arrival)"};
  for (int o = 0; o < 2; o++)
    for (int world = 2; world <= 3; world++) {
      snprintf(cmd, sizeof cmd,
               "WEFT_TEST_MODE=%s WEFT_TIMEOUT_MS=%d %s --share-gpus -n %d %s 2>&1", ops[o],
               TIMEOUT_MS, argv[1], world, argv[0]);
      uint64_t t0 = weft_now_ns();
      int rc = test_run_job(cmd, out, sizeof out);
      double s = (double)(weft_now_ns() - t0) / 1e9;
      printf("---- %s at %d ranks, rank 1 silent: exit %d after %.1f s\n%s----\n", ops[o], world,
             rc, s, out);
      if (rc == 77) return 77;
      if (rc == 0) fails++, printf("FAIL: the job exited 0\n");
      if (s > TIMEOUT_MS / 1000.0 + 30) fails++, printf("FAIL: took %.1f s\n", s);
      /* one line of weft's per rank (its log prefix ends ":<rank> weft WARN "): the failure, or
       * whose failure stopped it */
      for (int r = 0; r < world; r++) {
        snprintf(who, sizeof who, ":%d weft WARN ", r);
        int said = count(out, who, NULL) - count(out, who, "WEFT_SHARE_GPUS");
        int why = count(out, who, "timed out in"); /* its own, or the one that stopped it */
        if (said != 1 || why != 1)
          fails++, printf("FAIL: rank %d said %d lines (%d of them its failure or whose), not 1\n",
                          r, said, why);
        snprintf(who, sizeof who, "CHILD rank %d status=", r);
        if (!strstr(out, who)) fails++, printf("FAIL: rank %d never returned\n", r);
      }
      /* the wait inside the op by name, where it is the GEMM's or the reduction's */
      int named = o == 1 || count(out, "CHILD rank 0 form=copy_engine", NULL);
      if (!count(out, named ? what[o] : "timed out in", "waiting on rank 1"))
        fails++, printf("FAIL: no line names %s's wait on rank 1\n", named ? ops[o] : "a");
      int ended = count(out, "CHILD rank", "status=timeout") +
                  count(out, "CHILD rank", "status=aborted");
      if (ended != count(out, "CHILD rank", "status="))
        fails++, printf("FAIL: a rank's call ended with neither a timeout nor an abort\n");
    }
  printf("%s\n", fails ? "FAILED" : "ok");
  return fails ? 1 : 0;
}
