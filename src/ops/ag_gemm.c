/*
 * ag_gemm.c — weft_ag_gemm, AllGather + GEMM (weft.h): argument checks, the choice between the
 * overlapped and the sequential form, and the launches. The kernel is kernels/gemm/gemm.cu through
 * the GEMM launcher (gemm.h) with its per-tile wait. Shapes: a [m, k] per rank, a_gathered
 * [world * m, k] symmetric, b [n, k] or [k, n] (row stride ldb), c [world * m, n] (ldc).
 *
 * One overlapped call, on the caller's stream and the side stream:
 *   stream barrier: every rank finished its previous call, so no GEMM still reads the slots that
 *     are about to be overwritten, and every rank's signals are back to 0;
 *   fork; on the side stream the pushes of the rows to rank - 1, rank - 2, ... (weft_swizzle_ag_push_peer:
 *     at each step every rank sends to a different peer, so every link carries one copy), each
 *     followed by signal[rank] = 1 on the receiver (a stream write after a system-scope fence:
 *     the rows are visible before the signal is);
 *   on the caller's stream, the GEMM with HOOK_WAIT (signal s covers rows [s * m, (s + 1) * m)),
 *     in the tile order of weft_swizzle_ag_row with arrivals rank, rank + 1, rank + 2, ...;
 *     its tiles of this rank's rows read them from a (A_OWN: no wait, and no copy before the
 *     GEMM) where m is a multiple of the tile's rows, the side stream copying them into the own
 *     slot after the pushes; otherwise (or in place) they are copied there on the caller's
 *     stream before the GEMM, and signal[rank] set;
 *   join; this rank's signals back to 0 (nobody writes them before the next call's barrier).
 * The signals are written by stream memory operations, not by kernels: the GEMM holds every SM,
 * so a signalling kernel could not start until the GEMM ended, and the GEMM would wait for it.
 */
#include "ops.h"

#include <string.h>

#include "../runtime/module.h"
#include "../runtime/comm.h"
#include "../runtime/loader.h"
#include "gemm/gemm.h"
#include "kernels/swizzle.h"
#include "tp.h"

weft_status_t weft_ag_gemm_init(weft_comm_t *comm) {
  return weft_malloc(comm, WEFT_MAX_LOCAL_RANKS * sizeof(uint64_t),
                     (void **)&comm->ops->ag_gemm_sig);
}

void weft_ag_gemm_destroy(weft_comm_t *comm) { (void)comm; /* the signals go with the heap */ }

weft_status_t weft_ag_check(weft_comm_t *comm, const char *a_name, const char *a,
                            const char *ag_name, const char *ag, size_t bytes) {
  if (!bytes) return WEFT_STATUS_SUCCESS;
  size_t all = bytes * (size_t)comm->local_world;
  WEFT_ARG(comm, a && ag, "%s or %s is NULL", a_name, ag_name);
  WEFT_ARG(comm, weft_heap_contains(&comm->heap, ag, all),
           "%s %p (+%zu bytes) must lie in the symmetric heap (weft_malloc)", ag_name,
           (const void *)ag, all);
  const char *slot = ag + (size_t)comm->local_rank * bytes;
  WEFT_ARG(comm, a == slot || a + bytes <= ag || a >= ag + all,
           "%s overlaps %s without being this rank's rows of it (in place)", a_name, ag_name);
  return WEFT_STATUS_SUCCESS;
}

weft_status_t weft_ag_overlapped(weft_comm_t *comm, const char *a, char *ag, size_t bytes,
                                 int own, weft_ag_launch_fn launch, const void *ctx,
                                 CUstream stream) {
  weft_ops_t *o = comm->ops;
  int me = comm->local_rank, world = comm->local_world;
  char *slot = ag + (size_t)me * bytes;
  CUstream side = o->side;
  WEFT_CHECK(weft_stream_barrier(comm, (weft_stream_t)stream));
  /* Otherwise the own rows before the GEMM, in stream order: a copy within one GPU may be done
   * by a kernel, which could not start beside the GEMM that waits for it. */
  if (!own) {
    if (a != slot) WEFT_CU(comm, cuMemcpyAsync((CUdeviceptr)(uintptr_t)slot, (CUdeviceptr)(uintptr_t)a, bytes, stream));
    WEFT_CU(comm, cuStreamWriteValue64(stream, (CUdeviceptr)(uintptr_t)(o->ag_gemm_sig + me), 1,
                                       CU_STREAM_WRITE_VALUE_DEFAULT));
  }
  WEFT_CHECK(weft_ops_fork(comm, stream));
  for (int s = 1; s < world; s++) {
    int q = weft_swizzle_ag_push_peer(s, me, world, 1);
    WEFT_CU(comm, cuMemcpyAsync(weft_heap_peer(&comm->heap, slot, q), (CUdeviceptr)(uintptr_t)a, bytes, side));
    WEFT_CU(comm, cuStreamWriteValue64(side, weft_heap_peer(&comm->heap, o->ag_gemm_sig + me, q), 1,
                                       CU_STREAM_WRITE_VALUE_DEFAULT));
  }
  /* (last: nothing waits for it but the join, whether an engine or a kernel copies it) */
  if (own) WEFT_CU(comm, cuMemcpyAsync((CUdeviceptr)(uintptr_t)slot, (CUdeviceptr)(uintptr_t)a, bytes, side));
  WEFT_CHECK(launch(comm, ctx, stream));
  WEFT_CHECK(weft_ops_join(comm, stream));
  WEFT_CU(comm, cuMemsetD8Async((CUdeviceptr)(uintptr_t)o->ag_gemm_sig, 0,
                                (size_t)world * sizeof(uint64_t), stream));
  return WEFT_STATUS_SUCCESS;
}

/* The overlapped call's GEMM (a weft_ag_launch_fn) */
typedef struct ag_gemm_launch {
  const weft_gemm_problem_t *p;
  const weft_gemm_config_t *cfg;
  const weft_gemm_hooks_t *h;
  const char *ag;
  const void *b;
  void *c;
} ag_gemm_launch_t;

static weft_status_t ag_gemm_launch(weft_comm_t *comm, const void *ctx, CUstream stream) {
  const ag_gemm_launch_t *x = ctx;
  return weft_gemm_launch(comm, x->p, x->cfg, x->h, x->ag, x->b, x->c, stream);
}

static weft_status_t ag_gemm_overlapped(weft_comm_t *comm, const weft_gemm_problem_t *p,
                                        const weft_ops_plan_t *plan, int m, const char *a, char *ag,
                                        const void *b, void *c, CUstream stream) {
  weft_ops_t *o = comm->ops;
  int me = comm->local_rank, world = comm->local_world;
  size_t bytes = (size_t)m * (size_t)p->k * weft_dtype_size(p->in);
  char *slot = ag + (size_t)me * bytes;
  weft_gemm_config_t cfg;
  weft_ops_gemm_config(comm, p, plan, &cfg);
  weft_gemm_hooks_t h;
  memset(&h, 0, sizeof h);
  /* With arrivals rank, rank + 1, ... the order is a rotation of the cluster tile-rows, which
   * the kernel's grouped order computes from its first tile-row. */
  h.rotate_m = weft_swizzle_ag_row(0, me, world, m, cfg.bm * cfg.cluster, 1);
  h.wait_signals = o->ag_gemm_sig;
  h.wait_rows = m;
  h.wait_expected = 1;
  /* The GEMM reads the own rows from a where no tile straddles them (a tile of them would
   * otherwise wait on the own slot's copy, queued behind the pushes) and a takes a tensor map
   * (16-byte aligned: a copy takes any a, a map would fail only once the pushes are queued).
   * Before, their copy into the slot preceded the GEMM: 32 MiB at 8192x29568x8192 on 4 ranks. */
  int own = a != slot && m % cfg.bm == 0 && (uintptr_t)a % 16 == 0;
  if (own) h.a_own = a, h.a_own_row0 = me * m, h.a_own_rows = m;
  WEFT_CHECK(weft_gemm_prepare(comm, p, &cfg, &h)); /* before anything it waits for is queued */
  ag_gemm_launch_t x = {p, &cfg, &h, ag, b, c};
  return weft_ag_overlapped(comm, a, ag, bytes, own, ag_gemm_launch, &x, stream);
}

/* One call's arguments (checked), for the autotuner's trials. */
typedef struct ag_gemm_args {
  const weft_gemm_problem_t *p;
  int m; /* rows per rank */
  const char *a;
  char *ag;
  const void *b;
  void *c;
} ag_gemm_args_t;

/* One call as `plan` (a weft_ops_run_t: the autotuner's trials call it too). */
static weft_status_t ag_gemm_run(weft_comm_t *comm, const void *ctx, const weft_ops_plan_t *plan,
                                 CUstream stream) {
  const ag_gemm_args_t *x = ctx;
  const weft_gemm_problem_t *p = x->p;
  weft_algo_t algo;
  WEFT_CHECK(weft_ops_form(comm, plan, "ag_gemm", p, 0, &algo));
  if (algo == WEFT_ALGO_COPY_ENGINE)
    return ag_gemm_overlapped(comm, p, plan, x->m, x->a, x->ag, x->b, x->c, stream);
  size_t bytes = (size_t)x->m * (size_t)p->k * weft_dtype_size(p->in);
  WEFT_CHECK(weft_allgather(comm, x->a, x->ag, bytes, WEFT_DTYPE_UINT8, WEFT_ALGO_AUTO,
                            (weft_stream_t)stream));
  return weft_gemm_launch(comm, p, NULL, NULL, x->ag, x->b, x->c, stream);
}

weft_status_t weft_ag_gemm(weft_comm_t *comm, const void *a, void *a_gathered, const void *b,
                           int ldb, void *c, int ldc, int m, int n, int k, weft_dtype_t in,
                           weft_dtype_t out, weft_gemm_layout_t layout, weft_algo_t algo,
                           weft_stream_t stream) {
  WEFT_CHECK(weft_comm_check(comm));
  WEFT_ARG(comm, layout == WEFT_GEMM_LAYOUT_NK || layout == WEFT_GEMM_LAYOUT_KN,
           "layout %d is not a weft_gemm_layout_t", (int)layout);
  WEFT_ARG(comm, algo == WEFT_ALGO_AUTO || algo == WEFT_ALGO_COPY_ENGINE || algo == WEFT_ALGO_SEQUENTIAL,
           "algo %d is not one of ag_gemm's (auto, copy engine, sequential)", (int)algo);
  if (comm->world != comm->local_world)
    return WEFT_ERR(comm, WEFT_STATUS_NOT_SUPPORTED,
                    "ag_gemm runs over the ranks of one node (world %d, %d on this node)",
                    comm->world, comm->local_world);
  int world = comm->local_world;
  WEFT_ARG(comm, m >= 0 && (long long)m * world <= 0x7fffffff, "m %d (x %d ranks) out of range", m, world);
  weft_gemm_problem_t p = {m * world, n, k, k, ldb, ldc, in, out, layout == WEFT_GEMM_LAYOUT_NK, 0};
  WEFT_CHECK(weft_gemm_problem_check(comm, &p, a_gathered, b, c));
  if (m == 0) return WEFT_STATUS_SUCCESS;
  size_t bytes = (size_t)m * (size_t)k * weft_dtype_size(in);
  char *ag = a_gathered;
  const char *mine = a;
  /* (n == 0 still gathers A) */
  WEFT_CHECK(weft_ag_check(comm, "a", mine, "a_gathered", ag, bytes));
  WEFT_CHECK(weft_comm_make_current(comm));
  static const weft_algo_t algos[] = {WEFT_ALGO_COPY_ENGINE, WEFT_ALGO_SEQUENTIAL};
  ag_gemm_args_t x = {&p, m, mine, ag, b, c};
  weft_ops_plan_t plan;
  WEFT_CHECK(weft_ops_plan(comm, algo, "ag_gemm", &p, algos, 2, 0, ag_gemm_run, &x, (CUstream)stream, &plan));
  return ag_gemm_run(comm, &x, &plan, (CUstream)stream);
}
