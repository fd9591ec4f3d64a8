/*
 * tp.h — what the tensor-parallel GEMM ops share: GEMM + AllReduce (gemm_ar.c) is GEMM +
 * ReduceScatter (gemm_rs.c) with the reduced segment stored into every rank's c, so it takes
 * GEMM + ReduceScatter's argument checks, workspace and copy-engine form from gemm_rs.c, and
 * GEMM + ReduceScatter sizes its workspace for GEMM + AllReduce's SM form (gemm_ar.c); AllGather
 * + MoE (ag_moe.c) takes AllGather + GEMM's copy-engine gather (ag_gemm.c). Each includes this
 * header and nothing of the others'.
 */
#ifndef WEFT_TP_H
#define WEFT_TP_H

#include <cuda.h>

#include "../internal.h"
#include "gemm/gemm.h"

/* The check of weft_gemm_rs's arguments (gemm_rs.c), which weft_gemm_ar's are too. It fills p (C =
 * the partial product in the workspace, ldc = n) after checking every argument of weft_gemm_rs
 * (op names the public call in messages, algos[0..nalgos) its algorithms besides AUTO; c, which
 * must not overlap the workspace, holds all m rows when c_all_rows, i.e. for weft_gemm_ar, else
 * m / world). */
weft_status_t weft_gemm_rs_check(weft_comm_t *comm, const void *a, int lda, const void *b, int ldb,
                                 const void *c, const void *workspace, int m, int n, int k,
                                 weft_dtype_t in, weft_dtype_t out, weft_gemm_layout_t layout,
                                 weft_algo_t algo, const weft_algo_t *algos, int nalgos,
                                 int c_all_rows, const char *op, weft_gemm_problem_t *p);
/* Bytes of workspace weft_gemm_ar's SM form needs (gemm_ar.c); weft_gemm_rs_workspace_size
 * returns at least this. */
size_t weft_gemm_ar_workspace_bytes(int world, int m, int n, weft_dtype_t out);
struct weft_ops_plan;
/* GEMM + AllReduce's copy-engine form (weft_gemm_ar, gemm_ar.c; c all m rows, symmetric): the
 * overlapped GEMM + ReduceScatter whose reduction stores this rank's segment into every rank's c
 * (gemm_rs.c's file comment). 0 in *done where the problem cannot take it (a split-K
 * configuration, too many counters), nothing enqueued then. */
weft_status_t weft_gemm_rs_allreduce(weft_comm_t *comm, const weft_gemm_problem_t *p,
                                     const struct weft_ops_plan *plan, const void *a, const void *b,
                                     void *c, void *workspace, CUstream stream, int *done);
/* A checked call's arguments, which the autotuner's trials run again (gemm_rs.c, gemm_ar.c). */
typedef struct weft_gemm_rs_call {
  const weft_gemm_problem_t *p;
  const void *a, *b;
  void *c, *workspace;
} weft_gemm_rs_call_t;

/* AllGather + GEMM's copy-engine form (ag_gemm.c, its file comment), which AllGather + MoE
 * (ag_moe.c) runs as well: the stream barrier; this rank's rows (bytes at a) into its slot of ag
 * (symmetric) and its signal set on stream, unless own (the GEMM reads them from a: they are
 * copied last on the side stream); on the side stream the pushes to the peers, each followed by
 * this rank's signal on the receiver (comm->ops->ag_gemm_sig); launch(comm, ctx, stream), the
 * GEMM that waits on the signals; the join and the signals back to 0. */
/* The checks of AllGather + GEMM's and AllGather + MoE's gathered buffer (names as the public
 * calls name them): for bytes > 0, a and ag not NULL, ag's world * bytes in the symmetric heap,
 * and a either this rank's slot of ag (in place) or apart from ag. */
weft_status_t weft_ag_check(weft_comm_t *comm, const char *a_name, const char *a,
                            const char *ag_name, const char *ag, size_t bytes);
typedef weft_status_t (*weft_ag_launch_fn)(weft_comm_t *comm, const void *ctx, CUstream stream);
weft_status_t weft_ag_overlapped(weft_comm_t *comm, const char *a, char *ag, size_t bytes,
                                 int own, weft_ag_launch_fn launch, const void *ctx,
                                 CUstream stream);

#endif /* WEFT_TP_H */
