/*
 * ops.h — the table of weft's ops: each op owns its kernels (one file under kernels/), loaded at
 * communicator init, and whatever symmetric scratch it needs, allocated then (never inside a
 * call, so that calls stay capturable).
 */
#ifndef WEFT_OPS_H
#define WEFT_OPS_H

#include <cuda.h>

#include "../internal.h"

struct weft_module;
struct weft_kernel;

#define WEFT_OPS_SIDE_STREAMS 2 /* besides the caller's: the copy engines run 3 copies at once */

typedef struct weft_ops {
  /* allgather */
  struct weft_module *ag;
  struct weft_kernel *ag_enter, *ag_exit, *ag_sm, *ag_ll;
  unsigned char *ag_ll_buf; /* [2][local_world][ag_ll_slot] symmetric */
  size_t ag_ll_slot;
  /* fork/join of copy-engine work over side streams */
  CUstream side[WEFT_OPS_SIDE_STREAMS];
  CUevent fork, join[WEFT_OPS_SIDE_STREAMS];
  int sms; /* multiprocessors of the device */
} weft_ops_t;

/* Every op's init/teardown, in the order of the table in ops.c. */
weft_status_t weft_ops_init(weft_comm_t *comm);
void weft_ops_destroy(weft_comm_t *comm);

/* One op's hooks (ops.c's table). */
weft_status_t weft_allgather_init(weft_comm_t *comm);
void weft_allgather_destroy(weft_comm_t *comm);

#endif
