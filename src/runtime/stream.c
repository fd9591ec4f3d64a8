/*
 * stream.c — host-side stream operations: copy-engine put/get into peer heaps, signal set/add,
 * signal waits and a barrier on the stream (runtime kernels with deadlines, so that nothing
 * waits unbounded and everything stays capturable), and a bounded host synchronize.
 */
#include <string.h>
#include <time.h>

#include "comm.h"
#include "loader.h"

/* Checks shared by the stream calls: a live comm, a symmetric range, a rank on this node.
 * Returns the peer address of sym in *peer. */
static weft_status_t peer_range(weft_comm_t *comm, const void *sym, size_t bytes, int rank,
                                const char *what, CUdeviceptr *peer) {
  WEFT_ARG(comm, sym, "%s is NULL", what);
  WEFT_ARG(comm, rank >= 0 && rank < comm->world, "rank %d out of range [0, %d)", rank,
           comm->world);
  WEFT_ARG(comm, weft_heap_contains(&comm->heap, sym, bytes ? bytes : 1),
           "%s = %p (+%zu bytes) is not inside the symmetric heap", what, sym, bytes);
  int l = weft_comm_local_index(comm, rank);
  if (l < 0) return WEFT_ERR(comm, WEFT_STATUS_NOT_SUPPORTED, "rank %d is on another node", rank);
  *peer = weft_heap_peer(&comm->heap, sym, l);
  return WEFT_STATUS_SUCCESS;
}

static weft_status_t signal_range(weft_comm_t *comm, const uint64_t *sig, int rank,
                                  CUdeviceptr *peer) {
  WEFT_ARG(comm, ((uintptr_t)sig & 7) == 0, "signal %p is not 8-byte aligned", (const void *)sig);
  return peer_range(comm, sig, sizeof *sig, rank, "sig", peer);
}

weft_status_t weft_stream_put(weft_comm_t *comm, void *dst, const void *src, size_t bytes,
                              int rank, weft_stream_t stream) {
  WEFT_CHECK(weft_comm_check(comm));
  CUdeviceptr peer = 0;
  WEFT_CHECK(peer_range(comm, dst, bytes, rank, "dst", &peer));
  WEFT_ARG(comm, src, "src is NULL");
  if (!bytes) return WEFT_STATUS_SUCCESS;
  WEFT_CHECK(weft_comm_make_current(comm));
  WEFT_CU(comm, cuMemcpyAsync(peer, (CUdeviceptr)(uintptr_t)src, bytes, (CUstream)stream));
  return WEFT_STATUS_SUCCESS;
}

weft_status_t weft_stream_get(weft_comm_t *comm, void *dst, const void *src, size_t bytes,
                              int rank, weft_stream_t stream) {
  WEFT_CHECK(weft_comm_check(comm));
  CUdeviceptr peer = 0;
  WEFT_CHECK(peer_range(comm, src, bytes, rank, "src", &peer));
  WEFT_ARG(comm, dst, "dst is NULL");
  if (!bytes) return WEFT_STATUS_SUCCESS;
  WEFT_CHECK(weft_comm_make_current(comm));
  WEFT_CU(comm, cuMemcpyAsync((CUdeviceptr)(uintptr_t)dst, peer, bytes, (CUstream)stream));
  return WEFT_STATUS_SUCCESS;
}

weft_status_t weft_stream_signal_set(weft_comm_t *comm, uint64_t *sig, uint64_t value, int rank,
                                     weft_stream_t stream) {
  WEFT_CHECK(weft_comm_check(comm));
  CUdeviceptr peer = 0;
  WEFT_CHECK(signal_range(comm, sig, rank, &peer));
  WEFT_CHECK(weft_comm_make_current(comm));
  /* Default flags: the write is preceded by a system-scope fence, so earlier work of the stream
   * (copies into the peer included) is visible before the signal is. */
  WEFT_CU(comm, cuStreamWriteValue64((CUstream)stream, peer, value, CU_STREAM_WRITE_VALUE_DEFAULT));
  return WEFT_STATUS_SUCCESS;
}

/* One thread of a runtime kernel, on the stream. */
static weft_status_t launch1(weft_comm_t *comm, weft_kernel_t *k, void **args,
                             weft_stream_t stream) {
  weft_launch_config_t cfg = WEFT_LAUNCH_CONFIG_INIT;
  return weft_kernel_launch(k, &cfg, args, stream);
}

weft_status_t weft_stream_signal_add(weft_comm_t *comm, uint64_t *sig, uint64_t value, int rank,
                                     weft_stream_t stream) {
  WEFT_CHECK(weft_comm_check(comm));
  CUdeviceptr peer = 0;
  WEFT_CHECK(signal_range(comm, sig, rank, &peer));
  /* Stream memops cannot add: a one-thread kernel does it with red.release.sys. */
  void *args[] = {&sig, &value, &rank};
  return launch1(comm, comm->k_signal_add, args, stream);
}

weft_status_t weft_stream_put_signal(weft_comm_t *comm, void *dst, const void *src, size_t bytes,
                                     uint64_t *sig, uint64_t value, int rank,
                                     weft_stream_t stream) {
  WEFT_CHECK(weft_comm_check(comm));
  CUdeviceptr peer = 0;
  /* Check everything before enqueueing anything: no half-done call on bad input. */
  WEFT_CHECK(peer_range(comm, dst, bytes, rank, "dst", &peer));
  WEFT_CHECK(signal_range(comm, sig, rank, &peer));
  WEFT_ARG(comm, src, "src is NULL");
  WEFT_CHECK(weft_stream_put(comm, dst, src, bytes, rank, stream));
  return weft_stream_signal_set(comm, sig, value, rank, stream);
}

weft_status_t weft_stream_signal_wait(weft_comm_t *comm, uint64_t *sig, weft_cmp_t cmp,
                                      uint64_t value, weft_stream_t stream) {
  WEFT_CHECK(weft_comm_check(comm));
  CUdeviceptr peer = 0;
  WEFT_CHECK(signal_range(comm, sig, comm->rank, &peer));
  WEFT_ARG(comm, (int)cmp >= WEFT_CMP_EQ && (int)cmp <= WEFT_CMP_LE, "cmp %d is not a weft_cmp_t",
           (int)cmp);
  /* A kernel, not cuStreamWaitValue64: it has a deadline, it reads with ld.acquire.sys (the
   * driver cannot flush remote writes on our machines), and it polls the abort flag. */
  int c = (int)cmp;
  void *args[] = {&sig, &c, &value};
  return launch1(comm, comm->k_signal_wait, args, stream);
}

weft_status_t weft_stream_barrier(weft_comm_t *comm, weft_stream_t stream) {
  WEFT_CHECK(weft_comm_check(comm));
  weft_launch_config_t cfg = WEFT_LAUNCH_CONFIG_INIT;
  cfg.block[0] = 32;
  return weft_kernel_launch(comm->k_barrier, &cfg, NULL, stream);
}

/* Polls until everything queued on stream has run: CUDA_SUCCESS or the stream's error, or
 * CUDA_ERROR_NOT_READY once the communicator was aborted or the deadline passed (the
 * communicator's timeout + 5 s: a GPU wait's own deadline fires first and says what it waited
 * for). Reads no kernel's report. */
static CUresult stream_poll(weft_comm_t *comm, CUstream stream) {
  uint64_t deadline = weft_now_ns() + comm->timeout_ns + 5000000000ull;
  for (unsigned spins = 0;; spins++) {
    CUresult res = weft_cu.cuStreamQuery(stream);
    if (res != CUDA_ERROR_NOT_READY || comm->aborted || weft_now_ns() > deadline) return res;
    if (spins > 1000) {
      struct timespec ts = {0, 20000};
      nanosleep(&ts, NULL);
    }
  }
}

/* The status of a poll that ended NOT_READY. */
static weft_status_t stream_not_done(weft_comm_t *comm, const char *what) {
  if (comm->aborted)
    return WEFT_ERR(comm, WEFT_STATUS_ABORTED, "rank %d: %s aborted", comm->rank, what);
  return WEFT_ERR(comm, WEFT_STATUS_TIMEOUT,
                  "rank %d: %s: the stream did not finish within %llu ms and no GPU wait "
                  "reported (a long kernel, or a wait without deadline)",
                  comm->rank, what, (unsigned long long)(comm->timeout_ns / 1000000 + 5000));
}

weft_status_t weft_stream_wait_idle(weft_comm_t *comm, CUstream stream, const char *what) {
  CUresult res = stream_poll(comm, stream);
  if (res == CUDA_ERROR_NOT_READY) return stream_not_done(comm, what);
  if (res != CUDA_SUCCESS) return weft_cu_error(comm, res, "cuStreamQuery", __FILE__, __LINE__);
  return WEFT_STATUS_SUCCESS;
}

weft_status_t weft_stream_synchronize(weft_comm_t *comm, weft_stream_t stream) {
  WEFT_ARG(NULL, comm, "comm is NULL");
  WEFT_CHECK(weft_comm_make_current(comm));
  CUresult res = stream_poll(comm, (CUstream)stream);
  weft_status_t st = weft_comm_get_async_error(comm); /* a kernel's report names its wait */
  if (res == CUDA_ERROR_NOT_READY)
    return st != WEFT_STATUS_SUCCESS ? st : stream_not_done(comm, "stream synchronize");
  if (st != WEFT_STATUS_SUCCESS || res == CUDA_SUCCESS) return st;
  return weft_cu_error(comm, res, "cuStreamQuery", __FILE__, __LINE__);
}
