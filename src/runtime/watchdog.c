/*
 * watchdog.c — a failure on one GPU made known on every rank of the node, once per rank.
 *
 * The node's abort word: a page of host memory shared by the node's ranks (local rank 0's memfd,
 * passed to the others by the bootstrap's fd exchange), registered with each rank's GPU, so that
 * every weft wait polls one word for the whole node (weft_state.abort_flag, and the GEMM's
 * parameter). weft_comm_abort sets it, and so does the watchdog of a rank whose kernel timed out
 * or whose context failed: the other ranks' waits then end within a few microseconds instead of
 * running into their own deadlines one after the other.
 *
 * The watchdog: a thread per communicator that reads this rank's error record (host-mapped, filled
 * by the first wait that failed) and the node's word every WATCH_MS, and queries the context every
 * CONTEXT_MS. It prints one line per rank: what failed here (op, rank, peer, signal, values), or
 * which rank's failure stopped this one. It does so whether or not the application calls weft
 * again: a PyTorch program sees only "unspecified launch failure" from its own synchronize. A
 * process that exits first gets the same line from an exit handler.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "comm.h"
#include "loader.h"

#define WATCH_MS 2     /* the error record and the node's word */
#define CONTEXT_MS 100 /* the context (a fault that wrote no record) */
#define NODE_PAGE 4096

/* The node's page. flag is what kernels poll; the first rank to claim the page says why. */
struct weft_node_abort {
  uint32_t flag;  /* nonzero: every wait of the node's ranks ends */
  uint32_t claim; /* 0, then 1 once a rank owns by/what */
  int32_t by;     /* the world rank that raised it */
  uint32_t ready; /* 1 once by/what are written */
  char what[NODE_PAGE - 16];
};

static weft_comm_t *live; /* the process's communicator, for the exit handler */
static pthread_once_t exit_once = PTHREAD_ONCE_INIT;

/* Why the node's word was raised, when another rank raised it: its line; else NULL. */
static const char *raised_by_peer(const weft_comm_t *comm) {
  struct weft_node_abort *n = comm->node_abort;
  if (!n || !__atomic_load_n(&n->ready, __ATOMIC_ACQUIRE) || n->by == comm->rank) return NULL;
  return n->what;
}

const char *weft_watchdog_reason(const weft_comm_t *comm) {
  const char *why = raised_by_peer(comm);
  return why ? why : "weft_comm_abort was called on this rank";
}

/* The one-line text of a record: the same words weft_comm_get_async_error returns. */
void weft_watchdog_describe(const weft_comm_t *comm, const weft_device_error_t *e, uint32_t status,
                            char *buf, size_t size) {
  char op[sizeof e->op + 1];
  memcpy(op, e->op, sizeof e->op);
  op[sizeof e->op] = 0;
  if (status == WEFT_DEVICE_ERROR_ABORTED) {
    snprintf(buf, size, "rank %d: %s stopped because %s", comm->rank, op, weft_watchdog_reason(comm));
    return;
  }
  char peer[32] = "an unknown rank", sig[32] = "?";
  if (e->peer >= 0) snprintf(peer, sizeof peer, "rank %d", e->peer);
  if (e->signal_index != ~0ull) snprintf(sig, sizeof sig, "%llu", (unsigned long long)e->signal_index);
  static const char *cmps[] = {"==", "!=", ">", ">=", "<", "<="};
  snprintf(buf, size,
           "rank %d timed out in %s waiting on %s, signal word %s: expected %s %llu, observed %llu "
           "(WEFT_TIMEOUT_MS=%llu)",
           e->rank, op, peer, sig, e->cmp >= 0 && e->cmp < 6 ? cmps[e->cmp] : ">=",
           (unsigned long long)e->expected, (unsigned long long)e->observed,
           (unsigned long long)(comm->timeout_ns / 1000000));
}

void weft_watchdog_raise(weft_comm_t *comm, const char *what) {
  struct weft_node_abort *n = comm->node_abort;
  comm->aborted = 1;
  if (!n) return;
  uint32_t zero = 0;
  if (__atomic_compare_exchange_n(&n->claim, &zero, 1u, 0, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED)) {
    n->by = comm->rank;
    snprintf(n->what, sizeof n->what, "%s", what);
    __atomic_store_n(&n->ready, 1u, __ATOMIC_RELEASE);
  }
  __atomic_store_n(&n->flag, 1u, __ATOMIC_SEQ_CST);
}

/* One look: prints this rank's line if there is one to print and none was printed. */
static void watch_once(weft_comm_t *comm, int query_context) {
  if (__atomic_load_n(&comm->watch_said, __ATOMIC_ACQUIRE)) return;
  char line[512];
  uint32_t status = __atomic_load_n(&comm->error_host->status, __ATOMIC_ACQUIRE);
  const char *peer = raised_by_peer(comm);
  weft_device_error_t e;
  memcpy(&e, comm->error_host, sizeof e);
  if (status == WEFT_DEVICE_ERROR_TIMEOUT) {
    weft_watchdog_describe(comm, &e, status, line, sizeof line);
    weft_watchdog_raise(comm, line);
  } else if (peer) { /* stopped by another rank's failure: say whose */
    comm->aborted = 1;
    if (status == WEFT_DEVICE_ERROR_ABORTED) weft_watchdog_describe(comm, &e, status, line, sizeof line);
    else snprintf(line, sizeof line, "rank %d: its waits end because %s", comm->rank, peer);
  } else if (status == WEFT_DEVICE_ERROR_ABORTED) {
    return; /* this rank's own weft_comm_abort, which said so itself */
  } else if (query_context && comm->context) {
    CUresult r = weft_cu.cuStreamQuery(comm->quiet);
    if (r == CUDA_SUCCESS || r == CUDA_ERROR_NOT_READY) return;
    const char *name = "?";
    weft_cu.cuGetErrorName(r, &name);
    snprintf(line, sizeof line, "rank %d: the GPU context failed (%s): a kernel faulted", comm->rank,
             name);
    weft_watchdog_raise(comm, line);
  } else {
    return;
  }
  if (__atomic_exchange_n(&comm->watch_said, 1, __ATOMIC_ACQ_REL)) return;
  WEFT_WARN("%s", line);
}

void weft_watchdog_check(weft_comm_t *comm) { watch_once(comm, 0); }

static void *watch_main(void *arg) {
  weft_comm_t *comm = arg;
  /* a query from this thread must not disturb a capture the application runs in global mode */
  CUstreamCaptureMode mode = CU_STREAM_CAPTURE_MODE_RELAXED;
  int ctx = weft_cu.cuCtxSetCurrent(comm->context) == CUDA_SUCCESS &&
            weft_cu.cuThreadExchangeStreamCaptureMode(&mode) == CUDA_SUCCESS;
  unsigned ticks = 0;
  while (!__atomic_load_n(&comm->watch_stop, __ATOMIC_ACQUIRE)) {
    watch_once(comm, ctx && ++ticks % (CONTEXT_MS / WATCH_MS) == 0);
    struct timespec ts = {0, WATCH_MS * 1000000L};
    nanosleep(&ts, NULL);
  }
  return NULL;
}

static void at_exit(void) {
  weft_comm_t *comm = __atomic_load_n(&live, __ATOMIC_ACQUIRE);
  if (comm) watch_once(comm, 0);
}

static void register_exit(void) { atexit(at_exit); }

weft_status_t weft_watchdog_start(weft_comm_t *comm) {
  /* the node's page: local rank 0's memfd, mapped by every local rank */
  int own = memfd_create("weft-node-abort", MFD_CLOEXEC);
  if (own < 0 || ftruncate(own, NODE_PAGE) != 0) {
    if (own >= 0) close(own);
    return WEFT_ERR(comm, WEFT_STATUS_SYSTEM_ERROR, "memfd for the node's abort word failed");
  }
  int ranks[WEFT_MAX_LOCAL_RANKS], fds[WEFT_MAX_LOCAL_RANKS];
  for (int i = 0; i < comm->local_world; i++) ranks[i] = comm->node_first_rank + i, fds[i] = -1;
  weft_status_t st = weft_bootstrap_exchange_fds(comm->bootstrap, ranks, comm->local_world,
                                                 comm->local_rank, own, fds);
  close(own);
  if (st != WEFT_STATUS_SUCCESS) return st;
  void *page = mmap(NULL, NODE_PAGE, PROT_READ | PROT_WRITE, MAP_SHARED, fds[0], 0);
  for (int i = 0; i < comm->local_world; i++) close(fds[i]);
  if (page == MAP_FAILED)
    return WEFT_ERR(comm, WEFT_STATUS_SYSTEM_ERROR, "mapping the node's abort word failed");
  comm->node_abort = page;
  WEFT_CU(comm, cuMemHostRegister(page, NODE_PAGE, CU_MEMHOSTREGISTER_DEVICEMAP |
                                                       CU_MEMHOSTREGISTER_PORTABLE));
  comm->node_abort_registered = 1;
  WEFT_CU(comm, cuMemHostGetDevicePointer(&comm->abort_dev, page, 0));
  if (pthread_create(&comm->watch_thread, NULL, watch_main, comm) != 0)
    return WEFT_ERR(comm, WEFT_STATUS_SYSTEM_ERROR, "starting the watchdog thread failed");
  comm->watch_running = 1;
  pthread_once(&exit_once, register_exit);
  __atomic_store_n(&live, comm, __ATOMIC_RELEASE);
  return WEFT_STATUS_SUCCESS;
}

void weft_watchdog_stop(weft_comm_t *comm) {
  weft_comm_t *me = comm;
  __atomic_compare_exchange_n(&live, &me, NULL, 0, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED);
  if (comm->watch_running) {
    watch_once(comm, 0); /* a last look: what happened just before the end is said too */
    __atomic_store_n(&comm->watch_stop, 1, __ATOMIC_RELEASE);
    pthread_join(comm->watch_thread, NULL);
    comm->watch_running = 0;
  }
  if (comm->node_abort_registered) weft_cu.cuMemHostUnregister(comm->node_abort);
  if (comm->node_abort) munmap(comm->node_abort, NODE_PAGE);
  comm->node_abort = NULL, comm->node_abort_registered = 0;
}
