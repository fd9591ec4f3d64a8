/*
 * allgather.c — weft_allgather: argument checks, the choice of algorithm, and the launches of
 * kernels/allgather.cu (see there for the protocols). Shapes: sendbuf [count], recvbuf
 * [world][count] symmetric, elements of weft_dtype_size(dtype) bytes.
 */
#include "ops.h"

#include <stdlib.h>
#include <string.h>

#include "../runtime/module.h"
#include "../runtime/comm.h"
#include "../runtime/loader.h"

/* From this gathered size on the copy engines beat SM stores: two ranks (H200 x2) 360 against
 * 340 GB/s bus bandwidth at 128 MiB a rank, 291 against 311 at 32 MiB; four ranks (H200 x4,
 * 2026-11-26, the peers' copies one after another) 332 against 317 at 128 MiB gathered, 294
 * against 294 at 64 MiB. */
#define AG_CE_MIN_TOTAL_BYTES (128ull << 20)
#define AG_THREADS_SM 512
#define AG_MAX_SLICES 32 /* LL: blocks a peer */
#define AG_THREADS_LL 512
#define AG_LL_AUTO_PUSH (1u << 20) /* AUTO's LL limit: bytes a rank pushes, all peers' copies */
#define AG_LL_LINES 1 /* LL lines a thread pushes (the grid: at most AG_MAX_SLICES per peer) */

weft_status_t weft_allgather_init(weft_comm_t *comm) {
  weft_ops_t *o = comm->ops;
  WEFT_CHECK(weft_module_load_embedded(comm, "kernels/allgather.cu", NULL, 0, &o->ag));
  WEFT_CHECK(weft_module_get_kernel(o->ag, "weft_ag_enter", &o->ag_enter));
  WEFT_CHECK(weft_module_get_kernel(o->ag, "weft_ag_exit", &o->ag_exit));
  WEFT_CHECK(weft_module_get_kernel(o->ag, "weft_ag_sm", &o->ag_sm));
  WEFT_CHECK(weft_module_get_kernel(o->ag, "weft_ag_ll", &o->ag_ll));
  WEFT_CHECK(weft_module_get_kernel(o->ag, "weft_ag_ring", &o->ag_ring));
  const char *ce = getenv("WEFT_AG_CE");
  if (ce && strcmp(ce, "pull") && strcmp(ce, "push"))
    return WEFT_ERR(comm, WEFT_STATUS_INVALID_ARGUMENT, "WEFT_AG_CE=%s: pull or push", ce);
  o->ag_ce_push = ce && !strcmp(ce, "push");
  /* LL lines carry 8 payload bytes in 16; two areas by epoch parity. */
  o->ag_ll_slot = WEFT_LL_BYTES(WEFT_ALLGATHER_LL_MAX_BYTES(comm->local_world));
  return weft_malloc(comm, 2 * (size_t)comm->local_world * o->ag_ll_slot, (void **)&o->ag_ll_buf);
}

void weft_allgather_destroy(weft_comm_t *comm) {
  /* The LL area goes with the heap. */
  if (comm->ops->ag) weft_module_unload(comm->ops->ag);
}

static unsigned pow2_floor(unsigned long long v) {
  unsigned p = 1;
  while ((unsigned long long)p * 2 <= v) p *= 2;
  return p;
}

/* Copy-engine AllGather. Push: my chunk into every peer's recv. Pull (when my chunk is in place,
 * so that every peer's is too): every peer's chunk from its recv into mine; then the reading
 * GPU's engines do the work. WEFT_AG_CE=pull|push (read at init) overrides the choice (for
 * measurements).
 * The peers' copies run one after another on the caller's stream, rank + 1 first, then rank + 2,
 * ...: every GPU then sends to one peer and receives from one at a time, which the engines do at
 * full speed; started together on a stream a peer (as here until 2026-11-26) the copies of 4
 * GPUs moved ~210 GB/s a direction against ~370 one after another (h200-x4,
 * dev/overlap/ce_peers_dev.c: bar+p3 against bar+p1). The local copy (out of place) runs beside
 * them on a side stream. */
static weft_status_t ag_copy_engine(weft_comm_t *comm, const char *send, char *recv, size_t bytes,
                                    CUstream stream) {
  weft_ops_t *o = comm->ops;
  int me = comm->local_rank, world = comm->local_world;
  weft_launch_config_t one = WEFT_LAUNCH_CONFIG_INIT;
  one.block[0] = 32;
  WEFT_CHECK(weft_kernel_launch(o->ag_enter, &one, NULL, stream));
  char *mine = recv + (size_t)me * bytes;
  int in_place = send == mine;
  int pull = in_place && !o->ag_ce_push;
  if (!in_place) {
    WEFT_CHECK(weft_ops_fork(comm, stream));
    WEFT_CU(comm, cuMemcpyAsync((CUdeviceptr)(uintptr_t)mine, (CUdeviceptr)(uintptr_t)send, bytes, o->side));
  }
  for (int k = 1; k < world; k++) {
    int l = (me + k) % world;
    if (pull) {
      const char *chunk = recv + (size_t)l * bytes;
      WEFT_CU(comm, cuMemcpyAsync((CUdeviceptr)(uintptr_t)chunk, weft_heap_peer(&comm->heap, chunk, l), bytes,
                                  stream));
    } else {
      WEFT_CU(comm, cuMemcpyAsync(weft_heap_peer(&comm->heap, mine, l), (CUdeviceptr)(uintptr_t)send, bytes,
                                  stream));
    }
  }
  if (!in_place) WEFT_CHECK(weft_ops_join(comm, stream));
  return weft_kernel_launch(o->ag_exit, &one, NULL, stream);
}

weft_status_t weft_allgather(weft_comm_t *comm, const void *sendbuf, void *recvbuf, size_t count,
                             weft_dtype_t dtype, weft_algo_t algo, weft_stream_t stream) {
  WEFT_CHECK(weft_comm_check(comm));
  size_t elem = weft_dtype_size(dtype);
  WEFT_ARG(comm, elem, "dtype %d is not a weft_dtype_t", (int)dtype);
  WEFT_ARG(comm, algo == WEFT_ALGO_AUTO || algo == WEFT_ALGO_COPY_ENGINE || algo == WEFT_ALGO_SM ||
                     algo == WEFT_ALGO_LL || algo == WEFT_ALGO_RING,
           "algo %d is not one of allgather's (auto, copy engine, SM, LL, ring)", (int)algo);
  if (count == 0) return WEFT_STATUS_SUCCESS;
  WEFT_ARG(comm, sendbuf && recvbuf, "sendbuf or recvbuf is NULL");
  WEFT_ARG(comm, count <= SIZE_MAX / elem / (size_t)comm->world, "count %zu overflows", count);
  size_t bytes = count * elem;
  /* LL while each rank pushes at most AG_LL_AUTO_PUSH bytes: on two H100s (2026-11-25) LL took
   * 9.0 / 12.6 / 20.8 us at 512 KiB / 1 MiB / 2 MiB a rank, the SM form 18.1 / 18.3 / 18.7 (its
   * handshake: 0.66x NCCL's time at 512 KiB a rank, where LL's limit was 256 KiB). Above LL,
   * SM stores, then the copy engines from AG_CE_MIN_TOTAL_BYTES gathered. Where the pairs'
   * links differ (comm.h, uniform_links) the ring above LL's limit: each GPU then uses only the
   * links to its two neighbours. */
  size_t ll_max = WEFT_ALLGATHER_LL_MAX_BYTES(comm->local_world);
  if (algo == WEFT_ALGO_AUTO)
    algo = weft_ops_ll_auto(comm->local_world, bytes, ll_max, AG_LL_AUTO_PUSH) ? WEFT_ALGO_LL
           : !comm->uniform_links                                      ? WEFT_ALGO_RING
           : bytes * (size_t)comm->local_world >= AG_CE_MIN_TOTAL_BYTES ? WEFT_ALGO_COPY_ENGINE
                                                                       : WEFT_ALGO_SM;
  WEFT_ARG(comm, algo != WEFT_ALGO_LL || bytes <= ll_max,
           "WEFT_ALGO_LL takes at most %zu bytes per rank at %d ranks, not %zu", ll_max,
           comm->local_world, bytes);
  /* LL's lines travel through an internal symmetric area and land by this rank's own stores:
   * any device memory there; the other forms store into (or copy from) the peers' recvbufs. */
  WEFT_ARG(comm, algo == WEFT_ALGO_LL ||
                     weft_heap_contains(&comm->heap, recvbuf, bytes * (size_t)comm->world),
           "recvbuf %p (+%zu bytes) must lie in the symmetric heap (weft_malloc) above LL's "
           "sizes: the peers store into it", recvbuf, bytes * (size_t)comm->world);
  WEFT_CHECK(weft_comm_make_current(comm));
  const char *send = sendbuf;
  char *recv = recvbuf;
  CUstream s = (CUstream)stream;
  weft_ops_t *o = comm->ops;
  if (algo == WEFT_ALGO_COPY_ENGINE) return ag_copy_engine(comm, send, recv, bytes, s);

  weft_launch_config_t cfg = WEFT_LAUNCH_CONFIG_INIT;
  unsigned long long n = bytes;
  cfg.block[0] = AG_THREADS_SM;
  if (algo == WEFT_ALGO_RING) { /* a block per slice, always as many as there are count words:
                                   every call must advance every word alike (kernel) */
    cfg.grid[0] = WEFT_MAX_LOCAL_RANKS;
    void *args[] = {(void *)&send, &recv, &n};
    return weft_kernel_launch(o->ag_ring, &cfg, args, stream);
  }
  if (algo == WEFT_ALGO_SM) {
    unsigned slices, local;
    weft_ops_ag_sm_grid(bytes, comm->local_world, o->gpu.sms, &slices, &local);
    int own = (int)local;
    cfg.grid[0] = (unsigned)(comm->local_world - 1) * slices + local;
    void *args[] = {(void *)&send, &recv, &n, &own};
    return weft_kernel_launch(o->ag_sm, &cfg, args, stream);
  }
  /* LL: about AG_LL_LINES lines per thread, a power of two of blocks a peer */
  unsigned max_slices = pow2_floor((unsigned long long)o->gpu.sms / (unsigned)comm->local_world);
  if (max_slices > AG_MAX_SLICES) max_slices = AG_MAX_SLICES;
  unsigned long long lines = (bytes + 7) / 8;
  cfg.block[0] = AG_THREADS_LL;
  unsigned per_block = AG_LL_LINES * AG_THREADS_LL;
  unsigned slices = (unsigned)((lines + per_block - 1) / per_block);
  cfg.grid[0] = (unsigned)comm->local_world * (slices < max_slices ? slices : max_slices);
  unsigned long long slot = o->ag_ll_slot;
  void *args[] = {(void *)&send, &recv, &n, &o->ag_ll_buf, &slot};
  cfg.programmatic = 1; /* weft_pdl_begin */
  return weft_kernel_launch(o->ag_ll, &cfg, args, stream);
}
