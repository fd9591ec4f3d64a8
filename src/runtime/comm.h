/*
 * comm.h — the communicator: who we are, the bootstrap link to the other ranks, the GPU, the
 * symmetric heap and the runtime's own kernels.
 */
#ifndef WEFT_COMM_H
#define WEFT_COMM_H

#include <cuda.h>
#include <pthread.h>

#include "../internal.h"
#include "bootstrap.h"
#include "heap.h"

struct weft_module;
struct weft_kernel;
struct weft_ops;

struct weft_comm {
  weft_bootstrap_t *bootstrap;
  int rank, world, local_rank, local_world, node_first_rank;
  int device_ordinal;
  CUdevice device;
  char device_name[96]; /* the GPU model (cuDeviceGetName): part of the autotuner's keys */
  CUcontext context;        /* the device's primary context */
  /* The library's own stream for its set-up work (zeroing heap memory, filling a loaded module's
   * state): non-blocking, so that no user work on the legacy stream delays it and no capture
   * in progress on a blocking stream is joined by it; waited for with a deadline. */
  CUstream quiet;
  uint64_t timeout_ns;
  /* Every pair of this node's GPUs has the same CUDA P2P performance rank (NVSwitch, or one
   * link class everywhere); else the collectives' AUTO takes neighbour-only (ring) forms. The
   * same on every rank: computed from the whole node's device list. */
  int uniform_links;
  /* WEFT_SHARE_GPUS=1: ranks beyond the GPU count share GPUs (tests on small machines). */
  int share_gpus;
  /* another local rank uses this rank's GPU (share_gpus): the copy-engine forms of the
   * overlapped ops cannot run (weft_ops_engine_form) */
  int gpu_shared;

  weft_heap_t heap;

  /* Host-mapped memory: the node's abort page (watchdog.c; its first word is the flag kernels
   * poll), this rank's error record kernels fill. */
  struct weft_node_abort *node_abort;
  int node_abort_registered;
  weft_device_error_t *error_host;
  CUdeviceptr abort_dev, error_dev;
  volatile int aborted;
  /* the watchdog thread (watchdog.c) and whether it printed this rank's line */
  pthread_t watch_thread;
  int watch_running, watch_stop, watch_said;

  weft_device_state_t state; /* what every loaded module's weft_state receives */

  struct weft_module *runtime_module; /* kernels/runtime.cu: barrier, signal wait/add */
  struct weft_kernel *k_barrier, *k_signal_wait, *k_signal_add;
  /* the ops' kernels, scratch, streams and plans (src/ops/ops.h): the layer above the runtime
   * makes and frees it (weft_comm_init, weft_comm_destroy in src/ops/ops.c); NULL before */
  struct weft_ops *ops;

  pthread_mutex_t error_lock;
  char last_error[1024];
};

/* The communicator's life in two halves: the runtime's part here (open: everything up to and
 * including the runtime kernels, agreed on every rank; free: its undoing, safe on a partial
 * one), the ops' part around it (src/ops/ops.c: weft_comm_init, weft_comm_destroy). */
weft_status_t weft_comm_open(weft_comm_t **out, const weft_comm_config_t *config);
void weft_comm_free(weft_comm_t *comm);
/* Every rank's status of a collective set-up step, agreed: SUCCESS on every rank or a failure
 * on every rank (the first failed rank's named). */
weft_status_t weft_comm_agree(weft_comm_t *comm, weft_status_t mine);
/* Before a free: this process's GPU work finished (bounded: the communicator's timeout + 5 s,
 * then weft's kernels aborted) and, unless aborted, the ranks met. *freeable 0: a kernel never
 * ended, and nothing may be freed under it. */
weft_status_t weft_comm_finish(weft_comm_t *comm, int *freeable);

/* Sets comm->last_error (thread-safe); used by weft_error. */
void weft_comm_set_last_error(weft_comm_t *comm, const char *text);

/* Bounded wait (the communicator's timeout + 5 s; aborts end it) for everything queued on
 * stream, reading no kernel's report (weft_stream_synchronize reads them); `what` names the wait
 * in a timeout's message. */
weft_status_t weft_stream_wait_idle(weft_comm_t *comm, CUstream stream, const char *what);

/* The watchdog (watchdog.c): the node's abort page, mapped on every local rank (collective), and
 * the thread that prints this rank's failure line once; stop: a last look, then the thread ended
 * and the page unmapped (safe on a partly started communicator). */
weft_status_t weft_watchdog_start(weft_comm_t *comm);
void weft_watchdog_stop(weft_comm_t *comm);
/* The watchdog's look, made now from the calling thread (before a failure is returned, so
 * that its line comes first and only once). */
void weft_watchdog_check(weft_comm_t *comm);
/* Sets the node's abort word (every local rank's waits end) and this communicator's aborted
 * flag; the first rank to raise it leaves `what` for the others' lines. */
void weft_watchdog_raise(weft_comm_t *comm, const char *what);
/* Why this communicator was aborted: the line of the rank whose failure raised the node's word,
 * or this rank's own weft_comm_abort. */
const char *weft_watchdog_reason(const weft_comm_t *comm);
/* A failed wait's record as one line of text (status: the record's). */
void weft_watchdog_describe(const weft_comm_t *comm, const weft_device_error_t *e, uint32_t status,
                            char *buf, size_t size);

/* Makes the communicator's context current on the calling thread. */
weft_status_t weft_comm_make_current(weft_comm_t *comm);

/* Non-NULL communicator that is not aborted, else INVALID_ARGUMENT / ABORTED. */
weft_status_t weft_comm_check(weft_comm_t *comm);

/* Local index of world rank `rank` on this node, or -1 when it is not on this node. */
static inline int weft_comm_local_index(const weft_comm_t *comm, int rank) {
  int l = rank - comm->node_first_rank;
  return (l >= 0 && l < comm->local_world) ? l : -1;
}

#endif /* WEFT_COMM_H */
