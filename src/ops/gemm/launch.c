/*
 * launch.c — weft_gemm and the GEMM launch that the overlapped ops share (gemm.h): the argument
 * checks, the tensor maps (kernels/gemm/gemm.cu describes each), the launch of the kernel that
 * specialisation.c resolves, and the op's split-K workspace. Shapes: A [m, k] (row stride lda),
 * B [n, k] or [k, n] (ldb), C [m, n] (ldc), all row-major, strides in elements.
 */
#include "gemm.h"

#include <stdlib.h>

#include "../../runtime/module.h"
#include "../../runtime/comm.h"
#include "../../runtime/loader.h"
#include "../ops.h"
#include "common.h"

/* the largest A and B (bytes) whose launch is programmatic (weft_gemm_launch) */
#define GEMM_PDL_MAX_BYTES (24.0 * (1 << 20))

/* ---- checks ---------------------------------------------------------------------------------- */

weft_status_t weft_gemm_problem_check(weft_comm_t *comm, const weft_gemm_problem_t *p,
                                      const void *a, const void *b, const void *c) {
  WEFT_ARG(comm, p->in == WEFT_DTYPE_BF16 || p->in == WEFT_DTYPE_FP16,
           "input dtype %d: the GEMM takes bf16 or fp16 A and B", (int)p->in);
  WEFT_ARG(comm, p->out == WEFT_DTYPE_BF16 || p->out == WEFT_DTYPE_FP16 || p->out == WEFT_DTYPE_FP32,
           "output dtype %d: the GEMM writes bf16, fp16 or fp32 C", (int)p->out);
  WEFT_ARG(comm, p->m >= 0 && p->n >= 0 && p->k >= 0, "negative size (m %d, n %d, k %d)", p->m,
           p->n, p->k);
  if (p->m == 0 || p->n == 0) return WEFT_STATUS_SUCCESS;
  WEFT_ARG(comm, c, "C is NULL");
  WEFT_ARG(comm, p->ldc >= p->n, "ldc %lld is less than n %d", p->ldc, p->n);
  WEFT_ARG(comm, ((uintptr_t)c & 15) == 0, "C %p is not 16-byte aligned", c);
  if (p->k == 0) return WEFT_STATUS_SUCCESS;
  WEFT_ARG(comm, a && b, "A or B is NULL");
  WEFT_ARG(comm, ((uintptr_t)a & 15) == 0 && ((uintptr_t)b & 15) == 0,
           "A %p and B %p must be 16-byte aligned (TMA)", a, b);
  /* k % 8 too: a TMA box may read the rest of the 16-byte unit past the row's end (as its store
   * writes it, c_takes_tma), which would add the padding of A and B into C */
  WEFT_ARG(comm, p->k % 8 == 0, "k %d is not a multiple of 8", p->k);
  WEFT_ARG(comm, p->lda >= p->k, "lda %lld is less than k %d", p->lda, p->k);
  WEFT_ARG(comm, p->ldb >= (p->b_kmajor ? p->k : p->n), "ldb %lld is less than %s %d", p->ldb,
           p->b_kmajor ? "k" : "n", p->b_kmajor ? p->k : p->n);
  /* TMA reads rows whose strides are 16-byte multiples */
  WEFT_ARG(comm, p->lda % 8 == 0 && p->ldb % 8 == 0,
           "lda %lld and ldb %lld must be multiples of 8 elements (16-byte rows for TMA)%s", p->lda,
           p->ldb, p->b_kmajor ? "" : "; with [k, n] B, n itself when B is contiguous");
  return WEFT_STATUS_SUCCESS;
}

/* ---- launch ---------------------------------------------------------------------------------- */

/* A 2-D map (inner x outer, row stride in elements), or 3-D with `ranks` copies of it
 * rank_stride bytes apart (ranks 0: 2-D). Loads promote to 256-byte L2 fills where rows start on
 * 256-byte boundaries, else to 128: a 128-byte box row that straddles two 256-byte blocks
 * fetched both (H200, graphs, cold, same call, two runs: 128x8192x3696 22.9 -> 21.1 us,
 * 128x8192x7392 38.0 -> 36.1, 64x8192x3696 19.6 -> 19.2; the aligned shapes within 1%). */
static weft_status_t encode(weft_comm_t *comm, CUtensorMap *m, const void *ptr, weft_dtype_t t,
                            uint64_t inner, uint64_t outer, long long stride, uint32_t box_in,
                            uint32_t box_out, int ranks, long long rank_stride) {
  CUtensorMapDataType dt = t == WEFT_DTYPE_BF16   ? CU_TENSOR_MAP_DATA_TYPE_BFLOAT16
                           : t == WEFT_DTYPE_FP16 ? CU_TENSOR_MAP_DATA_TYPE_FLOAT16
                                                  : CU_TENSOR_MAP_DATA_TYPE_FLOAT32;
  cuuint64_t dims[3] = {inner, outer, (cuuint64_t)ranks},
             strides[2] = {(cuuint64_t)stride * weft_dtype_size(t), (cuuint64_t)rank_stride};
  CUtensorMapL2promotion promote = strides[0] % 256 ? CU_TENSOR_MAP_L2_PROMOTION_L2_128B
                                                    : CU_TENSOR_MAP_L2_PROMOTION_L2_256B;
  cuuint32_t box[3] = {box_in, box_out, 1}, es[3] = {1, 1, 1};
  WEFT_CU(comm, cuTensorMapEncodeTiled(m, dt, ranks ? 3 : 2, (void *)ptr, dims, strides, box, es,
                                       CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
                                       promote,
                                       CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE));
  return WEFT_STATUS_SUCCESS;
}

weft_status_t weft_gemm_launch(weft_comm_t *comm, const weft_gemm_problem_t *p,
                               const weft_gemm_config_t *cfg, const weft_gemm_hooks_t *h,
                               const void *a, const void *b, void *c, CUstream stream) {
  weft_ops_t *o = comm->ops;
  if (p->m == 0 || p->n == 0) return WEFT_STATUS_SUCCESS;
  WEFT_CHECK(weft_comm_make_current(comm));
  if (p->k == 0) { /* C = 0, as cuBLAS writes with beta = 0 */
    size_t pitch = (size_t)p->ldc * out_size(p->out);
    if (p->out == WEFT_DTYPE_FP32)
      WEFT_CU(comm, cuMemsetD2D32Async((CUdeviceptr)(uintptr_t)c, pitch, 0, (size_t)p->n, (size_t)p->m, stream));
    else
      WEFT_CU(comm, cuMemsetD2D16Async((CUdeviceptr)(uintptr_t)c, pitch, 0, (size_t)p->n, (size_t)p->m, stream));
    return WEFT_STATUS_SUCCESS;
  }
  weft_gemm_config_t chosen, tmp;
  if (!cfg) {
    weft_gemm_config_choose(p, &o->gpu, o->gemm_ws_floats, o->gemm_ws_counters,
                            weft_gemm_hooks_kernel(h), &chosen);
    cfg = &chosen;
  }
  weft_gemm_problem_t swapped;
  if (cfg->swap_ab) { /* from here on the kernel's problem: B's rows as A, A's as [N,K] B */
    if (!cfg->splitk || cfg->bm != 128 || weft_gemm_hooks_kernel(h))
      return WEFT_ERR(comm, WEFT_STATUS_INVALID_ARGUMENT,
                      "gemm: the transposed product (swap_ab) takes the direct-store kernel "
                      "(splitk) on 128-row tiles and no hook but an SM budget");
    p = weft_gemm_kernel_problem(p, cfg, &swapped);
    const void *t = a;
    a = b, b = t;
  }
  int ks = cfg->splitk ? cfg->k_splits : 1;
  if (k_clustered(cfg) &&
      (ks > 8 || ks > wg_n(cfg) / 8 || cfg->cluster != 1 || ks > (p->k + GEMM_BK - 1) / GEMM_BK))
    return WEFT_ERR(comm, WEFT_STATUS_INVALID_ARGUMENT,
                    "gemm: a cluster reduction takes 2 to min(8, %d) splits of at least one "
                    "k-block each, without 2x1 clusters (k_splits %d, k %d)",
                    wg_n(cfg) / 8, ks, p->k);
  /* (a chosen configuration fits by construction; a caller's is checked before it compiles) */
  if (cfg->stages < 1 || cfg->stages > WEFT_GEMM_MAX_STAGES || weft_gemm_smem_bytes(cfg) > WEFT_GEMM_MAX_SMEM)
    return WEFT_ERR(comm, WEFT_STATUS_INVALID_ARGUMENT,
                    "gemm: %d stages of BM=%d BN=%d tiles need %zu bytes of shared memory (at most "
                    "%d stages and %d bytes)",
                    cfg->stages, cfg->bm, cfg->bn, weft_gemm_smem_bytes(cfg), WEFT_GEMM_MAX_STAGES,
                    WEFT_GEMM_MAX_SMEM);
  /* (a_rows loads only A's first rows: the rows past them would be left out of C, unreported) */
  if (cfg->a_rows && (cfg->bm != 64 || p->m > cfg->a_rows ||
                      (cfg->a_rows != 8 && cfg->a_rows != 16 && cfg->a_rows != 32)))
    return WEFT_ERR(comm, WEFT_STATUS_INVALID_ARGUMENT,
                    "gemm: a_rows %d (8, 16 or 32 rows of A a stage) takes BM=64 and m <= a_rows "
                    "(BM=%d, m %d)", cfg->a_rows, cfg->bm, p->m);
  if (!cfg->splitk && wg_n(cfg) * out_size(p->out) < 128)
    return WEFT_ERR(comm, WEFT_STATUS_INVALID_ARGUMENT,
                    "gemm: BM=%d BN=%d gives a warpgroup %d columns, less than one output box of "
                    "the TMA-store epilogue (%d): only the direct-store kernel (splitk) takes them",
                    cfg->bm, cfg->bn, wg_n(cfg), 128 / out_size(p->out));
  if (!cfg->splitk && !c_takes_tma(p))
    return WEFT_ERR(comm, WEFT_STATUS_INVALID_ARGUMENT,
                    "gemm: ldc %lld is no 16-byte row stride: only the direct-store kernel "
                    "(splitk) writes such C", p->ldc);
  long long peer_stride = h && h->notify_counters ? h->scatter_stride : 0; /* the fused scatter's */
  int seg = h ? h->notify_rows : 0, ranks = seg > 0 ? p->m / seg : 0;
  if (peer_stride && cfg->splitk)
    return WEFT_ERR(comm, WEFT_STATUS_INVALID_ARGUMENT,
                    "gemm: the fused scatter needs the TMA-store epilogue, not split-K");
  if (peer_stride && (!h->notify_sys || ranks < 1 || ranks * seg != p->m))
    return WEFT_ERR(comm, WEFT_STATUS_INVALID_ARGUMENT,
                    "gemm: the fused scatter needs .sys notifies and m %d a multiple of the "
                    "segment's %d rows", p->m, seg);
  int ll = h && h->ll_area;
  if (ll && (!cfg->splitk || h->notify_counters || h->wait_signals || !ll_rows(p)))
    return WEFT_ERR(comm, WEFT_STATUS_INVALID_ARGUMENT,
                    "gemm: the LL epilogue needs a split-K configuration, no other hook and C "
                    "contiguous with rows of a multiple of 8 bytes (n %d, ldc %lld)", p->n, p->ldc);
  if (ll) peer_stride = (long long)comm->heap.stride; /* (param 20: the LL copies' distance) */
  int ar = h && h->ar_staging, ctile = cfg->bm * cfg->cluster, ar_cols = ar && h->ar_cols;
  if (ar_cols && (!h->notify_counters || !h->notify_sys || h->scatter_stride || h->order_table ||
                  h->ar_summers || cfg->splitk || tail_split(cfg) || cfg->bm != 128 ||
                  cfg->cluster != 1 || p->m > 128 || p->out == WEFT_DTYPE_FP32 || !h->ar_c ||
                  h->rotate_m < 0 || h->rotate_m >= (p->n + cfg->bn - 1) / cfg->bn))
    return WEFT_ERR(comm, WEFT_STATUS_INVALID_ARGUMENT,
                    "gemm: the two-shot epilogue needs .sys notifies, one row of unclustered "
                    "128-row tiles with TMA stores (m %d, BM=%d, cluster %d, split-K %d), 16-bit "
                    "C and a first tile column within n", p->m, cfg->bm, cfg->cluster, cfg->splitk);
  if (ar && !ar_cols && (!h->notify_counters || !h->notify_sys || h->scatter_stride || cfg->splitk ||
             p->out == WEFT_DTYPE_FP32 || !h->ar_c || h->ar_row0 % ctile || h->ar_rows % ctile ||
             h->ar_rows < 1 || h->ar_row0 + h->ar_rows > p->m || h->ar_chunk_rows < 1 ||
             h->ar_chunk_rows % ctile))
    return WEFT_ERR(comm, WEFT_STATUS_INVALID_ARGUMENT,
                    "gemm: the own segment's epilogue reduction needs .sys notifies, the TMA-store "
                    "epilogue, 16-bit C and rows [%d, +%d) in chunks of %d, whole %d-row cluster "
                    "tiles, within m %d", h->ar_row0, h->ar_rows, h->ar_chunk_rows, ctile, p->m);
  int grouped = h && h->group_expert;
  if (grouped && (!h->group_tiles || h->group_rows < cfg->bm || h->group_rows % cfg->bm ||
                  h->group_experts < 1 || h->group_stride < 1 || cfg->cluster != 1 ||
                  cfg->splitk || tail_split(cfg) || cfg->swap_ab ||
                  (h->wait_signals &&
                   (!h->gather_a || h->wait_rows < 1 || h->a_own || !h->group_order)) ||
                  h->notify_counters || h->order_table || h->ll_area || h->ar_staging))
    return WEFT_ERR(comm, WEFT_STATUS_INVALID_ARGUMENT,
                    "gemm: the grouped GEMM needs an unclustered, unsplit TMA-store configuration "
                    "(cluster %d, split-K %d), no other hook (a wait only with gathered A), %d-row "
                    "plan tiles a multiple of BM=%d and the experts' matrices (%d, %lld elements "
                    "apart)", cfg->cluster,
                    cfg->splitk, h->group_rows, cfg->bm, h->group_experts, h->group_stride);
  /* the grouped epilogues (kernels/gemm/config.cuh, WEFT_GEMM_GATED and WEFT_GEMM_COMBINE) */
  int gated = grouped && h->group_gated, combine = grouped && h->combine_weights;
  int gather = grouped && h->gather_a;
  if ((combine || gather) && (!h->group_entry || h->group_topk < 1 ||
                              (gather && (h->gather_lda < p->k || h->gather_lda % 8 ||
                                          (uintptr_t)h->gather_a % 16))))
    return WEFT_ERR(comm, WEFT_STATUS_INVALID_ARGUMENT,
                    "gemm: the combine and the gathered A need the plan's row -> entry table and "
                    "topk >= 1 (%d); gathered A's tokens 16-byte aligned with rows of a multiple "
                    "of 8 elements, at least k (%lld)", h->group_topk, h->gather_lda);
  int half = wg_n(cfg) / 2;
  if (gated && (combine || p->n % 2 || half * out_size(p->out) < 128 ||
                (!p->b_kmajor && half % 64)))
    return WEFT_ERR(comm, WEFT_STATUS_INVALID_ARGUMENT,
                    "gemm: the gated epilogue needs gate and up halves (n %d even) and warpgroups "
                    "of %d columns whose half fills a staging box (%s B)", p->n, wg_n(cfg),
                    p->b_kmajor ? "[n, k]" : "[k, n]");
  if (combine && (p->n % 8 || p->ldc % 8))
    return WEFT_ERR(comm, WEFT_STATUS_INVALID_ARGUMENT,
                    "gemm: the combine epilogue needs 16-byte rows of C (n %d, ldc %lld multiples "
                    "of 8)", p->n, p->ldc);
  struct weft_gemm_kernel *g;
  int tail, tail_ks;
  WEFT_CHECK(weft_gemm_resolve(comm, p, &cfg, h, &tmp, &g, &tail, &tail_ks));
  int tiles_m = (p->m + cfg->bm - 1) / cfg->bm, tiles_n = (p->n + cfg->bn - 1) / cfg->bn;
  int cs = cluster_size(cfg), clustered = k_clustered(cfg);
  /* (after weft_gemm_resolve: a cluster reduction it turned into the workspace one needs it) */
  if (ks > 1 && !clustered && ((size_t)ks * tiles_m * cfg->bm * tiles_n * cfg->bn > o->gemm_ws_floats ||
                 tiles_m * tiles_n > o->gemm_ws_counters))
    return WEFT_ERR(comm, WEFT_STATUS_INVALID_ARGUMENT,
                    "gemm: %d splits of %dx%d tiles need more than the %zu-float workspace", ks,
                    tiles_m, tiles_n, o->gemm_ws_floats);

  CUtensorMap ta, tb, tc, town, tcall;
  if (p->a_mn_major) /* [k, m] A: boxes of 64 (m) x 64 (k), as [k, n] B's */
    WEFT_CHECK(encode(comm, &ta, a, p->in, (uint64_t)p->m, (uint64_t)p->k, p->lda, 64, GEMM_BK, 0, 0));
  else
    WEFT_CHECK(encode(comm, &ta, a, p->in, (uint64_t)p->k, (uint64_t)p->m, p->lda, GEMM_BK,
                      (uint32_t)a_rows(cfg), 0, 0));
  /* a partial last tile row: a map of its rows only (kernels/gemm/gemm.cu, params 37-38) */
  int a_tail_rows = a_rows(cfg) == cfg->bm && !p->a_mn_major ? (p->m % cfg->bm + 7) / 8 * 8 : 0;
  /* (grouped: the rows in use are whole plan tiles, never a partial tile row) */
  if (a_tail_rows >= cfg->bm || grouped) a_tail_rows = 0;
  CUtensorMap tatail = ta;
  if (a_tail_rows)
    WEFT_CHECK(encode(comm, &tatail, a, p->in, (uint64_t)p->k, (uint64_t)p->m, p->lda, GEMM_BK,
                      (uint32_t)a_tail_rows, 0, 0));
  int own = h && h->wait_signals && h->a_own, own_row0 = own ? h->a_own_row0 : 0,
      own_rows = own ? h->a_own_rows : 0;
  if (own && (own_row0 < 0 || own_rows < 1 || own_rows > p->m - own_row0))
    return WEFT_ERR(comm, WEFT_STATUS_INVALID_ARGUMENT, "gemm: own rows [%d, +%d) outside A's %d",
                    own_row0, own_rows, p->m);
  if (own)
    WEFT_CHECK(encode(comm, &town, h->a_own, p->in, (uint64_t)p->k, (uint64_t)own_rows, p->lda,
                      GEMM_BK, (uint32_t)a_rows(cfg), 0, 0));
  else
    town = ta; /* unused */
  /* grouped: one matrix an expert, a third dimension */
  int experts = grouped ? h->group_experts : 0;
  long long expert_bytes = grouped ? h->group_stride * (long long)weft_dtype_size(p->in) : 0;
  /* (gated: [n, k] B's boxes are a warpgroup's gate or up half: kernels/gemm/mainloop_load.cuh) */
  if (p->b_kmajor)
    WEFT_CHECK(encode(comm, &tb, b, p->in, (uint64_t)p->k, (uint64_t)p->n, p->ldb, GEMM_BK,
                      (uint32_t)(gated ? half : cfg->bn / cfg->cluster), experts, expert_bytes));
  else
    WEFT_CHECK(encode(comm, &tb, b, p->in, (uint64_t)p->n, (uint64_t)p->k, p->ldb, 64, GEMM_BK,
                      experts, expert_bytes));
  if (ar) /* C on every rank, based at rank 0's copy */
    WEFT_CHECK(encode(comm, &tcall, (void *)(uintptr_t)weft_heap_peer(&comm->heap, h->ar_c, 0),
                      p->out, (uint64_t)p->n, (uint64_t)p->m, p->ldc,
                      (uint32_t)(128 / out_size(p->out)), 64, comm->local_world,
                      (long long)comm->heap.stride));
  else
    tcall = ta; /* unused */
  if (cfg->splitk || combine) {
    tc = ta; /* unused */
  } else if (gated) { /* C: the activation's n / 2 columns */
    WEFT_CHECK(encode(comm, &tc, c, p->out, (uint64_t)(p->n / 2), (uint64_t)p->m, p->ldc,
                      (uint32_t)(128 / out_size(p->out)), 64, 0, 0));
  } else if (ar_cols) { /* this rank's slot of every rank's staging, based at rank 0's */
    int width = weft_gemm_ar_cols_width(p->n, cfg->bn, comm->local_world);
    WEFT_CHECK(encode(comm, &tc, (void *)(uintptr_t)weft_heap_peer(&comm->heap, c, 0), p->out,
                      (uint64_t)width, (uint64_t)p->m, width, (uint32_t)(128 / out_size(p->out)),
                      64, comm->local_world, (long long)comm->heap.stride));
  } else if (peer_stride) { /* segments of notify_rows rows, one per rank */
    WEFT_CHECK(encode(comm, &tc, c, p->out, (uint64_t)p->n, (uint64_t)weft_gemm_scatter_rows(seg),
                      p->ldc, (uint32_t)(128 / out_size(p->out)), 64, ranks, peer_stride));
  } else {
    WEFT_CHECK(encode(comm, &tc, c, p->out, (uint64_t)p->n, (uint64_t)p->m, p->ldc,
                      (uint32_t)(128 / out_size(p->out)), 64, 0, 0));
  }

  /* a cluster's work item: a cluster tile, or one split of it unless the splits are the cluster */
  int work = (tiles_m + cfg->cluster - 1) / cfg->cluster * tiles_n * (clustered ? 1 : ks);
  int clusters = grid_clusters(cfg, h, g);
  /* a split tail (g is its kernel): the kernel's k_splits are the tail's */
  if (tail) work += tail * (tail_ks - 1), ks = tail_ks;
  if (clusters > work) clusters = work;

  weft_launch_config_t lc = WEFT_LAUNCH_CONFIG_INIT;
  lc.grid[0] = (unsigned)(clusters * cs);
  lc.block[0] = GEMM_THREADS;
  lc.cluster[0] = (unsigned)cs, lc.cluster[1] = lc.cluster[2] = 1;
  lc.shared_bytes = weft_gemm_smem_bytes(cfg);
  /* Short calls launch for programmatic dependent launch: where the stream's previous kernel lets
   * its dependents start early (weft's GEMM and LL collectives), this grid's CTAs take the SMs it
   * leaves and wait there (the kernel's griddepcontrol.wait), so the launch's latency overlaps that
   * kernel's tail. Back to back on an H200 (graphs, cold, same runs, 2026-11-26,
   * bench/results/2026-11-27-gemm-h200.md, "Short GEMMs launched for programmatic dependent
   * launch"): A and B of up to 22 MB (calls of 6-10 us) 9-15% faster; m = 64-160 from 45 MB and [k,
   * n] 1x13312x16384 5-21% slower (why is not known: not where the early CTAs wait), m = 1 at
   * 58-117 MB 2-5% faster. */
  lc.programmatic = 2.0 * ((double)p->m + p->n) * p->k <= GEMM_PDL_MAX_BYTES;
  /* the grouped kernel reads its plan's row count before griddepcontrol.wait */
  if (grouped) lc.programmatic = 0;
  void *cp = ll ? (void *)h->ll_area : c;
  int M = p->m, N = p->n, K = p->k;
  const int *table = h ? h->order_table : NULL;
  int rot = h ? h->rotate_m : 0;
  const uint64_t *sig = h ? h->wait_signals : NULL;
  int wrows = h && h->wait_rows > 0 ? h->wait_rows : 1;
  unsigned long long expected = h ? h->wait_expected : 0, timeout = comm->timeout_ns;
  uint64_t *notify = h ? h->notify_counters : NULL;
  int nrows = h && h->notify_rows > 0 ? h->notify_rows : 1;
  float *ws = o->gemm_ws;
  unsigned *ctr = o->gemm_counters;
  void *err = (void *)(uintptr_t)comm->error_dev;
  long long ldc = p->ldc;
  /* the LL epilogue's epoch: weft_allreduce's (kernels/reduce.cu, WEFT_EPOCH_REDUCE) */
  const uint64_t *ll_epoch =
      (const uint64_t *)(uintptr_t)comm->heap.mine + WEFT_SYNC_EPOCHS + WEFT_EPOCH_REDUCE;
  unsigned long long ll_slot = ll ? h->ll_slot : 0;
  int rank = comm->local_rank, world = comm->local_world;
  const char *ar_staging = ar ? h->ar_staging : NULL;
  unsigned long long ar_slot = ar ? h->ar_slot : 0;
  const uint64_t *ar_flags = ar ? h->ar_flags : NULL;
  int ar_row0 = ar ? h->ar_row0 : 0, ar_rows = ar ? h->ar_rows : 0;
  int ar_chunk = ar ? h->ar_chunk_rows : 1;
  char *ar_c = ar ? (char *)(uintptr_t)weft_heap_peer(&comm->heap, h->ar_c, 0) : NULL;
  /* param 20 with AR_OWN: the distance between the ranks' C (tc is a plain map there) */
  long long stride = ar ? (long long)comm->heap.stride : peer_stride;
  /* params 39-41, which only the grouped kernel has (the others ignore them) */
  const int *h_group_expert = grouped ? h->group_expert : NULL;
  const int *h_group_tiles = grouped ? h->group_tiles : NULL;
  int group_rows = grouped ? h->group_rows : 0;
  /* params 42-47, the combine epilogue's, the gathered A's and its wait's (passed to every
   * kernel) */
  const int *g_entry = combine || gather ? h->group_entry : NULL;
  const void *comb_weights = combine ? h->combine_weights : NULL;
  int g_topk = combine || gather ? h->group_topk : 0;
  const void *g_a = gather ? h->gather_a : NULL;
  long long g_lda = gather ? h->gather_lda : 0;
  const int *g_order = grouped && h->wait_signals ? h->group_order : NULL; /* param 47 */
  void *args[] = {&ta,    &tb,       &tc,      &cp,     &M,     &N,  &K,   &table, &rot, &sig, &wrows,
                  &expected, &timeout, &notify, &nrows, &ws, &ctr, &ks,   &err,   &ldc, &stride,
                  &tail, &ll_epoch, &ll_slot, &rank, &world, &town, &own_row0, &own_rows,
                  &tcall, &ar_staging, &ar_slot, &ar_flags, &ar_row0, &ar_rows, &ar_chunk, &ar_c,
                  &tatail, &a_tail_rows, (void *)&h_group_expert, (void *)&h_group_tiles,
                  &group_rows, (void *)&g_entry, (void *)&comb_weights, &g_topk, (void *)&g_a,
                  &g_lda, (void *)&g_order};
  WEFT_TRACE("gemm %dx%dx%d: %dx%d tiles, %d stages, cluster %d, group %d, split-K %d (%d), tail %d, "
             "swap %d, %u CTAs, hooks: wait %d notify %d scatter %d ar %d", M, N, K, cfg->bm, cfg->bn,
             cfg->stages, cfg->cluster, cfg->group, cfg->splitk, ks, tail, cfg->swap_ab, lc.grid[0],
             sig != NULL, notify != NULL, peer_stride != 0 && !ll, ar);
  return weft_kernel_launch(g->kernel, &lc, args, (weft_stream_t)stream);
}

/* ---- the op ------------------------------------------------------------------------------------ */

weft_status_t weft_gemm_init(weft_comm_t *comm) {
  weft_ops_t *o = comm->ops;
  pthread_mutex_init(&o->gemm_lock, NULL);
  o->gemm_ws_counters = WEFT_GEMM_WS_TILES_PER_SM * o->gpu.sms;
  o->gemm_ws_floats = (size_t)o->gemm_ws_counters * 128 * 128;
  CUdeviceptr ws, ctr;
  WEFT_CU(comm, cuMemAlloc(&ws, o->gemm_ws_floats * sizeof(float)));
  o->gemm_ws = (float *)(uintptr_t)ws;
  WEFT_CU(comm, cuMemAlloc(&ctr, (size_t)o->gemm_ws_counters * sizeof(unsigned)));
  o->gemm_counters = (unsigned *)(uintptr_t)ctr;
  /* the kernel leaves every counter it uses at zero again */
  WEFT_CU(comm, cuMemsetD8(ctr, 0, (size_t)o->gemm_ws_counters * sizeof(unsigned)));
  return WEFT_STATUS_SUCCESS;
}

void weft_gemm_destroy(weft_comm_t *comm) {
  weft_ops_t *o = comm->ops;
  for (struct weft_gemm_kernel *g = o->gemm_kernels, *next; g; g = next) {
    next = g->next;
    weft_module_unload(g->module);
    free(g);
  }
  o->gemm_kernels = NULL;
  if (o->gemm_ws) weft_cu.cuMemFree((CUdeviceptr)(uintptr_t)o->gemm_ws);
  if (o->gemm_counters) weft_cu.cuMemFree((CUdeviceptr)(uintptr_t)o->gemm_counters);
  o->gemm_ws = NULL;
  o->gemm_counters = NULL;
  pthread_mutex_destroy(&o->gemm_lock);
}

weft_status_t weft_gemm(weft_comm_t *comm, const void *a, int lda, const void *b, int ldb, void *c,
                        int ldc, int m, int n, int k, weft_dtype_t in, weft_dtype_t out,
                        weft_gemm_layout_t layout, weft_stream_t stream) {
  WEFT_CHECK(weft_comm_check(comm));
  WEFT_ARG(comm, layout == WEFT_GEMM_LAYOUT_NK || layout == WEFT_GEMM_LAYOUT_KN,
           "layout %d is not a weft_gemm_layout_t", (int)layout);
  weft_gemm_problem_t p = {m, n, k, lda, ldb, ldc, in, out, layout == WEFT_GEMM_LAYOUT_NK, 0};
  WEFT_CHECK(weft_gemm_problem_check(comm, &p, a, b, c));
  return weft_gemm_launch(comm, &p, NULL, NULL, a, b, c, (CUstream)stream);
}
