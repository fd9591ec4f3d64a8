/*
 * comm.c — the runtime's half of the communicator's life: open (environment, rendezvous, GPU,
 * host-mapped abort flag and error record, symmetric heap, runtime kernels), queries, abort,
 * finish and free. weft_comm_init and weft_comm_destroy (src/ops/ops.c) wrap it with the ops'.
 */
#include "comm.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "loader.h"
#include "module.h"
#include "multicast.h"

/* One communicator per process: device = local rank, one heap. */
static pthread_mutex_t init_lock = PTHREAD_MUTEX_INITIALIZER;
static int initialised;

#define DEFAULT_HEAP_SIZE (1ull << 30)
#define DEFAULT_TIMEOUT_MS 60000ull

void weft_comm_set_last_error(weft_comm_t *comm, const char *text) {
  pthread_mutex_lock(&comm->error_lock);
  snprintf(comm->last_error, sizeof comm->last_error, "%s", text);
  pthread_mutex_unlock(&comm->error_lock);
}

const char *weft_comm_get_last_error(const weft_comm_t *comm) {
  return comm ? comm->last_error : weft_get_last_error();
}

weft_status_t weft_comm_check(weft_comm_t *comm) {
  if (!comm) return WEFT_ERR(NULL, WEFT_STATUS_INVALID_ARGUMENT, "comm is NULL");
  if (comm->aborted)
    return WEFT_ERR(comm, WEFT_STATUS_ABORTED, "the communicator was aborted (%s); only "
                    "weft_comm_destroy is valid now", weft_watchdog_reason(comm));
  return WEFT_STATUS_SUCCESS;
}

weft_status_t weft_comm_make_current(weft_comm_t *comm) {
  WEFT_CU(comm, cuCtxSetCurrent(comm->context));
  return WEFT_STATUS_SUCCESS;
}

/* What each rank tells the others at init, to agree on the node layout and on success. */
typedef struct init_info {
  int32_t status;     /* this rank's init status so far */
  int32_t local_rank, local_world, device_ordinal;
  char host[64];
  char bus_id[32];
} init_info_t;

/* All-gathers each rank's status; every rank fails if one did, naming it. */
static weft_status_t agree_init(weft_comm_t *comm, init_info_t *mine, init_info_t **all_out) {
  init_info_t *all = calloc((size_t)comm->world, sizeof *all);
  if (!all) return WEFT_ERR(comm, WEFT_STATUS_OUT_OF_MEMORY, "host allocation failed");
  all[comm->rank] = *mine;
  weft_status_t st = weft_bootstrap_allgather(comm->bootstrap, all, sizeof *all);
  for (int r = 0; st == WEFT_STATUS_SUCCESS && r < comm->world; r++) {
    if (all[r].status != WEFT_STATUS_SUCCESS)
      st = r == comm->rank ? (weft_status_t)all[r].status
                           : WEFT_ERR(comm, WEFT_STATUS_REMOTE_ERROR,
                                      "rank %d (host %s) failed to initialise: %s", r, all[r].host,
                                      weft_get_error_string((weft_status_t)all[r].status));
  }
  if (st != WEFT_STATUS_SUCCESS || !all_out) free(all);
  else *all_out = all;
  return st;
}

/* Ranks of a node are consecutive and local ranks 0..local_world-1 in order; weft maps peers by
 * that rule, so check it instead of assuming it. */
static weft_status_t check_node_layout(weft_comm_t *comm, const init_info_t *all) {
  comm->node_first_rank = comm->rank - comm->local_rank;
  for (int l = 0; l < comm->local_world; l++) {
    int r = comm->node_first_rank + l;
    if (r < 0 || r >= comm->world || all[r].local_rank != l ||
        all[r].local_world != comm->local_world || strcmp(all[r].host, all[comm->rank].host))
      return WEFT_ERR(comm, WEFT_STATUS_INVALID_USAGE,
                      "ranks of a node must be consecutive with local ranks in order: rank %d has "
                      "local rank %d of %d on host %s; expected rank %d there",
                      comm->rank, comm->local_rank, comm->local_world, all[comm->rank].host, r);
    if (r != comm->rank && all[r].device_ordinal == comm->device_ordinal) {
      if (!comm->share_gpus)
        return WEFT_ERR(comm, WEFT_STATUS_INVALID_USAGE,
                        "ranks %d and %d both use GPU %d of host %s: one GPU per process", r,
                        comm->rank, comm->device_ordinal, all[r].host);
      comm->gpu_shared = 1;
    }
  }
  if (comm->world != comm->local_world)
    return WEFT_ERR(comm, WEFT_STATUS_NOT_SUPPORTED,
                    "%d ranks over several nodes: the inter-node transport is not built yet "
                    "(this node has %d)", comm->world, comm->local_world);
  return WEFT_STATUS_SUCCESS;
}

/* device < 0: the local rank's GPU (with WEFT_SHARE_GPUS, counted round the GPUs present). */
static weft_status_t open_device(weft_comm_t *comm, int device) {
  WEFT_CHECK(weft_cu_load(comm, NULL));
  int count = 0;
  WEFT_CU(comm, cuDeviceGetCount(&count));
  if (device < 0) device = comm->share_gpus && count > 0 ? comm->local_rank % count : comm->local_rank;
  if (device >= count)
    return WEFT_ERR(comm, WEFT_STATUS_NO_DEVICE,
                    "rank %d wants GPU %d but this process sees %d (CUDA_VISIBLE_DEVICES?)",
                    comm->rank, device, count);
  comm->device_ordinal = device;
  WEFT_CU(comm, cuDeviceGet(&comm->device, device));
  WEFT_CU(comm, cuDeviceGetName(comm->device_name, sizeof comm->device_name, comm->device));
  WEFT_CU(comm, cuDevicePrimaryCtxRetain(&comm->context, comm->device));
  WEFT_CU(comm, cuCtxSetCurrent(comm->context));
  WEFT_CU(comm, cuStreamCreate(&comm->quiet, CU_STREAM_NON_BLOCKING));
  int vmm = 0, fd = 0;
  WEFT_CU(comm, cuDeviceGetAttribute(&vmm, CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED,
                                     comm->device));
  WEFT_CU(comm, cuDeviceGetAttribute(
                    &fd, CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED,
                    comm->device));
  if (!vmm || !fd)
    return WEFT_ERR(comm, WEFT_STATUS_NOT_SUPPORTED,
                    "GPU %d lacks CUDA virtual memory management with POSIX fd handles, which the "
                    "symmetric heap needs", device);
  /* The error record: host-mapped, so that the host reads what a kernel reported after it
   * trapped (the context is then unusable, host memory is not). The abort word is the node's
   * (watchdog.c). */
  void *error_host = NULL;
  WEFT_CU(comm, cuMemHostAlloc(&error_host, sizeof(weft_device_error_t),
                               CU_MEMHOSTALLOC_DEVICEMAP | CU_MEMHOSTALLOC_PORTABLE));
  comm->error_host = error_host;
  memset(error_host, 0, sizeof(weft_device_error_t));
  WEFT_CU(comm, cuMemHostGetDevicePointer(&comm->error_dev, error_host, 0));
  return WEFT_STATUS_SUCCESS;
}

static weft_status_t check_peer_access(weft_comm_t *comm, const init_info_t *all) {
  CUdevice dev[WEFT_MAX_LOCAL_RANKS]; /* the node's GPUs, by local rank */
  for (int l = 0; l < comm->local_world; l++)
    WEFT_CU(comm, cuDeviceGet(&dev[l], all[comm->node_first_rank + l].device_ordinal));
  for (int l = 0; l < comm->local_world; l++) {
    if (dev[l] == comm->device) continue; /* itself, or a rank sharing its GPU */
    int can = 0, atomics = 0;
    WEFT_CU(comm, cuDeviceCanAccessPeer(&can, comm->device, dev[l]));
    if (!can)
      return WEFT_ERR(comm, WEFT_STATUS_NOT_SUPPORTED,
                      "GPU %d cannot access GPU %d (rank %d) peer to peer", comm->device_ordinal,
                      all[comm->node_first_rank + l].device_ordinal, comm->node_first_rank + l);
    /* Signals are .sys atomics on peer memory: without native P2P atomics (PCIe boxes) they
     * would silently lose updates, so refuse instead. */
    WEFT_CU(comm, cuDeviceGetP2PAttribute(&atomics, CU_DEVICE_P2P_ATTRIBUTE_NATIVE_ATOMIC_SUPPORTED,
                                          comm->device, dev[l]));
    if (!atomics)
      return WEFT_ERR(comm, WEFT_STATUS_NOT_SUPPORTED,
                      "GPUs %d and %d lack native peer-to-peer atomics (NVLink needed)",
                      comm->device_ordinal, all[comm->node_first_rank + l].device_ordinal);
  }
  /* The link classes of every pair, the same list on every rank (WEFT_TOPOLOGY=ring|mesh
   * overrides, e.g. to measure the ring on a full mesh). */
  int first = -1;
  comm->uniform_links = 1;
  for (int a = 0; a < comm->local_world; a++)
    for (int b = a + 1; b < comm->local_world; b++) {
      int rank = 0;
      if (dev[a] == dev[b]) continue; /* ranks sharing a GPU (WEFT_SHARE_GPUS) */
      WEFT_CU(comm, cuDeviceGetP2PAttribute(&rank, CU_DEVICE_P2P_ATTRIBUTE_PERFORMANCE_RANK, dev[a], dev[b]));
      if (first < 0) first = rank;
      if (rank != first) comm->uniform_links = 0;
    }
  const char *topo = getenv("WEFT_TOPOLOGY");
  if (topo && !strcmp(topo, "ring")) comm->uniform_links = 0;
  else if (topo && !strcmp(topo, "mesh")) comm->uniform_links = 1;
  else if (topo && *topo)
    return WEFT_ERR(comm, WEFT_STATUS_INVALID_ARGUMENT, "WEFT_TOPOLOGY=%s: ring or mesh", topo);
  return WEFT_STATUS_SUCCESS;
}

static void fill_state(weft_comm_t *comm) {
  weft_device_state_t *s = &comm->state;
  memset(s, 0, sizeof *s);
  s->rank = comm->rank;
  s->world = comm->world;
  s->local_rank = comm->local_rank;
  s->local_world = comm->local_world;
  s->node_first_rank = comm->node_first_rank;
  /* never on by default (docs/architecture.md, "NVLink multicast is off") */
  s->multicast_enabled = 0;
  s->inv_local_world = 1.0f / (float)comm->local_world;
  s->heap_base = comm->heap.base;
  s->heap_stride = comm->heap.stride;
  s->heap_size = comm->heap.stride;
  s->my_heap = comm->heap.mine;
  s->timeout_ns = comm->timeout_ns;
  s->abort_flag = comm->abort_dev;
  s->error = comm->error_dev;
}

static weft_status_t load_runtime_kernels(weft_comm_t *comm) {
  WEFT_CHECK(weft_module_load_embedded(comm, "kernels/runtime.cu", NULL, 0, &comm->runtime_module));
  WEFT_CHECK(weft_module_get_kernel(comm->runtime_module, "weft_rt_barrier", &comm->k_barrier));
  WEFT_CHECK(weft_module_get_kernel(comm->runtime_module, "weft_rt_signal_wait", &comm->k_signal_wait));
  WEFT_CHECK(weft_module_get_kernel(comm->runtime_module, "weft_rt_signal_add", &comm->k_signal_add));
  return WEFT_STATUS_SUCCESS;
}

weft_status_t weft_comm_agree(weft_comm_t *comm, weft_status_t status) {
  init_info_t mine;
  memset(&mine, 0, sizeof mine);
  mine.status = status;
  mine.local_rank = comm->local_rank;
  mine.local_world = comm->local_world;
  gethostname(mine.host, sizeof mine.host - 1);
  return agree_init(comm, &mine, NULL);
}

void weft_comm_free(weft_comm_t *comm) {
  if (comm->runtime_module) weft_module_unload(comm->runtime_module);
  if (comm->heap.base) weft_heap_destroy(comm);
  weft_watchdog_stop(comm);
  if (comm->error_host) weft_cu.cuMemFreeHost(comm->error_host);
  if (comm->quiet) weft_cu.cuStreamDestroy(comm->quiet);
  if (comm->context) weft_cu.cuDevicePrimaryCtxRelease(comm->device);
  if (comm->bootstrap) weft_bootstrap_destroy(comm->bootstrap);
  pthread_mutex_destroy(&comm->error_lock);
  free(comm);
  pthread_mutex_lock(&init_lock);
  initialised = 0;
  pthread_mutex_unlock(&init_lock);
}

weft_status_t weft_comm_open(weft_comm_t **out, const weft_comm_config_t *config) {
  WEFT_ARG(NULL, out, "comm is NULL");
  weft_comm_config_t cfg = WEFT_COMM_CONFIG_INIT;
  if (config) cfg = *config;
  WEFT_ARG(NULL, cfg.timeout_ms >= 0, "timeout_ms %d is negative", cfg.timeout_ms);
  WEFT_ARG(NULL, cfg.device >= -1, "device %d is invalid", cfg.device);

  pthread_mutex_lock(&init_lock);
  if (initialised) {
    pthread_mutex_unlock(&init_lock);
    return WEFT_ERR(NULL, WEFT_STATUS_INVALID_USAGE,
                    "a communicator already exists in this process (one GPU per process)");
  }
  initialised = 1;
  pthread_mutex_unlock(&init_lock);

  weft_status_t st;
  weft_comm_t *comm = calloc(1, sizeof *comm);
  if (!comm) {
    st = WEFT_ERR(NULL, WEFT_STATUS_OUT_OF_MEMORY, "host allocation failed");
    goto fail_unlock;
  }
  pthread_mutex_init(&comm->error_lock, NULL);

  weft_bootstrap_info_t info;
  WEFT_CHECK_GOTO(weft_bootstrap_read_env(&info), st, fail);
  comm->rank = info.rank;
  comm->world = info.world;
  comm->local_rank = info.local_rank;
  comm->local_world = info.local_world;
  if (comm->local_world > WEFT_MAX_LOCAL_RANKS) {
    st = WEFT_ERR(comm, WEFT_STATUS_NOT_SUPPORTED, "%d ranks on one node; weft maps at most %d",
                  comm->local_world, WEFT_MAX_LOCAL_RANKS);
    goto fail;
  }
  uint64_t heap_size = cfg.heap_size, timeout_ms = (uint64_t)cfg.timeout_ms;
  if (!heap_size) weft_env_u64("WEFT_HEAP_SIZE", DEFAULT_HEAP_SIZE, true, &heap_size);
  if (!timeout_ms) weft_env_u64("WEFT_TIMEOUT_MS", DEFAULT_TIMEOUT_MS, false, &timeout_ms);
  if (!timeout_ms) timeout_ms = DEFAULT_TIMEOUT_MS;
  comm->timeout_ns = timeout_ms * 1000000ull;
  comm->share_gpus = weft_env_is("WEFT_SHARE_GPUS", "1");
  if (comm->share_gpus)
    WEFT_WARN("WEFT_SHARE_GPUS=1: ranks may share a GPU (for tests on machines with fewer GPUs "
              "than ranks); their kernels take turns, so timings mean nothing");
  uint64_t boot_ms;
  weft_env_u64("WEFT_BOOTSTRAP_TIMEOUT_MS", timeout_ms, false, &boot_ms);

  if (weft_log_level() >= WEFT_LOG_LEVEL_INFO) { /* the environment in force, for bug reports */
    extern char **environ;
    for (char **e = environ; *e; e++)
      if (!strncmp(*e, "WEFT_", 5) || !strncmp(*e, "NCCL_NVLS", 9) ||
          !strncmp(*e, "NVSHMEM_DISABLE_NVLS", 20) || !strncmp(*e, "TORCH_SYMM_MEM", 14) ||
          !strncmp(*e, "CUDA_VISIBLE_DEVICES", 20))
        WEFT_INFO("env %s", *e);
  }
  char addr[256];
  WEFT_CHECK_GOTO(weft_bootstrap_read_addr(&info, addr, sizeof addr), st, fail);
  WEFT_CHECK_GOTO(weft_bootstrap_create(addr, comm->rank, comm->world, boot_ms * 1000000ull,
                                        &comm->bootstrap), st, fail);
  WEFT_INFO("weft %d.%d.%d rank %d/%d local %d/%d via %s, bootstrap %s, heap %llu B, timeout %llu ms",
            WEFT_VERSION_MAJOR, WEFT_VERSION_MINOR, WEFT_VERSION_PATCH, comm->rank, comm->world,
            comm->local_rank, comm->local_world, info.launcher, addr[0] ? addr : "-",
            (unsigned long long)heap_size, (unsigned long long)timeout_ms);

  /* Open the GPU, then agree: a rank without a GPU fails every rank now, not a hang later. */
  init_info_t mine, *all = NULL;
  memset(&mine, 0, sizeof mine);
  mine.local_rank = comm->local_rank;
  mine.local_world = comm->local_world;
  gethostname(mine.host, sizeof mine.host - 1);
  mine.status = open_device(comm, cfg.device);
  mine.device_ordinal = mine.status == WEFT_STATUS_SUCCESS ? comm->device_ordinal : -1;
  if (mine.status == WEFT_STATUS_SUCCESS)
    weft_cu.cuDeviceGetPCIBusId(mine.bus_id, sizeof mine.bus_id, comm->device);
  WEFT_CHECK_GOTO(agree_init(comm, &mine, &all), st, fail);
  st = check_node_layout(comm, all);
  if (st == WEFT_STATUS_SUCCESS) st = check_peer_access(comm, all);
  WEFT_INFO("rank %d: GPU %d (%s) on %s", comm->rank, comm->device_ordinal, mine.bus_id, mine.host);
  free(all);
  mine.status = st;
  WEFT_CHECK_GOTO(agree_init(comm, &mine, NULL), st, fail);

  WEFT_CHECK_GOTO(weft_heap_create(comm, heap_size), st, fail);
  WEFT_CHECK_GOTO(weft_watchdog_start(comm), st, fail);
  fill_state(comm);
  /* warns; multicast stays off (docs/architecture.md, "NVLink multicast is off") */
  weft_multicast_check_env(comm);
  mine.status = load_runtime_kernels(comm);
  WEFT_CHECK_GOTO(agree_init(comm, &mine, NULL), st, fail);
  *out = comm;
  return WEFT_STATUS_SUCCESS;

fail:
  weft_comm_free(comm);
  return st;
fail_unlock:
  pthread_mutex_lock(&init_lock);
  initialised = 0;
  pthread_mutex_unlock(&init_lock);
  return st;
}

/* cuCtxSynchronize has no deadline: it runs in a thread of its own, which the destroying thread
 * waits for with one. The record outlives a wait that gives up (the thread still holds it). */
typedef struct ctx_sync {
  CUcontext context;
  int done;
} ctx_sync_t;

static void *ctx_sync_main(void *arg) {
  ctx_sync_t *t = arg;
  if (weft_cu.cuCtxSetCurrent(t->context) == CUDA_SUCCESS) weft_cu.cuCtxSynchronize();
  __atomic_store_n(&t->done, 1, __ATOMIC_RELEASE);
  return NULL;
}

/* Waits until `t` is done or `ms` more milliseconds passed; 1 when done. */
static int ctx_sync_wait(ctx_sync_t *t, uint64_t ms) {
  uint64_t deadline = weft_now_ns() + ms * 1000000ull;
  while (!__atomic_load_n(&t->done, __ATOMIC_ACQUIRE)) {
    if (weft_now_ns() > deadline) return 0;
    struct timespec ts = {0, 1000000};
    nanosleep(&ts, NULL);
  }
  return 1;
}

/* Finishes the GPU work of this process, within the communicator's timeout + 5 s; then stops
 * weft's own kernels (the abort flag) and waits 5 s more (an aborted communicator: only those
 * 5 s). WEFT_STATUS_SUCCESS, or TIMEOUT: with *freeable 1 when the work ended after the abort, 0
 * when it never did (a kernel that does not end: nothing may be unmapped under it, so nothing
 * may be freed). */
static weft_status_t ctx_finish(weft_comm_t *comm, int *freeable) {
  *freeable = 1;
  ctx_sync_t *t = calloc(1, sizeof *t);
  pthread_t th;
  if (!t) return WEFT_ERR(comm, WEFT_STATUS_OUT_OF_MEMORY, "weft_comm_destroy: host allocation");
  t->context = comm->context;
  if (pthread_create(&th, NULL, ctx_sync_main, t) != 0) { /* then without a deadline */
    ctx_sync_main(t);
    free(t);
    return WEFT_STATUS_SUCCESS;
  }
  pthread_detach(th);
  int aborted = comm->aborted, in_time = 0;
  uint64_t ms = comm->timeout_ns / 1000000 + 5000;
  if (!aborted) in_time = ctx_sync_wait(t, ms);
  if (!in_time) {
    if (!aborted) weft_comm_abort(comm);
    *freeable = ctx_sync_wait(t, 5000);
    in_time = aborted && *freeable; /* aborted before: only its kernels' ending was awaited */
  }
  if (*freeable) free(t);
  if (in_time) return WEFT_STATUS_SUCCESS;
  return WEFT_ERR(comm, WEFT_STATUS_TIMEOUT,
                  "rank %d: weft_comm_destroy: this process's GPU work did not finish within %llu "
                  "ms (a kernel that never ends?)%s", comm->rank,
                  aborted ? 5000ull : (unsigned long long)ms,
                  *freeable ? "; it did after weft's kernels were aborted"
                            : ", not even after weft's kernels were aborted: the communicator is "
                              "left allocated (nothing may be unmapped under a running kernel)");
}

weft_status_t weft_comm_finish(weft_comm_t *comm, int *freeable) {
  /* Nobody may unmap a heap a peer may still write, nor a module a kernel still runs: finish
   * local work, then meet (unless aborted: then nobody waits for the others). */
  int aborted = comm->aborted;
  weft_status_t st = ctx_finish(comm, freeable);
  if (*freeable && !aborted && st == WEFT_STATUS_SUCCESS)
    st = weft_bootstrap_barrier(comm->bootstrap);
  return st;
}

weft_status_t weft_comm_abort(weft_comm_t *comm) {
  WEFT_ARG(NULL, comm, "comm is NULL");
  char what[64];
  snprintf(what, sizeof what, "rank %d called weft_comm_abort", comm->rank);
  weft_watchdog_raise(comm, what);
  WEFT_WARN("rank %d: weft_comm_abort called", comm->rank);
  return WEFT_STATUS_SUCCESS;
}

weft_status_t weft_comm_get_async_error(weft_comm_t *comm) {
  WEFT_ARG(NULL, comm, "comm is NULL");
  weft_device_error_t e;
  uint32_t status = __atomic_load_n(&comm->error_host->status, __ATOMIC_ACQUIRE);
  memcpy(&e, comm->error_host, sizeof e);
  /* BUSY: a kernel is still writing the record; its stream has not failed yet either. */
  if (status == 0 || status == WEFT_DEVICE_ERROR_BUSY) {
    if (!comm->aborted) return WEFT_STATUS_SUCCESS;
    char line[600];
    snprintf(line, sizeof line, "rank %d: aborted because %s", comm->rank, weft_watchdog_reason(comm));
    weft_watchdog_check(comm);
    return weft_error_quiet(comm, WEFT_STATUS_ABORTED, line);
  }
  e.op[sizeof e.op - 1] = 0;
  if (status == WEFT_DEVICE_ERROR_MISMATCH || status == WEFT_DEVICE_ERROR_INVALID) {
    /* No kernel trapped: the context is sound, so the report is given once and the record freed
     * for the next one. */
    __atomic_compare_exchange_n(&comm->error_host->status, &status, 0u, 0, __ATOMIC_ACQ_REL,
                                __ATOMIC_RELAXED);
    if (status == WEFT_DEVICE_ERROR_INVALID)
      return WEFT_ERR(comm, WEFT_STATUS_INVALID_ARGUMENT,
                      "rank %d, %s %lld at entry %llu is outside [0, %llu) (that entry was left "
                      "out, and the call's GEMMs compute nothing)",
                      e.rank, e.op, (long long)e.observed, (unsigned long long)e.signal_index,
                      (unsigned long long)e.expected);
    return WEFT_ERR(comm, WEFT_STATUS_MISMATCH,
                    "rank %d, %s: %llu elements here, rank %d has %llu (that pair's data was cut "
                    "to the smaller count)",
                    e.rank, e.op, (unsigned long long)e.expected, e.peer,
                    (unsigned long long)e.observed);
  }
  char line[512];
  weft_watchdog_describe(comm, &e, status, line, sizeof line);
  weft_watchdog_check(comm); /* the line, said once per rank (it may not have looked yet) */
  return weft_error_quiet(comm, status == WEFT_DEVICE_ERROR_ABORTED ? WEFT_STATUS_ABORTED
                                                                    : WEFT_STATUS_TIMEOUT, line);
}

#define COMM_GETTER(fn, field)                                                            \
  weft_status_t fn(const weft_comm_t *comm, int *out) {                                   \
    WEFT_ARG((weft_comm_t *)comm, comm && out, #fn ": comm or result pointer is NULL");                  \
    *out = comm->field;                                                                   \
    return WEFT_STATUS_SUCCESS;                                                           \
  }
COMM_GETTER(weft_comm_rank, rank)
COMM_GETTER(weft_comm_size, world)
COMM_GETTER(weft_comm_local_rank, local_rank)
COMM_GETTER(weft_comm_local_size, local_world)
COMM_GETTER(weft_comm_device, device_ordinal)

weft_status_t weft_comm_barrier(weft_comm_t *comm) {
  WEFT_CHECK(weft_comm_check(comm));
  return weft_bootstrap_barrier(comm->bootstrap);
}
