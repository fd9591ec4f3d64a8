/*
 * grouped_gemm.c — weft_grouped_gemm and its fused forms: argument checks and the launch of the
 * GEMM's grouped specialisation (kernels/gemm/config.cuh, WEFT_GEMM_GROUPED) over a routing plan
 * (kernels/moe.h): A's rows are the plan's, each tile row multiplies its expert's B (a third
 * dimension of B's tensor map), and the rows in use are read by the kernel from the plan on the
 * device. weft_grouped_gemm_silu_mul gathers A's rows from the tokens in its loads
 * (WEFT_GEMM_A_GATHER) and adds the gated epilogue (WEFT_GEMM_GATED), weft_grouped_gemm_combine
 * the top-k combine (WEFT_GEMM_COMBINE).
 */
#include "grouped.h"

#include "../runtime/comm.h"
#include "../runtime/loader.h"

weft_status_t weft_grouped_setup(weft_comm_t *comm, const weft_moe_routing_t *routing,
                                 const void *a, int lda, const void *b, int ldb,
                                 long long b_stride, void *c, int ldc, int n, int c_cols,
                                 int c_rows, int k, weft_dtype_t in, weft_dtype_t out,
                                 weft_gemm_layout_t layout, weft_grouped_call_t *call) {
  WEFT_CHECK(weft_comm_check(comm));
  WEFT_ARG(comm, routing, "routing is NULL");
  WEFT_ARG(comm, layout == WEFT_GEMM_LAYOUT_NK || layout == WEFT_GEMM_LAYOUT_KN,
           "layout %d is not a weft_gemm_layout_t", (int)layout);
  WEFT_ARG(comm, routing->tile_rows % 64 == 0,
           "the plan's tile_rows %d: the grouped GEMM takes multiples of 64", routing->tile_rows);
  WEFT_ARG(comm, routing->tile_expert && routing->tiles && routing->row_entry,
           "the routing plan has no tile table");
  WEFT_ARG(comm, k >= 8, "k %d: at least 8", k);
  WEFT_ARG(comm, c_cols >= 0 && ldc >= c_cols, "ldc %d is less than C's %d columns", ldc, c_cols);
  WEFT_ARG(comm, (long long)ldc * weft_dtype_size(out) % 16 == 0,
           "ldc %d: C's rows must be multiples of 16 bytes (TMA stores)", ldc);
  /* (C's width is c_cols, checked above; the GEMM's check of ldc against n is B's width) */
  weft_gemm_problem_t *p = &call->p;
  *p = (weft_gemm_problem_t){(int)routing->max_rows, n, k, lda, ldb, ldc > n ? ldc : n, in, out,
                             layout == WEFT_GEMM_LAYOUT_NK, 0};
  WEFT_CHECK(weft_gemm_problem_check(comm, p, a, b, c));
  p->ldc = ldc;
  /* one expert's matrix: rows of ldb elements ([n, k]: n rows of k; [k, n]: k rows of n) */
  long long rows = p->b_kmajor ? n : k, cols = p->b_kmajor ? k : n;
  long long matrix = n ? (rows - 1) * (long long)ldb + cols : 0;
  WEFT_ARG(comm, b_stride % 8 == 0 && b_stride >= matrix,
           "b_stride %lld: a multiple of 8 elements, at least one expert's matrix (%lld)",
           b_stride, matrix);
  weft_gemm_hooks_t *h = &call->h;
  weft_gemm_config_grouped(p, routing->tile_rows, h->group_gated, &call->cfg);
  h->group_expert = routing->tile_expert, h->group_tiles = routing->tiles;
  h->group_rows = routing->tile_rows, h->group_experts = routing->experts;
  h->group_stride = b_stride;
  h->group_entry = routing->row_entry, h->group_topk = routing->topk;
  call->a = a, call->b = b, call->c = c, call->c_cols = c_cols, call->c_rows = c_rows;
  return WEFT_STATUS_SUCCESS;
}

weft_status_t weft_grouped_launch(weft_comm_t *comm, const weft_grouped_call_t *call,
                                  CUstream stream) {
  const weft_gemm_problem_t *p = &call->p;
  if (call->h.combine_weights && call->c_rows > 0 && call->c_cols > 0) { /* sums start at 0 */
    size_t es = weft_dtype_size(p->out), pitch = (size_t)p->ldc * es;
    CUdeviceptr dc = (CUdeviceptr)(uintptr_t)call->c;
    if (es == 4)
      WEFT_CU(comm, cuMemsetD2D32Async(dc, pitch, 0, (size_t)call->c_cols, (size_t)call->c_rows,
                                       stream));
    else
      WEFT_CU(comm, cuMemsetD2D16Async(dc, pitch, 0, (size_t)call->c_cols, (size_t)call->c_rows,
                                       stream));
  }
  if (p->m == 0 || p->n == 0) return WEFT_STATUS_SUCCESS;
  return weft_gemm_launch(comm, p, &call->cfg, &call->h, call->a, call->b, call->c, stream);
}

weft_status_t weft_grouped_combine_check(weft_comm_t *comm, const void *weights,
                                         weft_dtype_t wdtype, int n, int ldc) {
  WEFT_ARG(comm, weights, "weights is NULL");
  WEFT_ARG(comm, weft_moe_weights_dtype(wdtype), "weights' dtype %d: bf16, fp16 or fp32",
           (int)wdtype);
  WEFT_ARG(comm, n % 8 == 0 && ldc % 8 == 0, "n %d and ldo %d: multiples of 8 (16-byte rows)", n,
           ldc);
  return WEFT_STATUS_SUCCESS;
}

/* The entry points' setup and launch, h the options' hooks (the rest zero). */
static weft_status_t grouped(weft_comm_t *comm, const weft_moe_routing_t *routing, const void *a,
                             int lda, const void *b, int ldb, long long b_stride, void *c,
                             int ldc, int n, int c_cols, int c_rows, int k, weft_dtype_t in,
                             weft_dtype_t out, weft_gemm_layout_t layout,
                             const weft_gemm_hooks_t *h, weft_stream_t stream) {
  weft_grouped_call_t call;
  call.h = *h;
  WEFT_CHECK(weft_grouped_setup(comm, routing, a, lda, b, ldb, b_stride, c, ldc, n, c_cols,
                                c_rows, k, in, out, layout, &call));
  return weft_grouped_launch(comm, &call, (CUstream)stream);
}

weft_status_t weft_grouped_gemm(weft_comm_t *comm, const weft_moe_routing_t *routing,
                                const void *a, int lda, const void *b, int ldb, long long b_stride,
                                void *c, int ldc, int n, int k, weft_dtype_t in, weft_dtype_t out,
                                weft_gemm_layout_t layout, weft_stream_t stream) {
  weft_gemm_hooks_t h = {0};
  return grouped(comm, routing, a, lda, b, ldb, b_stride, c, ldc, n, n, 0, k, in, out, layout, &h,
                 stream);
}

weft_status_t weft_grouped_gemm_silu_mul(weft_comm_t *comm, const weft_moe_routing_t *routing,
                                         const void *x, int ldx, const void *b, int ldb,
                                         long long b_stride, void *c, int ldc, int inter, int k,
                                         weft_dtype_t in, weft_dtype_t out,
                                         weft_gemm_layout_t layout, weft_stream_t stream) {
  WEFT_ARG(comm, inter >= 0 && inter < (1 << 30), "inter %d: from 0 to 2^30 - 1", inter);
  WEFT_ARG(comm, !routing || x || routing->tokens == 0, "x is NULL");
  weft_gemm_hooks_t h = {0};
  h.group_gated = 1, h.gather_a = x, h.gather_lda = ldx;
  return grouped(comm, routing, x, ldx, b, ldb, b_stride, c, ldc, 2 * inter, inter, 0, k, in, out,
                 layout, &h, stream);
}

weft_status_t weft_grouped_gemm_combine(weft_comm_t *comm, const weft_moe_routing_t *routing,
                                        const void *a, int lda, const void *b, int ldb,
                                        long long b_stride, const void *weights,
                                        weft_dtype_t wdtype, void *out, int ldo, int n, int k,
                                        weft_dtype_t in, weft_dtype_t out_dtype,
                                        weft_gemm_layout_t layout, weft_stream_t stream) {
  WEFT_ARG(comm, routing, "routing is NULL");
  WEFT_CHECK(weft_grouped_combine_check(comm, weights, wdtype, n, ldo));
  weft_gemm_hooks_t h = {0};
  h.combine_weights = weights, h.combine_wtype = wdtype;
  return grouped(comm, routing, a, lda, b, ldb, b_stride, out, ldo, n, n, routing->tokens, k, in,
                 out_dtype, layout, &h, stream);
}
