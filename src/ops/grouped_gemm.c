/*
 * grouped_gemm.c — weft_grouped_gemm: argument checks and the launch of the GEMM's grouped
 * specialisation (kernels/gemm/config.cuh, WEFT_GEMM_GROUPED) over a routing plan (kernels/moe.h):
 * A's rows are the plan's, each tile row multiplies its expert's B (a third dimension of B's
 * tensor map), and the rows in use are read by the kernel from the plan on the device.
 */
#include "ops.h"

#include "../runtime/comm.h"
#include "gemm/gemm.h"

weft_status_t weft_grouped_gemm(weft_comm_t *comm, const weft_moe_routing_t *routing,
                                const void *a, int lda, const void *b, int ldb, long long b_stride,
                                void *c, int ldc, int n, int k, weft_dtype_t in, weft_dtype_t out,
                                weft_gemm_layout_t layout, weft_stream_t stream) {
  WEFT_CHECK(weft_comm_check(comm));
  WEFT_ARG(comm, routing, "routing is NULL");
  WEFT_ARG(comm, layout == WEFT_GEMM_LAYOUT_NK || layout == WEFT_GEMM_LAYOUT_KN,
           "layout %d is not a weft_gemm_layout_t", (int)layout);
  WEFT_ARG(comm, routing->tile_rows % 64 == 0,
           "the plan's tile_rows %d: the grouped GEMM takes multiples of 64", routing->tile_rows);
  WEFT_ARG(comm, routing->tile_expert && routing->tiles, "the routing plan has no tile table");
  WEFT_ARG(comm, k >= 8, "k %d: at least 8", k);
  weft_gemm_problem_t p = {(int)routing->max_rows, n, k, lda, ldb, ldc, in, out,
                           layout == WEFT_GEMM_LAYOUT_NK, 0};
  WEFT_CHECK(weft_gemm_problem_check(comm, &p, a, b, c));
  /* one expert's matrix: rows of ldb elements ([n, k]: n rows of k; [k, n]: k rows of n) */
  long long rows = p.b_kmajor ? n : k, cols = p.b_kmajor ? k : n;
  long long matrix = n ? (rows - 1) * (long long)ldb + cols : 0;
  WEFT_ARG(comm, b_stride % 8 == 0 && b_stride >= matrix,
           "b_stride %lld: a multiple of 8 elements, at least one expert's matrix (%lld)",
           b_stride, matrix);
  if (p.m == 0 || n == 0) return WEFT_STATUS_SUCCESS;
  weft_gemm_config_t cfg;
  weft_gemm_config_grouped(&p, routing->tile_rows, &cfg);
  weft_gemm_hooks_t h = {0};
  h.group_expert = routing->tile_expert, h.group_tiles = routing->tiles;
  h.group_rows = routing->tile_rows, h.group_experts = routing->experts;
  h.group_stride = b_stride;
  return weft_gemm_launch(comm, &p, &cfg, &h, a, b, c, (CUstream)stream);
}
