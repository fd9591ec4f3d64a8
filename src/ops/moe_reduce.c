/*
 * moe_reduce.c — weft_moe_rs (MoE + ReduceScatter) and weft_moe_ar (MoE + AllReduce), the second
 * half of a tensor-parallel MoE layer (weft.h): row-parallel experts, each rank's share of the
 * intermediate columns in, every rank's partial of the combined output summed over the ranks.
 * Argument checks and the launches: the grouped GEMM with the top-k combine in its epilogue
 * (grouped.h, kernels/gemm/config.cuh: WEFT_GEMM_COMBINE) into this rank's partial of the tokens'
 * rows, in the symmetric workspace, then weft_reduce_scatter (each rank its tokens' rows) or
 * weft_allreduce (every rank all of them).
 */
#include "grouped.h"

#include <string.h>

#include "../runtime/comm.h"
#include "../runtime/heap.h"

weft_status_t weft_moe_reduce_workspace_size(weft_comm_t *comm, int tokens, int n,
                                             weft_dtype_t out, size_t *bytes) {
  WEFT_CHECK(weft_comm_check(comm));
  WEFT_ARG(comm, bytes, "bytes is NULL");
  WEFT_ARG(comm, tokens >= 0 && n >= 0, "tokens %d and n %d: not negative", tokens, n);
  WEFT_ARG(comm, out == WEFT_DTYPE_BF16 || out == WEFT_DTYPE_FP16 || out == WEFT_DTYPE_FP32,
           "output dtype %d: bf16, fp16 or fp32", (int)out);
  *bytes = ((size_t)tokens * (size_t)n * weft_dtype_size(out) + 255) / 256 * 256;
  return WEFT_STATUS_SUCCESS;
}

/* Both ops: the checks, then the partial of all the plan's tokens into the workspace; *partial:
 * its rows (contiguous, n a row). op names the public call; all_rows: out holds every token's
 * rows (weft_moe_ar), else this rank's tokens / world. */
static weft_status_t moe_partial(weft_comm_t *comm, const char *op, int all_rows,
                                 const weft_moe_routing_t *routing, const void *act, int ldact,
                                 const void *w, int ldw, long long w_stride, const void *weights,
                                 weft_dtype_t wdtype, void *out, void *workspace, int n, int k,
                                 weft_dtype_t in, weft_dtype_t out_dtype, weft_gemm_layout_t layout,
                                 weft_algo_t algo, weft_stream_t stream, size_t *count) {
  WEFT_CHECK(weft_comm_check(comm));
  WEFT_ARG(comm, algo == WEFT_ALGO_AUTO || algo == WEFT_ALGO_SEQUENTIAL,
           "algo %d is not one of %s's (auto, sequential)", (int)algo, op);
  if (comm->world != comm->local_world)
    return WEFT_ERR(comm, WEFT_STATUS_NOT_SUPPORTED,
                    "%s runs over the ranks of one node (world %d, %d on this node)", op,
                    comm->world, comm->local_world);
  int world = comm->local_world;
  WEFT_ARG(comm, routing, "routing is NULL");
  WEFT_ARG(comm, all_rows || routing->tokens % world == 0,
           "%s: the plan's %d tokens are no multiple of the %d ranks", op, routing->tokens,
           world);
  WEFT_ARG(comm, n >= 0, "n %d is negative", n);
  WEFT_CHECK(weft_grouped_combine_check(comm, weights, wdtype, n, n));
  size_t bytes = (size_t)routing->tokens * (size_t)n * weft_dtype_size(out_dtype);
  *count = (size_t)routing->tokens * (size_t)n / (all_rows ? 1 : (size_t)world);
  if (bytes) {
    WEFT_ARG(comm, out, "out is NULL");
    WEFT_ARG(comm, weft_heap_contains(&comm->heap, workspace, bytes),
             "workspace %p (+%zu bytes) must lie in the symmetric heap (weft_malloc, "
             "weft_moe_reduce_workspace_size)", workspace, bytes);
    size_t ob = *count * weft_dtype_size(out_dtype);
    WEFT_ARG(comm, (const char *)out + ob <= (const char *)workspace ||
                       (const char *)workspace + bytes <= (const char *)out,
             "out overlaps the workspace");
  }
  weft_grouped_call_t call;
  memset(&call, 0, sizeof call);
  call.h.combine_weights = weights, call.h.combine_wtype = wdtype;
  WEFT_CHECK(weft_grouped_setup(comm, routing, act, ldact, w, ldw, w_stride, workspace, n, n, n,
                                routing->tokens, k, in, out_dtype, layout, &call));
  if (!bytes) return WEFT_STATUS_SUCCESS;
  WEFT_CHECK(weft_comm_make_current(comm));
  return weft_grouped_launch(comm, &call, (CUstream)stream);
}

weft_status_t weft_moe_rs(weft_comm_t *comm, const weft_moe_routing_t *routing, const void *act,
                          int ldact, const void *w, int ldw, long long w_stride,
                          const void *weights, weft_dtype_t wdtype, void *out, void *workspace,
                          int n, int k, weft_dtype_t in, weft_dtype_t out_dtype,
                          weft_gemm_layout_t layout, weft_algo_t algo, weft_stream_t stream) {
  size_t count;
  WEFT_CHECK(moe_partial(comm, "moe_rs", 0, routing, act, ldact, w, ldw, w_stride, weights, wdtype,
                         out, workspace, n, k, in, out_dtype, layout, algo, stream, &count));
  if (!count) return WEFT_STATUS_SUCCESS;
  return weft_reduce_scatter(comm, workspace, out, count, out_dtype, WEFT_RED_OP_SUM,
                             WEFT_ALGO_AUTO, stream);
}

weft_status_t weft_moe_ar(weft_comm_t *comm, const weft_moe_routing_t *routing, const void *act,
                          int ldact, const void *w, int ldw, long long w_stride,
                          const void *weights, weft_dtype_t wdtype, void *out, void *workspace,
                          int n, int k, weft_dtype_t in, weft_dtype_t out_dtype,
                          weft_gemm_layout_t layout, weft_algo_t algo, weft_stream_t stream) {
  size_t count;
  WEFT_CHECK(moe_partial(comm, "moe_ar", 1, routing, act, ldact, w, ldw, w_stride, weights, wdtype,
                         out, workspace, n, k, in, out_dtype, layout, algo, stream, &count));
  if (!count) return WEFT_STATUS_SUCCESS;
  return weft_allreduce(comm, workspace, out, count, out_dtype, WEFT_RED_OP_SUM, WEFT_ALGO_AUTO,
                        stream);
}
