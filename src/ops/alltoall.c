/*
 * alltoall.c — weft_alltoall and weft_alltoallv: argument checks, the choice of algorithm, the
 * plan (kernels/alltoall.h: per-peer byte ranges and the blocks of each pair) and the launches of
 * kernels/alltoall.cu (see there for the protocols). Shapes, in elements of
 * weft_dtype_size(dtype) bytes: AllToAll sendbuf [world][count], recvbuf [world][count]
 * symmetric; AllToAllv chunks at the caller's element displacements, recvbuf symmetric.
 *
 * Scratch, allocated at init (never inside a call): the inbox, symmetric
 * [local_world][WEFT_A2A_INBOX_WORDS] 64-bit words, where receivers tell SM senders where their
 * chunks land; the LL areas, symmetric [2 parities][local_world][16 + WEFT_LL_BYTES(
 * WEFT_ALLTOALL_LL_MAX_BYTES)] (a header line, then a chunk's lines).
 */
#include "ops.h"

#include "../runtime/module.h"
#include "../runtime/comm.h"
#include "kernels/alltoall.h"

#define A2A_THREADS 512
/* AUTO's LL limit: bytes a rank pushes in all. On two H200s (2026-11-25,
 * bench/results/2026-11-26-collectives-h200x2.md, "AllToAll(v): where LL lines stop paying") LL
 * took 6.5 / 7.7 / 9.5 / 13.9 us at 256 KiB / 512 KiB / 1 MiB / 2 MiB a rank, the SM form 9.9 /
 * 10.1 / 10.7 / 12.4. At 4 and 8 ranks the same bytes pushed: a model, not measured. */
#define A2A_LL_AUTO_PUSH (512u << 10)

weft_status_t weft_alltoall_init(weft_comm_t *comm) {
  weft_ops_t *o = comm->ops;
  WEFT_CHECK(weft_module_load_embedded(comm, "kernels/alltoall.cu", NULL, 0, &o->a2a));
  WEFT_CHECK(weft_module_get_kernel(o->a2a, "weft_a2a_sm", &o->a2a_sm));
  WEFT_CHECK(weft_module_get_kernel(o->a2a, "weft_a2a_ll", &o->a2a_ll));
  WEFT_CHECK(weft_malloc(comm, (size_t)comm->local_world * WEFT_A2A_INBOX_WORDS * sizeof(uint64_t),
                         (void **)&o->a2a_inbox));
  o->a2a_ll_slot = 16 + WEFT_LL_BYTES(WEFT_ALLTOALL_LL_MAX_BYTES);
  return weft_malloc(comm, 2 * (size_t)comm->local_world * o->a2a_ll_slot, (void **)&o->a2a_ll_buf);
}

void weft_alltoall_destroy(weft_comm_t *comm) {
  /* The inbox and the LL areas go with the heap. */
  if (comm->ops->a2a) weft_module_unload(comm->ops->a2a);
}

/* The checks both calls share; *elem gets the element size. */
static weft_status_t a2a_check(weft_comm_t *comm, weft_dtype_t dtype, weft_algo_t algo, size_t *elem) {
  WEFT_CHECK(weft_comm_check(comm));
  *elem = weft_dtype_size(dtype);
  WEFT_ARG(comm, *elem, "dtype %d is not a weft_dtype_t", (int)dtype);
  WEFT_ARG(comm, algo == WEFT_ALGO_AUTO || algo == WEFT_ALGO_SM || algo == WEFT_ALGO_LL,
           "algo %d is not one of alltoall's (auto, SM, LL)", (int)algo);
  if (comm->world != comm->local_world)
    return WEFT_ERR(comm, WEFT_STATUS_NOT_SUPPORTED,
                    "alltoall runs over the ranks of one node (world %d, %d on this node)",
                    comm->world, comm->local_world);
  return WEFT_STATUS_SUCCESS;
}

/* Checks of the buffers against the plan's byte ranges: each buffer not NULL where it has bytes,
 * recvbuf in the heap where the senders store into it (not LL: its lines land in an internal
 * symmetric area and the receiver unpacks them), no send range overlapping the receive ranges
 * (their hulls, to be cheap). */
static weft_status_t a2a_check_buffers(weft_comm_t *comm, const char *send, const char *recv,
                                       const weft_a2a_plan_t *plan, weft_algo_t algo) {
  uint64_t slo = UINT64_MAX, shi = 0, rlo = UINT64_MAX, rhi = 0;
  for (int p = 0; p < comm->local_world; p++) {
    if (plan->send_bytes[p]) {
      slo = plan->send_off[p] < slo ? plan->send_off[p] : slo;
      shi = plan->send_off[p] + plan->send_bytes[p] > shi ? plan->send_off[p] + plan->send_bytes[p] : shi;
    }
    if (plan->recv_bytes[p]) {
      rlo = plan->recv_off[p] < rlo ? plan->recv_off[p] : rlo;
      rhi = plan->recv_off[p] + plan->recv_bytes[p] > rhi ? plan->recv_off[p] + plan->recv_bytes[p] : rhi;
    }
  }
  WEFT_ARG(comm, send || !shi, "sendbuf is NULL with elements to send");
  WEFT_ARG(comm, recv || !rhi, "recvbuf is NULL with elements to receive");
  if (!rhi) return WEFT_STATUS_SUCCESS;
  WEFT_ARG(comm, algo == WEFT_ALGO_LL || weft_heap_contains(&comm->heap, recv, rhi),
           "recvbuf %p (+%llu bytes) must lie in the symmetric heap (weft_malloc) above LL's "
           "sizes: peers store into it", (const void *)recv, (unsigned long long)rhi);
  WEFT_ARG(comm, !shi || (uintptr_t)send + shi <= (uintptr_t)recv + rlo ||
                     (uintptr_t)recv + rhi <= (uintptr_t)send + slo,
           "sendbuf and recvbuf overlap (alltoall has no in-place form)");
  return WEFT_STATUS_SUCCESS;
}

/* algo: WEFT_ALGO_LL (weft_a2a_ll) or WEFT_ALGO_SM (weft_a2a_sm, which sends the chunks of
 * fewer than ll_below bytes in LL lines), chosen by the caller. */
static weft_status_t a2a_launch(weft_comm_t *comm, const char *send, char *recv,
                                weft_a2a_plan_t *plan, size_t elem, int v, weft_algo_t algo,
                                unsigned long long ll_below, weft_stream_t stream) {
  WEFT_CHECK(a2a_check_buffers(comm, send, recv, plan, algo));
  if (algo == WEFT_ALGO_LL)
    for (int p = 0; p < comm->local_world; p++)
      WEFT_ARG(comm, plan->send_bytes[p] <= WEFT_ALLTOALL_LL_MAX_BYTES &&
                         plan->recv_bytes[p] <= WEFT_ALLTOALL_LL_MAX_BYTES,
               "WEFT_ALGO_LL takes at most %u bytes per pair, not %llu (to rank %d) or %llu (from it)",
               WEFT_ALLTOALL_LL_MAX_BYTES, (unsigned long long)plan->send_bytes[p], p,
               (unsigned long long)plan->recv_bytes[p]);
  WEFT_CHECK(weft_comm_make_current(comm));
  weft_ops_t *o = comm->ops;
  int budget = o->gpu.sms > comm->local_world ? o->gpu.sms : comm->local_world;
  weft_launch_config_t cfg = WEFT_LAUNCH_CONFIG_INIT;
  if (algo == WEFT_ALGO_LL) ll_below = UINT64_MAX;
  /* The grid stays within the SMs: blocks wait for their peers' LL lines, so a call with LL
   * chunks progresses once all of its blocks are resident (kernels/alltoall.cu). */
  cfg.grid[0] = weft_a2a_plan_blocks(plan, comm->local_rank, comm->local_world, budget,
                                     WEFT_A2A_SLICE_BYTES, ll_below);
  cfg.block[0] = A2A_THREADS;
  unsigned long long el = elem, slot = o->a2a_ll_slot;
  if (algo == WEFT_ALGO_LL) {
    void *args[] = {(void *)&send, &recv, &o->a2a_ll_buf, &slot, plan, &el, &v};
    cfg.programmatic = 1; /* weft_pdl_begin */
    return weft_kernel_launch(o->a2a_ll, &cfg, args, stream);
  }
  void *args[] = {(void *)&send, &recv, &o->a2a_inbox, &o->a2a_ll_buf, &slot, &ll_below, plan, &el, &v};
  return weft_kernel_launch(o->a2a_sm, &cfg, args, stream);
}

weft_status_t weft_alltoall(weft_comm_t *comm, const void *sendbuf, void *recvbuf, size_t count,
                            weft_dtype_t dtype, weft_algo_t algo, weft_stream_t stream) {
  size_t elem = 0;
  WEFT_CHECK(a2a_check(comm, dtype, algo, &elem));
  if (count == 0) return WEFT_STATUS_SUCCESS;
  WEFT_ARG(comm, count <= SIZE_MAX / elem / (size_t)comm->world, "count %zu overflows", count);
  weft_a2a_plan_t plan;
  uint64_t bytes = (uint64_t)count * elem;
  for (int p = 0; p < comm->local_world; p++) {
    plan.send_off[p] = plan.recv_off[p] = (uint64_t)p * bytes;
    plan.send_bytes[p] = plan.recv_bytes[p] = bytes;
  }
  /* Every rank passes the same count, so every rank makes the same choice. */
  if (algo == WEFT_ALGO_AUTO)
    algo = weft_ops_ll_auto(comm->local_world, bytes, WEFT_ALLTOALL_LL_MAX_BYTES, A2A_LL_AUTO_PUSH)
               ? WEFT_ALGO_LL
               : WEFT_ALGO_SM;
  return a2a_launch(comm, sendbuf, recvbuf, &plan, elem, 0, algo, 0, stream);
}

weft_status_t weft_alltoallv(weft_comm_t *comm, const void *sendbuf, const size_t *sendcounts,
                             const size_t *sdispls, void *recvbuf, const size_t *recvcounts,
                             const size_t *rdispls, weft_dtype_t dtype, weft_algo_t algo,
                             weft_stream_t stream) {
  size_t elem = 0;
  WEFT_CHECK(a2a_check(comm, dtype, algo, &elem));
  WEFT_ARG(comm, sendcounts && sdispls && recvcounts && rdispls,
           "sendcounts, sdispls, recvcounts or rdispls is NULL");
  weft_a2a_plan_t plan;
  for (int p = 0; p < comm->world; p++) {
    WEFT_ARG(comm, sendcounts[p] <= SIZE_MAX / elem && sdispls[p] <= SIZE_MAX / elem - sendcounts[p],
             "sendcounts[%d] = %zu at sdispls[%d] = %zu overflows", p, sendcounts[p], p, sdispls[p]);
    WEFT_ARG(comm, recvcounts[p] <= SIZE_MAX / elem && rdispls[p] <= SIZE_MAX / elem - recvcounts[p],
             "recvcounts[%d] = %zu at rdispls[%d] = %zu overflows", p, recvcounts[p], p, rdispls[p]);
    plan.send_off[p] = (uint64_t)sdispls[p] * elem;
    plan.send_bytes[p] = (uint64_t)sendcounts[p] * elem;
    plan.recv_off[p] = (uint64_t)rdispls[p] * elem;
    plan.recv_bytes[p] = (uint64_t)recvcounts[p] * elem;
  }
  int me = comm->rank;
  WEFT_ARG(comm, sendcounts[me] == recvcounts[me],
           "sendcounts[%d] = %zu but recvcounts[%d] = %zu: this rank's own chunk must agree", me,
           sendcounts[me], me, recvcounts[me]);
  /* AUTO: the SM kernel with the chunks AUTO would send by LL in LL lines, a choice per pair that
   * both of its ranks see (its sender's count goes in the header line). */
  size_t ll_max = weft_ops_ll_auto_max(comm->local_world, WEFT_ALLTOALL_LL_MAX_BYTES, A2A_LL_AUTO_PUSH);
  return a2a_launch(comm, sendbuf, recvbuf, &plan, elem, 1, algo == WEFT_ALGO_AUTO ? WEFT_ALGO_SM : algo,
                    algo == WEFT_ALGO_AUTO ? ll_max + 1ull : 0, stream);
}
