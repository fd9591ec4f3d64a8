/*
 * ag_moe.c — weft_ag_moe, AllGather + MoE (weft.h): the first half of a tensor-parallel MoE layer,
 * column-parallel experts over tokens sharded by rank. Argument checks, the choice between the
 * overlapped and the sequential form, and the launches. The GEMM is the grouped kernel's gated
 * form with its A gathered from the tokens in its loads (grouped.h, kernels/gemm/config.cuh:
 * WEFT_GEMM_GATED, WEFT_GEMM_A_GATHER).
 *
 * Overlapped (WEFT_ALGO_COPY_ENGINE): the tokens' AllGather is AllGather + GEMM's on the copy
 * engines (tp.h, weft_ag_overlapped: this rank's tokens into its slot first, the pushes to the
 * peers on the side stream, each followed by its rank's signal on the receiver), and every tile of
 * the grouped GEMM waits only for the ranks whose tokens its rows hold (WEFT_GEMM_GROUP_WAIT:
 * the plan holds each expert's entries in token order, rank after rank, so a tile's are the ranks
 * from its first row's to its last's), its tiles in the order their tokens arrive in
 * (weft_moe_arrival_order) - the dynamic tile mapping of TileLink, §4.1 and Figure 5.
 * Sequential: weft_allgather, then the grouped GEMM.
 */
#include "grouped.h"

#include <string.h>

#include "../runtime/comm.h"
#include "tp.h"

/* The overlapped call's GEMM (a weft_ag_launch_fn) */
static weft_status_t ag_moe_launch(weft_comm_t *comm, const void *ctx, CUstream stream) {
  return weft_grouped_launch(comm, ctx, stream);
}

weft_status_t weft_ag_moe(weft_comm_t *comm, const weft_moe_routing_t *routing, const void *x,
                          void *x_gathered, const void *w, int ldw, long long w_stride, void *act,
                          int ldact, int m, int inter, int k, weft_dtype_t in, weft_dtype_t out,
                          weft_gemm_layout_t layout, weft_algo_t algo, weft_stream_t stream) {
  WEFT_CHECK(weft_comm_check(comm));
  WEFT_ARG(comm, algo == WEFT_ALGO_AUTO || algo == WEFT_ALGO_COPY_ENGINE || algo == WEFT_ALGO_SEQUENTIAL,
           "algo %d is not one of ag_moe's (auto, copy engine, sequential)", (int)algo);
  if (comm->world != comm->local_world)
    return WEFT_ERR(comm, WEFT_STATUS_NOT_SUPPORTED,
                    "ag_moe runs over the ranks of one node (world %d, %d on this node)",
                    comm->world, comm->local_world);
  int world = comm->local_world;
  WEFT_ARG(comm, routing, "routing is NULL");
  WEFT_ARG(comm, m >= 0 && (long long)m * world == routing->tokens,
           "m %d tokens a rank over %d ranks: the plan routes %d tokens", m, world,
           routing->tokens);
  WEFT_ARG(comm, inter >= 0 && inter < (1 << 30), "inter %d: from 0 to 2^30 - 1", inter);
  size_t bytes = (size_t)m * (size_t)k * weft_dtype_size(in);
  char *ag = x_gathered;
  const char *mine = x;
  WEFT_CHECK(weft_ag_check(comm, "x", mine, "x_gathered", ag, bytes));
  /* the GEMM over the gathered tokens, gated, its rows gathered in its loads (contiguous rows of
   * k: the AllGather's layout) */
  weft_grouped_call_t call;
  memset(&call, 0, sizeof call);
  call.h.group_gated = 1, call.h.gather_a = x_gathered, call.h.gather_lda = k;
  WEFT_CHECK(weft_grouped_setup(comm, routing, x_gathered, k, w, ldw, w_stride, act, ldact,
                                2 * inter, inter, 0, k, in, out, layout, &call));
  if (m == 0) return WEFT_STATUS_SUCCESS;
  WEFT_CHECK(weft_comm_make_current(comm));
  /* AUTO: overlapped from WEFT_OVERLAP_MIN_ROWS rows of the GEMM a rank (each token's topk),
   * sequential on ranks that share a GPU */
  weft_algo_t form = weft_ops_overlap_algo(algo, (long long)routing->tokens * routing->topk, world,
                                           0, 0);
  if (world == 1 || inter == 0) form = WEFT_ALGO_SEQUENTIAL;
  WEFT_CHECK(weft_ops_engine_form(comm, algo, "ag_moe", &form));
  if (form == WEFT_ALGO_SEQUENTIAL) {
    WEFT_CHECK(weft_allgather(comm, x, x_gathered, bytes, WEFT_DTYPE_UINT8, WEFT_ALGO_AUTO,
                              stream));
    return weft_grouped_launch(comm, &call, (CUstream)stream);
  }
  /* each tile waits for its ranks' signals (signal s covers tokens [s * m, (s + 1) * m)), the
   * tiles in the order their tokens arrive in. The order and its keys live in the GEMM's split
   * workspace, which the grouped kernel (never split) leaves unused. */
  weft_ops_t *o = comm->ops;
  long long bm_tiles = routing->max_rows / call.cfg.bm;
  if ((size_t)(2 * bm_tiles) * sizeof(int) > o->gemm_ws_floats * sizeof(float))
    return WEFT_ERR(comm, WEFT_STATUS_INVALID_ARGUMENT,
                    "ag_moe: %lld tile rows exceed the tile order's room", bm_tiles);
  int *keys = (int *)o->gemm_ws, *order = keys + bm_tiles;
  call.h.wait_signals = o->ag_gemm_sig;
  call.h.wait_rows = m;
  call.h.wait_expected = 1;
  call.h.group_order = order;
  WEFT_CHECK(weft_gemm_prepare(comm, &call.p, &call.cfg, &call.h)); /* before anything it waits for */
  WEFT_CHECK(weft_moe_arrival_order(comm, routing, call.cfg.bm, (long long)m * routing->topk,
                                    comm->local_rank, world, keys, order, stream));
  return weft_ag_overlapped(comm, mine, ag, bytes, 0, ag_moe_launch, &call, (CUstream)stream);
}
