/*
 * moe_tp.c — weft_moe_tp, one tensor-parallel MoE layer's experts in one call (weft.h): the ids
 * and routing weights gathered (weft_allgather), the plan (weft_moe_route), AllGather + MoE
 * (weft_ag_moe) and MoE + ReduceScatter (weft_moe_rs), every buffer carved out of one symmetric
 * workspace (moe_tp_layout).
 */
#include "grouped.h"

#include "../runtime/comm.h"
#include "kernels/moe.h"

#define MOE_TP_ALIGN 256

/* The workspace, each part MOE_TP_ALIGN-aligned: the gathered ids [world * m, topk] and weights,
 * the plan's workspace, the gathered tokens [world * m, hidden], the activations [max rows,
 * inter], the partial sums [world * m, hidden]; the plan's tile height. */
typedef struct moe_tp_layout {
  size_t ids, weights, plan, plan_bytes, x, act, partial, bytes;
  int tile_rows;
} moe_tp_layout_t;

static weft_status_t moe_tp_layout(weft_comm_t *comm, int m, int topk, int experts, int hidden,
                                   int inter, weft_dtype_t wdtype, weft_dtype_t dtype,
                                   moe_tp_layout_t *l) {
  WEFT_ARG(comm, m >= 0 && hidden >= 8 && inter >= 8 && hidden % 8 == 0 && inter % 8 == 0,
           "m %d, hidden %d, inter %d: m >= 0, hidden and inter multiples of 8", m, hidden,
           inter);
  WEFT_ARG(comm, dtype == WEFT_DTYPE_BF16 || dtype == WEFT_DTYPE_FP16,
           "dtype %d: bf16 or fp16", (int)dtype);
  WEFT_ARG(comm, weft_moe_weights_dtype(wdtype), "weights' dtype %d: bf16, fp16 or fp32",
           (int)wdtype);
  long long tokens = (long long)m * comm->local_world, entries = tokens * topk;
  WEFT_ARG(comm, tokens <= 0x7fffffff / (topk > 0 ? topk : 1), "%lld tokens: too many", tokens);
  /* 64-row tiles where experts hold fewer than 128 rows on average (less padding), else 128 */
  l->tile_rows = entries < 128LL * experts ? 64 : 128;
  long long max_rows;
  WEFT_CHECK(weft_moe_routing_size((int)tokens, topk, experts, l->tile_rows, &l->plan_bytes,
                                   &max_rows));
  size_t at = 0, es = weft_dtype_size(dtype);
#define MOE_TP_PLACE(field, size)                                                         \
  l->field = at;                                                                          \
  at += ((size_t)(size) + MOE_TP_ALIGN - 1) / MOE_TP_ALIGN * MOE_TP_ALIGN;
  MOE_TP_PLACE(ids, entries * 4)
  MOE_TP_PLACE(weights, entries * weft_dtype_size(wdtype))
  MOE_TP_PLACE(plan, l->plan_bytes)
  MOE_TP_PLACE(x, tokens * hidden * es)
  MOE_TP_PLACE(act, max_rows * inter * es)
  MOE_TP_PLACE(partial, tokens * hidden * es)
#undef MOE_TP_PLACE
  l->bytes = at;
  return WEFT_STATUS_SUCCESS;
}

weft_status_t weft_moe_tp_workspace_size(weft_comm_t *comm, int m, int topk, int experts,
                                         int hidden, int inter, weft_dtype_t wdtype,
                                         weft_dtype_t dtype, size_t *bytes) {
  WEFT_CHECK(weft_comm_check(comm));
  WEFT_ARG(comm, bytes, "bytes is NULL");
  moe_tp_layout_t l;
  WEFT_CHECK(moe_tp_layout(comm, m, topk, experts, hidden, inter, wdtype, dtype, &l));
  *bytes = l.bytes;
  return WEFT_STATUS_SUCCESS;
}

weft_status_t weft_moe_tp(weft_comm_t *comm, const void *x, const int32_t *topk_ids,
                          const void *topk_weights, weft_dtype_t wdtype, int m, int topk,
                          int experts, int hidden, const void *w1, const void *w2, int inter,
                          void *out, void *workspace, size_t workspace_bytes, weft_dtype_t dtype,
                          weft_stream_t stream) {
  WEFT_CHECK(weft_comm_check(comm));
  moe_tp_layout_t l;
  WEFT_CHECK(moe_tp_layout(comm, m, topk, experts, hidden, inter, wdtype, dtype, &l));
  WEFT_ARG(comm, workspace && workspace_bytes >= l.bytes,
           "workspace of %zu bytes; this layer needs %zu (weft_moe_tp_workspace_size)",
           workspace_bytes, l.bytes);
  int tokens = m * comm->local_world;
  size_t entries = (size_t)m * (size_t)topk;
  char *ws = workspace;
  int32_t *ids = (int32_t *)(ws + l.ids);
  /* the ids and weights of every rank's tokens, in rank order */
  WEFT_CHECK(weft_allgather(comm, topk_ids, ids, entries, WEFT_DTYPE_INT32, WEFT_ALGO_AUTO,
                            stream));
  WEFT_CHECK(weft_allgather(comm, topk_weights, ws + l.weights, entries, wdtype, WEFT_ALGO_AUTO,
                            stream));
  weft_moe_routing_t r;
  WEFT_CHECK(weft_moe_route(comm, ids, tokens, topk, experts, l.tile_rows, ws + l.plan,
                            l.plan_bytes, &r, stream));
  WEFT_CHECK(weft_ag_moe(comm, &r, x, ws + l.x, w1, hidden, 2LL * inter * hidden, ws + l.act,
                         inter, m, inter, hidden, dtype, dtype, WEFT_GEMM_LAYOUT_NK,
                         WEFT_ALGO_AUTO, stream));
  return weft_moe_rs(comm, &r, ws + l.act, inter, w2, inter, (long long)hidden * inter,
                     ws + l.weights, wdtype, out, ws + l.partial, hidden, inter, dtype, dtype,
                     WEFT_GEMM_LAYOUT_NK, WEFT_ALGO_AUTO, stream);
}
