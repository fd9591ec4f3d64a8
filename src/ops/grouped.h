/*
 * grouped.h — the grouped GEMM of an MoE layer as the ops build on it: weft_grouped_gemm and its
 * fused forms (grouped_gemm.c) and AllGather + MoE (ag_moe.c), which runs the gated form on the
 * gathered tokens with a wait per tile, set up the call here and launch it once ready.
 */
#ifndef WEFT_OPS_GROUPED_H
#define WEFT_OPS_GROUPED_H

#include <cuda.h>

#include "ops.h"
#include "gemm/gemm.h"

/* A checked grouped GEMM, ready to launch: the GEMM's problem (m: the plan's largest row count),
 * configuration and hooks, the operands, and C's columns and rows where the combine zeroes it. */
typedef struct weft_grouped_call {
  weft_gemm_problem_t p;
  weft_gemm_config_t cfg;
  weft_gemm_hooks_t h;
  const void *a, *b;
  void *c;
  int c_cols, c_rows;
} weft_grouped_call_t;

/* Checks a grouped GEMM over routing's plan and sets *call up (call->h holds the options on
 * entry: group_gated, combine_weights and combine_wtype, gather_a and gather_lda, a wait; the
 * plan's fields are filled in). a, lda: A in the plan's rows, or with gather_a the tokens (then
 * checked as A); n: B's columns (the gated form's gate and up); c_cols, c_rows: C's columns and
 * rows (the combine's C holds the tokens' rows). Enqueues nothing. */
weft_status_t weft_grouped_setup(weft_comm_t *comm, const weft_moe_routing_t *routing,
                                 const void *a, int lda, const void *b, int ldb,
                                 long long b_stride, void *c, int ldc, int n, int c_cols,
                                 int c_rows, int k, weft_dtype_t in, weft_dtype_t out,
                                 weft_gemm_layout_t layout, weft_grouped_call_t *call);

/* The combine's own arguments (weft_grouped_gemm_combine, weft_moe_rs, weft_moe_ar): the routing
 * weights there, of bf16, fp16 or fp32, and 16-byte rows of C (n and ldc multiples of 8). */
weft_status_t weft_grouped_combine_check(weft_comm_t *comm, const void *weights,
                                         weft_dtype_t wdtype, int n, int ldc);

/* Whether t is a dtype the routing weights may have (bf16, fp16, fp32). */
static inline int weft_moe_weights_dtype(weft_dtype_t t) {
  return t == WEFT_DTYPE_BF16 || t == WEFT_DTYPE_FP16 || t == WEFT_DTYPE_FP32;
}

/* Enqueues a set-up call on stream: C zeroed first for the combine, then the GEMM. */
weft_status_t weft_grouped_launch(weft_comm_t *comm, const weft_grouped_call_t *call,
                                  CUstream stream);

/* AllGather + MoE's tile order (kernels/moe.cu, weft_moe_arrival_order) on stream: the plan's
 * rows in use as tiles of bm rows (bm divides the plan's tile_rows), sorted stably by the step at
 * which the last of their tokens' ranks arrives at rank me of world (per_rank entries a rank,
 * rank q's at step (q - me) mod world) into order; keys: scratch. Both hold routing->max_rows /
 * bm ints. */
weft_status_t weft_moe_arrival_order(weft_comm_t *comm, const weft_moe_routing_t *routing, int bm,
                                     long long per_rank, int me, int world, int *keys, int *order,
                                     weft_stream_t stream);

#endif /* WEFT_OPS_GROUPED_H */
