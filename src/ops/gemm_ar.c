/*
 * gemm_ar.c — weft_gemm_ar, GEMM + AllReduce (weft.h), built from the GEMM + ReduceScatter of
 * gemm_rs.c and the collectives: a two-shot AllReduce whose ReduceScatter half hides behind the
 * GEMM (each rank's reduced rows land in its rows of the symmetric c), followed by an AllGather of
 * those rows in place (m a multiple of world); or, sequentially, the GEMM into the workspace and weft_allreduce. Shapes:
 * a [m, k] (lda), b [n, k] or [k, n] (ldb), c [m, n] contiguous and symmetric.
 */
#include "ops.h"

#include "../runtime/comm.h"
#include "gemm.h"

weft_status_t weft_gemm_ar(weft_comm_t *comm, const void *a, int lda, const void *b, int ldb,
                           void *c, void *workspace, int m, int n, int k, weft_dtype_t in,
                           weft_dtype_t out, weft_gemm_layout_t layout, weft_algo_t algo,
                           weft_stream_t stream) {
  weft_gemm_problem_t p;
  WEFT_CHECK(weft_gemm_rs_check(comm, a, lda, b, ldb, c, workspace, m, n, k, in, out, layout, algo,
                                1, "gemm_ar", &p));
  if (m == 0 || n == 0) return WEFT_STATUS_SUCCESS;
  int world = comm->local_world;
  size_t count = (size_t)m * (size_t)n, seg = count / (size_t)world, es = weft_dtype_size(out);
  WEFT_ARG(comm, weft_heap_contains(&comm->heap, c, count * es),
           "c %p (+%zu bytes) must lie in the symmetric heap (weft_malloc)", c, count * es);
  WEFT_CHECK(weft_comm_make_current(comm));
  algo = weft_ops_overlap_algo(algo, m, world);
  if (algo == WEFT_ALGO_SEQUENTIAL || k == 0 || m % world) {
    WEFT_CHECK(weft_gemm_launch(comm, &p, NULL, NULL, a, b, workspace, (CUstream)stream));
    return weft_allreduce(comm, workspace, c, count, out, WEFT_RED_OP_SUM, WEFT_ALGO_AUTO, stream);
  }
  char *mine = (char *)c + (size_t)comm->local_rank * seg * es;
  WEFT_CHECK(weft_gemm_rs_enqueue(comm, &p, a, b, mine, workspace, WEFT_ALGO_COPY_ENGINE, (CUstream)stream));
  return weft_allgather(comm, mine, c, seg * es, WEFT_DTYPE_UINT8, WEFT_ALGO_AUTO, stream);
}
