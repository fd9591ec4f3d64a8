/*
 * test_abort.c — weft_comm_abort reaches a kernel that spins on a signal nobody sets: with a
 * 60 s timeout, a host thread aborts after 300 ms; the stream must fail within a few seconds
 * with WEFT_STATUS_ABORTED, never waiting for the deadline.
 */
// weft-test: ranks=2,3,4 timeout=60
#include <pthread.h>

#include "gpu_test.h"

static void *aborter(void *arg) {
  usleep(300000);
  weft_comm_abort((weft_comm_t *)arg);
  return NULL;
}

int main(void) {
  setenv("WEFT_TIMEOUT_MS", "60000", 1);
  weft_comm_t *comm = test_init();
  uint64_t *sig;
  OK(weft_malloc(comm, 8, (void **)&sig));
  OK(weft_comm_barrier(comm));
  uint64_t t0 = weft_now_ns();
  OK(weft_stream_signal_wait(comm, sig, WEFT_CMP_EQ, 12345, NULL));
  pthread_t th;
  pthread_create(&th, NULL, aborter, comm);
  /* Poll the stream as an application would; the abort must end the wait on the GPU too. */
  CUresult r;
  while ((r = weft_cu.cuStreamQuery(NULL)) == CUDA_ERROR_NOT_READY &&
         weft_now_ns() - t0 < 20000000000ull)
    usleep(1000);
  double s = (double)(weft_now_ns() - t0) / 1e9;
  pthread_join(th, NULL);
  weft_status_t st = weft_comm_get_async_error(comm);
  printf("[%d] kernel ended after %.2f s (stream %s), async error: %s: %s\n", comm->rank, s,
         r == CUDA_SUCCESS ? "finished" : "failed", weft_get_error_string(st),
         weft_comm_get_last_error(comm));
  int fail = r == CUDA_ERROR_NOT_READY || st != WEFT_STATUS_ABORTED || s > 5.0;
  int rank = comm->rank;
  weft_comm_destroy(comm);
  printf("[%d] %s\n", rank, fail ? "FAILED" : "ok");
  return fail;
}
