/*
 * test_bad_inputs.c (GPU) — bad inputs that need a live communicator: a second init, an
 * exhausted heap, mismatched collective allocations (reported on every rank, nothing allocated,
 * the heap still usable after), device memory that is not symmetric, double free, a module load
 * refused inside a CUDA graph capture. Each must return its status with a message, change
 * nothing, and leave the communicator working.
 */
// weft-test: ranks=2,4 timeout=120
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/module.h"  /* weft_module_load_cubin */
#include "runtime/loader.h" /* weft_cu: the driver table, since tests do not link libcuda */

static int failures, checked;
static weft_comm_t *comm;
static int rank, world;

/* Calls given a communicator record their message there; the others on the calling thread. */
static void expect_msg(const char *what, weft_status_t got, weft_status_t want, const char *msg) {
  checked++;
  if (got != want || (want != WEFT_STATUS_SUCCESS && !*msg)) {
    failures++;
    printf("[%d] FAIL %-50s got %s want %s (%s)\n", rank, what, weft_get_error_string(got),
           weft_get_error_string(want), msg);
  } else if (rank == 0) {
    printf("[%d] ok   %-50s %-16s %.100s\n", rank, what, weft_get_error_string(got),
           want ? msg : "");
  }
}

static void expect(const char *what, weft_status_t got, weft_status_t want) {
  expect_msg(what, got, want, weft_comm_get_last_error(comm));
}

int main(void) {
  weft_status_t st = weft_comm_init(&comm, NULL);
  if (st == WEFT_STATUS_NO_DEVICE) {
    printf("skipped: %s\n", weft_get_last_error());
    return 77;
  }
  if (st != WEFT_STATUS_SUCCESS) {
    printf("weft_comm_init: %s: %s\n", weft_get_error_string(st), weft_get_last_error());
    return 1;
  }
  weft_comm_rank(comm, &rank);
  weft_comm_size(comm, &world);

  weft_comm_t *second = NULL;
  expect_msg("second comm_init in one process", weft_comm_init(&second, NULL),
             WEFT_STATUS_INVALID_USAGE, weft_get_last_error());

  void *a = NULL, *b = NULL;
  /* Rank 1 asks for a different size: every rank must fail, nothing allocated anywhere. */
  expect("malloc with sizes differing across ranks",
         weft_malloc(comm, rank == 1 ? 2048 : 1024, &a), WEFT_STATUS_MISMATCH);
  expect("malloc after a mismatch works", weft_malloc(comm, 1024, &a), WEFT_STATUS_SUCCESS);
  /* Rank 0 frees, others allocate: a mismatch in the call sequence. */
  expect("free on one rank while others malloc",
         rank == 0 ? weft_free(comm, a) : weft_malloc(comm, 1024, &b), WEFT_STATUS_MISMATCH);
  expect("heap exhausted", weft_malloc(comm, (size_t)1 << 50, &b), WEFT_STATUS_OUT_OF_MEMORY);
  expect("malloc after exhaustion works", weft_malloc(comm, 4096, &b), WEFT_STATUS_SUCCESS);

  CUdeviceptr plain;
  weft_cu.cuMemAlloc(&plain, 4096);
  void *peer;
  expect("peer_ptr of cuMemAlloc memory", weft_peer_ptr(comm, (void *)plain, 0, &peer),
         WEFT_STATUS_INVALID_ARGUMENT);
  expect("put into cuMemAlloc memory",
         weft_stream_put(comm, (void *)plain, b, 64, (rank + 1) % world, NULL),
         WEFT_STATUS_INVALID_ARGUMENT);
  expect("free of cuMemAlloc memory", weft_free(comm, (void *)plain), WEFT_STATUS_INVALID_ARGUMENT);
  expect("peer_ptr rank == world", weft_peer_ptr(comm, a, world, &peer), WEFT_STATUS_INVALID_ARGUMENT);
  expect("peer_ptr of a valid pointer", weft_peer_ptr(comm, a, (rank + 1) % world, &peer),
         WEFT_STATUS_SUCCESS);
  expect("free", weft_free(comm, b), WEFT_STATUS_SUCCESS);
  expect("double free", weft_free(comm, b), WEFT_STATUS_INVALID_ARGUMENT);
  expect("kernel_launch(NULL kernel)", weft_kernel_launch(NULL, NULL, NULL, NULL),
         WEFT_STATUS_INVALID_ARGUMENT);

  /* Reductions: every bad argument is refused before any work (the same calls on every rank). */
  char *ac = a;
  expect("allreduce one-shot (peers read it) of a sendbuf from cuMemAlloc",
         weft_allreduce(comm, (void *)plain, a, 16, WEFT_DTYPE_FP32, WEFT_RED_OP_SUM, WEFT_ALGO_SM, NULL),
         WEFT_STATUS_INVALID_ARGUMENT);
  expect("allreduce of uint8",
         weft_allreduce(comm, a, a, 16, WEFT_DTYPE_UINT8, WEFT_RED_OP_SUM, WEFT_ALGO_AUTO, NULL),
         WEFT_STATUS_INVALID_ARGUMENT);
  expect("allreduce op 7",
         weft_allreduce(comm, a, a, 16, WEFT_DTYPE_FP32, (weft_red_op_t)7, WEFT_ALGO_AUTO, NULL),
         WEFT_STATUS_INVALID_ARGUMENT);
  expect("allreduce by copy engine",
         weft_allreduce(comm, a, a, 16, WEFT_DTYPE_FP32, WEFT_RED_OP_SUM, WEFT_ALGO_COPY_ENGINE, NULL),
         WEFT_STATUS_INVALID_ARGUMENT);
  expect("allreduce misaligned fp32",
         weft_allreduce(comm, ac + 1, ac + 513, 16, WEFT_DTYPE_FP32, WEFT_RED_OP_SUM, WEFT_ALGO_AUTO, NULL),
         WEFT_STATUS_INVALID_ARGUMENT);
  expect("allreduce one-shot in place",
         weft_allreduce(comm, a, a, 16, WEFT_DTYPE_FP32, WEFT_RED_OP_SUM, WEFT_ALGO_SM, NULL),
         WEFT_STATUS_INVALID_ARGUMENT);
  expect("allreduce overlapping, not in place",
         weft_allreduce(comm, a, ac + 4, 16, WEFT_DTYPE_FP32, WEFT_RED_OP_SUM, WEFT_ALGO_AUTO, NULL),
         WEFT_STATUS_INVALID_ARGUMENT);
  expect("allreduce past the end of the heap",
         weft_allreduce(comm, a, a, (size_t)1 << 40, WEFT_DTYPE_FP32, WEFT_RED_OP_SUM, WEFT_ALGO_AUTO, NULL),
         WEFT_STATUS_INVALID_ARGUMENT);
  expect("allreduce NULL", weft_allreduce(comm, NULL, a, 16, WEFT_DTYPE_FP32, WEFT_RED_OP_SUM, WEFT_ALGO_AUTO, NULL),
         WEFT_STATUS_INVALID_ARGUMENT);
  expect("allreduce of 0 elements",
         weft_allreduce(comm, NULL, NULL, 0, WEFT_DTYPE_FP32, WEFT_RED_OP_SUM, WEFT_ALGO_AUTO, NULL),
         WEFT_STATUS_SUCCESS);
  expect("reduce_scatter by two-shot",
         weft_reduce_scatter(comm, a, (void *)plain, 16, WEFT_DTYPE_BF16, WEFT_RED_OP_SUM, WEFT_ALGO_TWO_SHOT, NULL),
         WEFT_STATUS_INVALID_ARGUMENT);
  expect("reduce_scatter by pulls (peers read it) of a sendbuf from cuMemAlloc",
         weft_reduce_scatter(comm, (void *)plain, a, (size_t)64 << 20, WEFT_DTYPE_BF16, WEFT_RED_OP_SUM,
                             WEFT_ALGO_SM, NULL),
         WEFT_STATUS_INVALID_ARGUMENT);
  expect("allgather by SM stores into a recvbuf from cuMemAlloc",
         weft_allgather(comm, a, (void *)plain, 16, WEFT_DTYPE_FP32, WEFT_ALGO_SM, NULL),
         WEFT_STATUS_INVALID_ARGUMENT);
  expect("reduce_scatter recvbuf inside sendbuf, not my segment",
         weft_reduce_scatter(comm, a, ac + 2 * 16 * ((rank + 1) % world) + 2, 16, WEFT_DTYPE_BF16,
                             WEFT_RED_OP_SUM, WEFT_ALGO_AUTO, NULL),
         WEFT_STATUS_INVALID_ARGUMENT);
  /* and the valid forms work */
  expect("allreduce in place (LL)",
         weft_allreduce(comm, a, a, 16, WEFT_DTYPE_FP32, WEFT_RED_OP_SUM, WEFT_ALGO_AUTO, NULL),
         WEFT_STATUS_SUCCESS);
  expect("allreduce of cuMemAlloc memory (LL: any device memory)",
         weft_allreduce(comm, (void *)plain, (char *)(uintptr_t)plain + 2048, 16, WEFT_DTYPE_FP32,
                        WEFT_RED_OP_SUM, WEFT_ALGO_AUTO, NULL),
         WEFT_STATUS_SUCCESS);
  expect("reduce_scatter into cuMemAlloc memory",
         weft_reduce_scatter(comm, a, (void *)plain, 16, WEFT_DTYPE_BF16, WEFT_RED_OP_SUM, WEFT_ALGO_AUTO, NULL),
         WEFT_STATUS_SUCCESS);
  expect("reduce_scatter in place",
         weft_reduce_scatter(comm, a, ac + 2 * 16 * rank, 16, WEFT_DTYPE_BF16, WEFT_RED_OP_SUM, WEFT_ALGO_SM, NULL),
         WEFT_STATUS_SUCCESS);
  expect("synchronize", weft_stream_synchronize(comm, NULL), WEFT_STATUS_SUCCESS);

  /* A load the driver refuses inside a CUDA graph capture (global mode, blocking stream: the
   * strictest) returns its status and leaves the capture whole: a collective captured after it
   * is in the graph, which replays. */
  {
    static const unsigned char junk[256] = {0x7f, 'E', 'L', 'F'}; /* an ELF header, nothing else */
    CUstream cs;
    CUgraph g = NULL;
    CUgraphExec ge = NULL;
    struct weft_module *m = NULL;
    int ok = weft_cu.cuStreamCreate(&cs, CU_STREAM_DEFAULT) == CUDA_SUCCESS &&
             weft_cu.cuStreamBeginCapture(cs, CU_STREAM_CAPTURE_MODE_GLOBAL) == CUDA_SUCCESS;
    weft_status_t lst = weft_module_load_cubin(comm, junk, sizeof junk, "junk.cubin", &m);
    checked++;
    if (lst == WEFT_STATUS_SUCCESS || !*weft_comm_get_last_error(comm))
      failures++, printf("[%d] FAIL a refused cubin inside a capture: %s\n", rank,
                         weft_get_error_string(lst));
    else if (rank == 0)
      printf("[%d] ok   a refused cubin inside a capture: %s (%.80s)\n", rank,
             weft_get_error_string(lst), weft_comm_get_last_error(comm));
    expect("allreduce captured after it",
           weft_allreduce(comm, a, a, 16, WEFT_DTYPE_FP32, WEFT_RED_OP_SUM, WEFT_ALGO_AUTO, cs),
           WEFT_STATUS_SUCCESS);
    ok = ok && weft_cu.cuStreamEndCapture(cs, &g) == CUDA_SUCCESS &&
         weft_cu.cuGraphInstantiateWithFlags(&ge, g, 0) == CUDA_SUCCESS &&
         weft_cu.cuGraphLaunch(ge, cs) == CUDA_SUCCESS;
    checked++;
    if (!ok) failures++, printf("[%d] FAIL the capture did not end whole, or its graph did not launch\n", rank);
    expect("the graph's replay", weft_stream_synchronize(comm, cs), WEFT_STATUS_SUCCESS);
    if (ge) weft_cu.cuGraphExecDestroy(ge);
    if (g) weft_cu.cuGraphDestroy(g);
    weft_cu.cuStreamDestroy(cs);
  }

  /* The communicator still works: a stream barrier and a put with signal round the ring. */
  uint64_t *sig;
  expect("malloc signal", weft_malloc(comm, 8, (void **)&sig), WEFT_STATUS_SUCCESS);
  expect("put_signal", weft_stream_put_signal(comm, a, a, 1024, sig, 7, (rank + 1) % world, NULL),
         WEFT_STATUS_SUCCESS);
  expect("signal_wait", weft_stream_signal_wait(comm, sig, WEFT_CMP_EQ, 7, NULL), WEFT_STATUS_SUCCESS);
  expect("stream_barrier", weft_stream_barrier(comm, NULL), WEFT_STATUS_SUCCESS);
  expect("synchronize", weft_stream_synchronize(comm, NULL), WEFT_STATUS_SUCCESS);
  weft_cu.cuMemFree(plain);
  expect("free", weft_free(comm, sig), WEFT_STATUS_SUCCESS);
  expect("free", weft_free(comm, a), WEFT_STATUS_SUCCESS);
  expect("destroy", weft_comm_destroy(comm), WEFT_STATUS_SUCCESS);
  printf("[%d] %d checks, %d failed\n", rank, checked, failures);
  return failures ? 1 : 0;
}
