/*
 * gemm_rs.c — weft_gemm_rs, GEMM + ReduceScatter (weft.h): argument checks, the choice between
 * the overlapped and the sequential form, and the launches of kernels/gemm/gemm.cu (through the GEMM
 * launcher, with its per-tile notify) and kernels/gemm_rs.cu. weft_gemm_ar (gemm_ar.c) reuses
 * both. Shapes: a [m, k] (lda), b [n, k] or [k, n] (ldb), c [m / world, n] contiguous; segment q
 * is rows [q * m / world, (q + 1) * m / world).
 *
 * Workspace (symmetric, the caller's): the partial product [m, n] (contiguous, out dtype), then
 * world staging slots of slot_bytes: slot p of rank q receives rank p's partial of segment q.
 *
 * One overlapped call, on the caller's stream and the side stream (Triton-distributed, §3.3,
 * Algorithm 3):
 *   stream barrier: every rank finished its previous call (its staging slots are reduced, its
 *     arrival flags are back to 0);
 *   fork; on the side stream, for the segments q = rank + 1, rank + 2, ... (weft_swizzle_rs_chunk):
 *     wait (cuStreamWaitValue64) until the GEMM's stored-tile counters covering segment q
 *     reach their counts, copy the segment into slot `rank` of rank q's staging, set rank q's
 *     arrival flag of this rank to 1 (a stream write after a system-scope fence);
 *   on the caller's stream, the GEMM (HOOK_NOTIFY, .sys release: the copy engine reads what it
 *     counted) in the order of weft_swizzle_rs_row (segment rank + 1 first, its own last), then
 *     weft_gemm_rs_reduce (waits for every peer's flag, bounded);
 *   join; the flags and counters back to 0.
 * The side stream's waits are stream memory operations without a deadline: they wait for this
 * GPU's own GEMM only, which waits for nothing (a GEMM that fails fails the context, and with it
 * the waits); the only cross-rank wait, the reduction's, is a bounded kernel wait. Nothing may be
 * a kernel on the side stream while the GEMM holds every SM.
 *
 * GEMM + AllReduce's copy-engine form (weft_gemm_rs_allreduce, for gemm_ar.c) is the same call
 * with c holding every row: the reduction stores this rank's segment into every rank's c (the
 * AllGather fused into its stores, kernels/gemm_rs.cu) and ends with a handshake. Where the own
 * segment's tiles are whole cluster tiles and C is 16-bit, the GEMM's epilogue does that
 * reduction instead, tile by tile as the segment (computed last) is computed: the peers'
 * partials are copied in chunks of a raster group's rows (two or more a segment), each counted
 * on the arrival flag as it lands, an own tile waits for its chunk, adds the partials to its
 * accumulators and stores the sums into every rank's c (kernels/gemm/config.cuh, WEFT_GEMM_AR_OWN); the
 * kernel after the GEMM is then only the handshake.
 *
 * The fused-scatter form (WEFT_ALGO_SM; Triton-distributed, §3.6, "Intra-node ReduceScatter with
 * Fusion"): no copy engine and no partial product here. The GEMM's epilogue (kernels/gemm/config.cuh,
 * WEFT_GEMM_SCATTER) stores each sub-tile of segment q straight into slot `rank` of rank q's
 * staging, in the same order, and adds 1 to rank q's arrival flag of this rank once the stores are
 * complete (.sys release); the reduction then waits for each peer's flag to count the whole
 * segment. Stream barrier, GEMM, reduction, flags back to 0: one stream, nothing to join.
 */
#include "ops.h"

#include <stdio.h>
#include <string.h>

#include "../runtime/module.h"
#include "../runtime/comm.h"
#include "../runtime/loader.h"
#include "gemm/gemm.h"
#include "tp.h"
#include "kernels/swizzle.h"

#define GEMM_RS_COUNTERS 4096 /* stored-tile counters: 64-row blocks of m <= 262144 */
#define GEMM_RS_THREADS 512
#define GEMM_RS_BYTES_PER_BLOCK (16u << 10) /* reduction grid: about this much output per block */

weft_status_t weft_gemm_rs_init(weft_comm_t *comm) {
  weft_ops_t *o = comm->ops;
  WEFT_CHECK(weft_module_load_embedded(comm, "kernels/gemm_rs.cu", NULL, 0, &o->gemm_rs));
  WEFT_CHECK(weft_module_get_kernel(o->gemm_rs, "weft_gemm_rs_reduce", &o->gemm_rs_reduce));
  o->gemm_rs_counters = GEMM_RS_COUNTERS;
  CUdeviceptr ctr;
  WEFT_CU(comm, cuMemAlloc(&ctr, GEMM_RS_COUNTERS * sizeof(uint64_t)));
  o->gemm_rs_ctr = (uint64_t *)(uintptr_t)ctr;
  WEFT_CU(comm, cuMemsetD8(ctr, 0, GEMM_RS_COUNTERS * sizeof(uint64_t)));
  return weft_malloc(comm, WEFT_MAX_LOCAL_RANKS * sizeof(uint64_t), (void **)&o->gemm_rs_flags);
}

void weft_gemm_rs_destroy(weft_comm_t *comm) {
  weft_ops_t *o = comm->ops;
  if (o->gemm_rs_ctr) weft_cu.cuMemFree((CUdeviceptr)(uintptr_t)o->gemm_rs_ctr);
  o->gemm_rs_ctr = NULL;
  if (o->gemm_rs) weft_module_unload(o->gemm_rs); /* the flags go with the heap */
}

static size_t round16(size_t v) { return (v + 15) & ~(size_t)15; }

/* The workspace's layout: the partial product's bytes (rounded to 16) and one staging slot's:
 * room for a segment at any offset mod 16 (the copy-engine form) and for the 64-row blocks that
 * touch it (the fused scatter, weft_gemm_scatter_rows). */
static void gemm_rs_layout(int world, int m, int n, weft_dtype_t out, size_t *partial, size_t *slot) {
  size_t es = weft_dtype_size(out), row = (size_t)n * es, seg = (size_t)(m / world) * row,
         blocks = (size_t)weft_gemm_scatter_rows(m / world) * row;
  *partial = round16((size_t)m * row);
  *slot = round16(seg > blocks ? seg : blocks) + 16;
}

weft_status_t weft_gemm_rs_workspace_size(weft_comm_t *comm, int m, int n, weft_dtype_t out,
                                          size_t *bytes) {
  WEFT_CHECK(weft_comm_check(comm));
  WEFT_ARG(comm, bytes, "bytes is NULL");
  WEFT_ARG(comm, m >= 0 && n >= 0, "negative size (m %d, n %d)", m, n);
  WEFT_ARG(comm, out == WEFT_DTYPE_BF16 || out == WEFT_DTYPE_FP16 || out == WEFT_DTYPE_FP32,
           "output dtype %d: bf16, fp16 or fp32", (int)out);
  size_t partial, slot, ar = weft_gemm_ar_workspace_bytes(comm->local_world, m, n, out);
  gemm_rs_layout(comm->local_world, m, n, out, &partial, &slot);
  *bytes = partial + (size_t)comm->local_world * slot;
  if (*bytes < ar) *bytes = ar;
  return WEFT_STATUS_SUCCESS;
}

weft_status_t weft_gemm_rs_check(weft_comm_t *comm, const void *a, int lda, const void *b, int ldb,
                                 const void *c, const void *workspace, int m, int n, int k,
                                 weft_dtype_t in, weft_dtype_t out, weft_gemm_layout_t layout,
                                 weft_algo_t algo, const weft_algo_t *algos, int nalgos,
                                 int c_all_rows, const char *op, weft_gemm_problem_t *p) {
  WEFT_CHECK(weft_comm_check(comm));
  WEFT_ARG(comm, layout == WEFT_GEMM_LAYOUT_NK || layout == WEFT_GEMM_LAYOUT_KN,
           "layout %d is not a weft_gemm_layout_t", (int)layout);
  int known = algo == WEFT_ALGO_AUTO;
  char names[64] = "auto";
  for (int i = 0; i < nalgos; i++) {
    known |= algo == algos[i];
    size_t len = strlen(names);
    snprintf(names + len, sizeof names - len, ", %s", weft_ops_algo_name(algos[i]));
  }
  WEFT_ARG(comm, known, "algo %d is not one of %s's (%s)", (int)algo, op, names);
  if (comm->world != comm->local_world)
    return WEFT_ERR(comm, WEFT_STATUS_NOT_SUPPORTED,
                    "%s runs over the ranks of one node (world %d, %d on this node)", op,
                    comm->world, comm->local_world);
  WEFT_ARG(comm, m >= 0 && (c_all_rows || m % comm->local_world == 0),
           "m %d is not a multiple of the %d ranks", m, comm->local_world);
  *p = (weft_gemm_problem_t){m, n, k, lda, ldb, n, in, out, layout == WEFT_GEMM_LAYOUT_NK, 0};
  WEFT_CHECK(weft_gemm_problem_check(comm, p, a, b, workspace));
  if (m == 0 || n == 0) return WEFT_STATUS_SUCCESS;
  WEFT_ARG(comm, c, "c is NULL");
  size_t need;
  WEFT_CHECK(weft_gemm_rs_workspace_size(comm, m, n, out, &need));
  WEFT_ARG(comm, weft_heap_contains(&comm->heap, workspace, need),
           "workspace %p (+%zu bytes, weft_gemm_rs_workspace_size) must lie in the symmetric heap "
           "(weft_malloc)", workspace, need);
  const char *w = workspace, *cc = c;
  size_t cbytes = (size_t)(c_all_rows ? m : m / comm->local_world) * (size_t)n * weft_dtype_size(out);
  WEFT_ARG(comm, cc + cbytes <= w || cc >= w + need, "c overlaps the workspace");
  return WEFT_STATUS_SUCCESS;
}

/* The reduction after the GEMM (kernels/gemm_rs.cu): c = own + every peer's slot (the segment
 * at byte `offset` of each), once each peer's arrival flag here reaches `expected`; push: into
 * every rank's c (the same symmetric address). sum 0 (with push): no sums, only the handshake
 * that ends the call (the GEMM's epilogue stored them: WEFT_GEMM_AR_OWN). */
static weft_status_t gemm_rs_reduce(weft_comm_t *comm, const weft_gemm_problem_t *p,
                                    const char *own, char *staging, size_t slot, size_t offset,
                                    void *c, uint64_t expected, int push, int sum, CUstream stream) {
  weft_ops_t *o = comm->ops;
  size_t seg = sum ? (size_t)(p->m / comm->local_world) * (size_t)p->n * weft_dtype_size(p->out) : 0;
  weft_launch_config_t lc = WEFT_LAUNCH_CONFIG_INIT;
  unsigned long long blocks = (seg + GEMM_RS_BYTES_PER_BLOCK - 1) / GEMM_RS_BYTES_PER_BLOCK;
  lc.grid[0] = weft_ops_gpu_grid(&o->gpu, blocks);
  lc.block[0] = GEMM_RS_THREADS;
  unsigned long long slot_bytes = slot, off = offset, expect = expected,
                     count = seg / weft_dtype_size(p->out);
  int dt = (int)p->out;
  void *args[] = {(void *)&own, &staging, &slot_bytes, &off, &c, &count, &dt, &o->gemm_rs_flags, &expect, &push};
  return weft_kernel_launch(o->gemm_rs_reduce, &lc, args, (weft_stream_t)stream);
}

/* After a call: this rank's arrival flags and the first `counters` stored-tile counters back to
 * 0, in stream order (no peer adds to them before the next call's barrier). */
static weft_status_t gemm_rs_reset(weft_comm_t *comm, int counters, CUstream stream) {
  weft_ops_t *o = comm->ops;
  WEFT_CU(comm, cuMemsetD8Async((CUdeviceptr)(uintptr_t)o->gemm_rs_flags, 0,
                                (size_t)comm->local_world * sizeof(uint64_t), stream));
  if (counters)
    WEFT_CU(comm, cuMemsetD8Async((CUdeviceptr)(uintptr_t)o->gemm_rs_ctr, 0,
                                  (size_t)counters * sizeof(uint64_t), stream));
  return WEFT_STATUS_SUCCESS;
}

/* GEMM + AllReduce's summers from k per rank >= this x the world (gemm_rs_overlapped): an own
 * sub-tile sums world partials, and a 128 x 256 tile takes ~165 us at k = 13312, ~90 us at 7168
 * on an H200 */
#define GEMM_AR_SUMMERS_K_PER_RANK 3072

/* The GEMM hooks of both overlapped forms: segment rank + 1's tiles first (with dir +1 the order
 * is a rotation of the cluster tile-rows), +1 per stored 64-row sub-tile on counters[row / rows],
 * released at .sys scope (the copy engine or a peer reads them). */
static void gemm_rs_hooks(const weft_comm_t *comm, const weft_gemm_problem_t *p,
                          const weft_gemm_config_t *cfg, uint64_t *counters, int rows,
                          weft_gemm_hooks_t *h) {
  memset(h, 0, sizeof *h);
  h->rotate_m = weft_swizzle_rs_row(0, comm->local_rank, comm->local_world, p->m / comm->local_world,
                                    cfg->bm * cfg->cluster, 1);
  h->notify_counters = counters;
  h->notify_rows = rows;
  h->notify_sys = 1;
}

/* The copy-engine form (file comment); 0 in *done when this problem cannot take it (the GEMM's
 * configuration or the counters), nothing enqueued then. push 0: c is this rank's segment; push 1
 * (GEMM + AllReduce): c holds all m rows on every rank (symmetric), and the reduction stores this
 * rank's segment into every rank's c. */
static weft_status_t gemm_rs_overlapped(weft_comm_t *comm, const weft_gemm_problem_t *p,
                                        const weft_ops_plan_t *plan, const void *a, const void *b,
                                        void *c, char *ws, int push, CUstream stream, int *done) {
  weft_ops_t *o = comm->ops;
  int me = comm->local_rank, world = comm->local_world, seg_rows = p->m / world;
  weft_gemm_config_t cfg;
  weft_ops_gemm_config(comm, p, plan, &cfg);
  size_t es = weft_dtype_size(p->out), seg = (size_t)seg_rows * (size_t)p->n * es, part, slot;
  /* GEMM + AllReduce: the own segment (computed last) reduced in the GEMM's epilogue (file
   * comment), where its tiles are whole, C is 16-bit and the staged copies start at offset 0.
   * The segments go in chunks of a raster group's rows (the rows the GEMM completes together),
   * each flagged as it lands, so that an own tile waits for its chunk's copies only (one copy
   * and flag a segment: its first tiles waited 0.15 ms on 2 H200s). A raster group is half a
   * segment at most, so that a segment is two chunks or more: at 4 ranks a 2048-row segment was
   * one group of 8 cluster rows, and the epilogue form 0.03-0.13 ms slower than the reduction
   * after the GEMM; with groups of 4 (the GEMM alone 0-0.6% slower) 4% faster on 8192x8192x28672
   * and x29568, 1-2% on x16384x53248, 1-3% slower on 8192x4096x11008 (H200s, 2026-11-26,
   * bench/results/2026-11-27-tp-overlap-h200x4.md, "Raster groups of 4 at 4 ranks"). At 2 ranks
   * 1-5% faster on all five M = 8192 shapes. */
  int ctile = cfg.bm * cfg.cluster;
  int epi = push && !cfg.splitk && p->out != WEFT_DTYPE_FP32 && seg_rows % ctile == 0 &&
            seg % 16 == 0 && (uintptr_t)c % 16 == 0; /* (c: tm_c_all's base, 16-byte aligned) */
  if (epi)
    while (cfg.group > 1 && seg_rows < 2 * cfg.group * ctile) cfg.group /= 2;
  int group_rows = cfg.group * ctile;
  int chunk_rows = epi && seg_rows > group_rows && seg_rows % group_rows == 0 ? group_rows : seg_rows;
  /* Counters of nr rows: one per chunk when chunks are whole 64-row sub-tiles, else one per
   * 64-row block (a sender then waits for the blocks its segment touches). Every sub-tile starts
   * at a multiple of 64 rows; a row of them adds `units` (weft_gemm_notify_units). */
  int nr = chunk_rows % 64 == 0 ? chunk_rows : 64, counters = (p->m + nr - 1) / nr;
  *done = (!cfg.splitk || cfg.k_splits == 1) && counters <= o->gemm_rs_counters;
  if (!*done) return WEFT_STATUS_SUCCESS;
  uint64_t units = weft_gemm_notify_units(p, &cfg);
  gemm_rs_layout(world, p->m, p->n, p->out, &part, &slot);
  char *staging = ws + part;
  CUstream side = o->side;
  weft_gemm_hooks_t h;
  gemm_rs_hooks(comm, p, &cfg, o->gemm_rs_ctr, nr, &h);
  if (epi) {
    h.ar_staging = staging, h.ar_slot = slot, h.ar_flags = o->gemm_rs_flags, h.ar_c = c;
    h.ar_row0 = me * seg_rows, h.ar_rows = seg_rows, h.ar_chunk_rows = chunk_rows;
    /* The summers (storer lanes) sum an own sub-tile in about a 90 us tile's time (two partials'
     * loads in flight in 48 registers): where tiles are longer they take the sums off the
     * consumers, where shorter the consumers wait for them. Their sums grow with the world, the
     * tile with k: 4 ranks, k per rank 13312 1-3% faster, 7168-7392 10-15% slower (h200-x4,
     * 2026-11-26, bench/results/2026-11-27-tp-overlap-h200x4.md, "The own segment's sums by
     * summers"); 2 ranks 7168 2-3% faster, 5504 2-3% slower (h200-x2,
     * bench/results/2026-11-27-tp-overlap-h200x2.md, "GEMM+AR's summers at 2 ranks (A/B)"). */
    h.ar_summers = p->k >= GEMM_AR_SUMMERS_K_PER_RANK * world;
  }
  WEFT_CHECK(weft_gemm_prepare(comm, p, &cfg, &h)); /* before the side stream waits for it */
  WEFT_CHECK(weft_stream_barrier(comm, (weft_stream_t)stream));
  WEFT_CHECK(weft_ops_fork(comm, stream));
  size_t chunk = (size_t)chunk_rows * (size_t)p->n * es;
  for (int s = 0; s + 1 < world; s++) {
    int q = weft_swizzle_rs_chunk(s, me, world, 1);
    for (int k = 0; k < seg_rows / chunk_rows; k++) {
      long long r0 = (long long)q * seg_rows + (long long)k * chunk_rows, r1 = r0 + chunk_rows;
      for (long long i = r0 / nr; i <= (r1 - 1) / nr; i++) {
        long long lo = i * nr, hi = lo + nr < p->m ? lo + nr : p->m;
        uint64_t target = units * (uint64_t)((hi + 63) / 64 - (lo + 63) / 64);
        WEFT_CU(comm, cuStreamWaitValue64(side, (CUdeviceptr)(uintptr_t)(o->gemm_rs_ctr + i), target,
                                          CU_STREAM_WAIT_VALUE_GEQ));
      }
      const char *src = ws + (size_t)q * seg + (size_t)k * chunk;
      char *dst = staging + (size_t)me * slot + ((size_t)q * seg & 15) + (size_t)k * chunk;
      WEFT_CU(comm, cuMemcpyAsync(weft_heap_peer(&comm->heap, dst, q), (CUdeviceptr)(uintptr_t)src,
                                  chunk, side));
      /* the flag counts the chunks landed (in stream order) */
      WEFT_CU(comm, cuStreamWriteValue64(side, weft_heap_peer(&comm->heap, o->gemm_rs_flags + me, q),
                                         (cuuint64_t)(k + 1), CU_STREAM_WRITE_VALUE_DEFAULT));
    }
  }
  WEFT_CHECK(weft_gemm_launch(comm, p, &cfg, &h, a, b, ws, stream));
  WEFT_CHECK(gemm_rs_reduce(comm, p, ws + (size_t)me * seg, staging, slot, (size_t)me * seg & 15,
                            push ? (char *)c + (size_t)me * seg : c, 1, push, !epi, stream));
  WEFT_CHECK(weft_ops_join(comm, stream));
  return gemm_rs_reset(comm, counters, stream);
}

weft_status_t weft_gemm_rs_allreduce(weft_comm_t *comm, const weft_gemm_problem_t *p,
                                     const weft_ops_plan_t *plan, const void *a, const void *b,
                                     void *c, void *workspace, CUstream stream, int *done) {
  return gemm_rs_overlapped(comm, p, plan, a, b, c, workspace, 1, stream, done);
}

/* The fused-scatter form (file comment); 0 in *done when this problem cannot take it (a
 * configuration without TMA stores), nothing enqueued then. */
static weft_status_t gemm_rs_fused(weft_comm_t *comm, const weft_gemm_problem_t *p,
                                   const weft_ops_plan_t *plan, const void *a, const void *b,
                                   void *c, char *ws, CUstream stream, int *done) {
  weft_ops_t *o = comm->ops;
  int me = comm->local_rank, world = comm->local_world, seg_rows = p->m / world;
  weft_gemm_config_t cfg;
  weft_ops_gemm_config(comm, p, plan, &cfg);
  *done = !cfg.splitk;
  if (!*done) return WEFT_STATUS_SUCCESS;
  size_t part, slot;
  gemm_rs_layout(world, p->m, p->n, p->out, &part, &slot);
  /* the segment inside each slot: after the rows of the 64-row block it starts in */
  size_t offset = (size_t)(me * seg_rows % 64) * (size_t)p->n * weft_dtype_size(p->out);
  char *staging = ws + part, *mine = staging + (size_t)me * slot;
  weft_gemm_hooks_t h; /* the counters: rank 0's copy of this rank's arrival flag at each owner */
  gemm_rs_hooks(comm, p, &cfg, (uint64_t *)(uintptr_t)weft_heap_peer(&comm->heap, o->gemm_rs_flags + me, 0),
                seg_rows, &h);
  h.scatter_stride = (long long)comm->heap.stride;
  /* Each source adds `units` to this rank's counter per row of 64-row sub-tiles that touches the
   * segment (a sub-tile straddling two segments notifies both owners). */
  long long lo = (long long)me * seg_rows, hi = lo + seg_rows;
  uint64_t expected = weft_gemm_notify_units(p, &cfg) * (uint64_t)((hi + 63) / 64 - lo / 64);
  WEFT_CHECK(weft_gemm_prepare(comm, p, &cfg, &h));
  WEFT_CHECK(weft_stream_barrier(comm, (weft_stream_t)stream));
  void *slot0 = (void *)(uintptr_t)weft_heap_peer(&comm->heap, mine, 0);
  WEFT_CHECK(weft_gemm_launch(comm, p, &cfg, &h, a, b, slot0, stream));
  WEFT_CHECK(gemm_rs_reduce(comm, p, mine + offset, staging, slot, offset, c, expected, 0, 1, stream));
  return gemm_rs_reset(comm, 0, stream);
}

/* One weft_gemm_rs call of a checked, non-empty problem as `plan` (AUTO: by size) into c,
 * [m / world, n] contiguous, with comm's context current. */
static weft_status_t gemm_rs_enqueue(weft_comm_t *comm, const weft_gemm_problem_t *p, const void *a,
                                     const void *b, void *c, void *workspace,
                                     const weft_ops_plan_t *plan, CUstream stream) {
  int world = comm->local_world;
  weft_algo_t algo;
  WEFT_CHECK(weft_ops_form(comm, plan, "gemm_rs", p, 0, &algo));
  int done = 0;
  if (algo == WEFT_ALGO_COPY_ENGINE)
    WEFT_CHECK(gemm_rs_overlapped(comm, p, plan, a, b, c, workspace, 0, stream, &done));
  else if (algo == WEFT_ALGO_SM)
    WEFT_CHECK(gemm_rs_fused(comm, p, plan, a, b, c, workspace, stream, &done));
  if (done) return WEFT_STATUS_SUCCESS;
  WEFT_CHECK(weft_gemm_launch(comm, p, NULL, NULL, a, b, workspace, stream));
  return weft_reduce_scatter(comm, workspace, c, (size_t)(p->m / world) * (size_t)p->n, p->out,
                             WEFT_RED_OP_SUM, WEFT_ALGO_AUTO, (weft_stream_t)stream);
}

static weft_status_t gemm_rs_run(weft_comm_t *comm, const void *ctx, const weft_ops_plan_t *plan,
                                 CUstream stream) {
  const weft_gemm_rs_call_t *x = ctx;
  return gemm_rs_enqueue(comm, x->p, x->a, x->b, x->c, x->workspace, plan, stream);
}

weft_status_t weft_gemm_rs(weft_comm_t *comm, const void *a, int lda, const void *b, int ldb,
                           void *c, void *workspace, int m, int n, int k, weft_dtype_t in,
                           weft_dtype_t out, weft_gemm_layout_t layout, weft_algo_t algo,
                           weft_stream_t stream) {
  weft_gemm_problem_t p;
  static const weft_algo_t algos[] = {WEFT_ALGO_COPY_ENGINE, WEFT_ALGO_SM, WEFT_ALGO_SEQUENTIAL};
  WEFT_CHECK(weft_gemm_rs_check(comm, a, lda, b, ldb, c, workspace, m, n, k, in, out, layout, algo,
                                algos, 3, 0, "gemm_rs", &p));
  if (m == 0 || n == 0) return WEFT_STATUS_SUCCESS;
  WEFT_CHECK(weft_comm_make_current(comm));
  weft_gemm_rs_call_t x = {&p, a, b, c, workspace};
  weft_ops_plan_t plan;
  WEFT_CHECK(weft_ops_plan(comm, algo, "gemm_rs", &p, algos, 3, 0, gemm_rs_run, &x, (CUstream)stream, &plan));
  return gemm_rs_enqueue(comm, &p, a, b, c, workspace, &plan, (CUstream)stream);
}
