/*
 * gemm_ar.c — weft_gemm_ar, GEMM + AllReduce (weft.h). The forms:
 *   SM: the GEMM on most SMs writes its partial product into the workspace and counts each
 *     block of stored rows; kernels/gemm_ar.cu on the others (weft_ops_comm_sms) all-reduces each
 *     row block as soon as every rank has stored it, two-shot (each rank reduces 1/world of the
 *     block and stores the sum into every rank's c). Any m.
 *   copy engine (AUTO from WEFT_OVERLAP_MIN_ROWS rows a rank, half that where the GEMM is long:
 *     weft_ops_overlap_algo; m a multiple of world): gemm_rs.c's
 *     overlapped GEMM + ReduceScatter, its reduction storing this rank's segment into every
 *     rank's c (weft_gemm_rs_allreduce: the AllGather fused into the reduction's stores, which
 *     beat a ReduceScatter then an AllGather, and a reduction on a few SMs beside a last GEMM
 *     launch of the own segment, on 4 H200s: dev/overlap/README.md), or, where gemm_rs.c takes
 *     it, the GEMM's epilogue reducing the own segment tile by tile (WEFT_GEMM_AR_OWN). Where
 *     that form cannot take the GEMM (split-K), the sequential form.
 *   (The SM form: 64 MB all-reduced in 0.32 ms on 16 SMs beside a near-empty GEMM at 2 ranks,
 *   H100, against NCCL's 0.25 ms: dev/overlap/README.md. AUTO keeps the copy engine.)
 *   two-shot epilogue (AUTO's for small m where it takes the shape: one row of unclustered
 *     128-row tiles, unsplit (weft_gemm_config_unsplit), 16-bit C): the whole AllReduce inside
 *     the GEMM's epilogue (kernels/gemm/config.cuh, WEFT_GEMM_AR_COLS). Rank q owns a q-th share of the
 *     tile columns; a tile of another rank's share is stored into that rank's staging slot of
 *     this rank (GEMM_AR_STAGING_BYTES of the heap) and counted on its arrival word; an own tile
 *     (the rank's share comes last in its order) waits for its peers' partials, adds them to its
 *     fp32 accumulators and stores the sums into every rank's c; the kernel ends when every
 *     column's sums have landed here. One launch:
 *     no barrier, no handshake kernel, no second pass over c, and every word it counts on is zero
 *     again at its end. A decode GEMM's tiles all end together, so what this saves is the
 *     sequential form's AllReduce kernel around the same two-shot traffic: its launch, its read
 *     of the partial product, its LL128 lines.
 *   LL (where it takes the shape: a GEMM the direct-store kernel runs, C within the LL area): the
 *     GEMM's epilogue pushes C as LL lines into every rank's LL area (kernels/gemm/config.cuh,
 *     WEFT_GEMM_LL), then weft_reduce_ll_sum sums them into c: no handshake, no second pass over
 *     C. Not AUTO's: on two H100s (2026-11-25) it ran at the sequential form's time on the
 *     M = 128 shapes: a decode GEMM's tiles all finish together, so the pushes hide behind
 *     nothing (and each warp's lines land in 32-byte pieces, 16 rows apart: not measured
 *     apart); the sequential form's AllReduce takes LL there anyway.
 *   sequential: the GEMM into the workspace, then weft_allreduce.
 * Shapes: a [m, k] (lda), b [n, k] or [k, n] (ldb), c [m, n] contiguous and symmetric; the
 * workspace's first m * n elements (weft_gemm_rs_workspace_size) hold the partial product.
 *
 * One SM-form call, on the caller's stream and the side stream: this rank's row counters and
 * arrival counts back to 0 (peers add to the arrivals only after this call's "ready"); fork;
 * the GEMM (HOOK_NOTIFY with .sys release, SM budget) on the caller's stream, the consumer on the
 * side stream; join. The consumer's handshake (ready / done epochs) is in kernels/gemm_ar.cu; its
 * waits are bounded, the GEMM waits for nothing.
 */
#include "ops.h"

#include <stdio.h>
#include <string.h>

#include "../runtime/module.h"
#include "../runtime/comm.h"
#include "../runtime/loader.h"
#include "gemm/gemm.h"
#include "tp.h"

#define GEMM_AR_COUNTERS 4096 /* row-block counters: 64-row blocks of m <= 262144, coarser above */
#define GEMM_AR_ITEMS 16384   /* arrival counters: pieces of all slices of one call */
#define GEMM_AR_THREADS 256   /* kernels/gemm_ar.cu's launch bound (up to 238 registers a thread) */
/* A consumer block's unit of work, at least: a scatter block's release after each piece waits
 * for its stores to land (an NVLink round trip), so 16 KB pieces moved only ~2 GB/s per SM on
 * H200; once the reducers kept pace, 512 KB pieces beat 128 KB by 6-17% on 8192 x 4096 (k = 128
 * and 11008; 8 and 16 SMs) and were within 1% on 8192 x 8192 x 28672 (H100 x2, 2026-11-25). */
#define GEMM_AR_PIECE_BYTES (512u << 10)
/* One in GEMM_AR_SCATTER_SHARE of the consumer's blocks scatter, the others reduce (with 512 KB
 * pieces, 2 beat 3 by 1-33% on the same runs: dev/overlap/README.md) */
#define GEMM_AR_SCATTER_SHARE 2
/* The two-shot epilogue's words: an arrival word per tile column, then the done word (n up to
 * 4095 tiles of 64 columns) */
#define GEMM_AR_WORDS 4096
/* Its staging (world slots of 128 rows of a segment's columns: ~128 x n elements in all, so n up
 * to about 64K columns of 16-bit C), its own: not the caller's workspace, which a peer's next call
 * would write while this rank still reads it in a call of another op (weft_gemm_rs's forms end
 * with no handshake) */
#define GEMM_AR_STAGING_BYTES (16u << 20)

weft_status_t weft_gemm_ar_init(weft_comm_t *comm) {
  weft_ops_t *o = comm->ops;
  char batch[32], unroll[32];
  const char *opts[] = {batch, unroll};
  snprintf(batch, sizeof batch, "-DWEFT_RED_BATCH=%d", comm->local_world);
  snprintf(unroll, sizeof unroll, "-DWEFT_RED_UNROLL=%d", comm->local_world < 8 ? 8 / comm->local_world : 1);
  WEFT_CHECK(weft_module_load_embedded(comm, "kernels/gemm_ar.cu", opts, 2, &o->gemm_ar));
  WEFT_CHECK(weft_module_get_kernel(o->gemm_ar, "weft_gemm_ar_reduce", &o->gemm_ar_reduce));
  CUdeviceptr ctr;
  WEFT_CU(comm, cuMemAlloc(&ctr, GEMM_AR_COUNTERS * sizeof(uint64_t)));
  o->gemm_ar_ctr = (uint64_t *)(uintptr_t)ctr;
  WEFT_CHECK(weft_malloc(comm, GEMM_AR_WORDS * sizeof(uint64_t), (void **)&o->gemm_ar_words));
  WEFT_CHECK(weft_malloc(comm, GEMM_AR_STAGING_BYTES, (void **)&o->gemm_ar_staging));
  return weft_malloc(comm, GEMM_AR_ITEMS * sizeof(uint64_t), (void **)&o->gemm_ar_arrivals);
}

void weft_gemm_ar_destroy(weft_comm_t *comm) {
  weft_ops_t *o = comm->ops;
  if (o->gemm_ar_ctr) weft_cu.cuMemFree((CUdeviceptr)(uintptr_t)o->gemm_ar_ctr);
  o->gemm_ar_ctr = NULL;
  if (o->gemm_ar) weft_module_unload(o->gemm_ar); /* the arrivals go with the heap */
}

/* The SM form's cut of c (kernels/gemm_ar.cu): rows per counter (64, coarser for m beyond the
 * counters), elements per piece (128 KB, more where the items would exceed the arrival counters),
 * and the workspace's layout (the partial product, then world staging slots). */
typedef struct gemm_ar_layout {
  int rows;
  unsigned long long piece, items, item_bytes, slot_bytes;
  size_t partial_bytes; /* the partial product, rounded to 16: the staging slots follow it */
} gemm_ar_layout_t;

static gemm_ar_layout_t gemm_ar_layout(int world, int m, int n, size_t es) {
  gemm_ar_layout_t l;
  int blocks64 = (m + 63) / 64;
  l.rows = 64 * ((blocks64 + GEMM_AR_COUNTERS - 1) / GEMM_AR_COUNTERS);
  unsigned long long blocks = ((unsigned long long)m + l.rows - 1) / l.rows, unit = 16 / es;
  unsigned long long rows0 = m < l.rows ? (unsigned long long)m : (unsigned long long)l.rows;
  /* the first block's slice (kernels/gemm_ar.cu's per-block piece count comes from it) */
  unsigned long long part = (rows0 * n + world * unit - 1) / (world * unit) * unit;
  l.piece = GEMM_AR_PIECE_BYTES / es;
  for (;;) {
    l.items = blocks * ((part + l.piece - 1) / l.piece);
    if (l.items <= GEMM_AR_ITEMS) break;
    l.piece *= 2;
  }
  /* a staged piece at its source's offset mod 16 */
  l.item_bytes = (l.piece < part ? l.piece : part) * es + 16;
  l.slot_bytes = l.items * l.item_bytes;
  l.partial_bytes = ((size_t)m * (size_t)n * es + 15) & ~(size_t)15;
  return l;
}

/* The two-shot epilogue's staging slot for tiles bn wide: 128 rows of a segment's columns. */
static size_t gemm_ar_cols_slot(int world, int n, int bn, size_t es) {
  return ((size_t)128 * (size_t)weft_gemm_ar_cols_width(n, bn, world) * es + 15) & ~(size_t)15;
}

size_t weft_gemm_ar_workspace_bytes(int world, int m, int n, weft_dtype_t out) {
  gemm_ar_layout_t l = gemm_ar_layout(world, m, n, weft_dtype_size(out));
  return l.partial_bytes + (size_t)world * l.slot_bytes;
}

/* The SM form (file comment). */
static weft_status_t gemm_ar_sm(weft_comm_t *comm, const weft_gemm_problem_t *p,
                                const weft_ops_plan_t *plan, const void *a, const void *b, void *c,
                                void *ws, CUstream stream) {
  weft_ops_t *o = comm->ops;
  int world = comm->local_world;
  weft_gemm_config_t cfg;
  weft_ops_gemm_config(comm, p, plan, &cfg);
  /* The rows of a raster group are all stored at its end: at least 8 groups, so that what is
   * left to reduce after the GEMM (the last group) is at most an eighth of c. */
  int ctiles_m = ((p->m + cfg.bm - 1) / cfg.bm + cfg.cluster - 1) / cfg.cluster;
  if (cfg.group > ctiles_m / 8) cfg.group = ctiles_m / 8 > 1 ? ctiles_m / 8 : 1;
  size_t es = weft_dtype_size(p->out), bytes = (size_t)p->m * (size_t)p->n * es;
  gemm_ar_layout_t l = gemm_ar_layout(world, p->m, p->n, es);
  double flops = 2.0 * p->m * (double)p->n * p->k;
  double hbm = 2.0 * ((double)p->m * p->k + (double)p->n * p->k) + (double)bytes;
  int g = weft_ops_comm_sms(o->gpu.sms, plan->comm_sms ? plan->comm_sms : o->comm_sms, p->m, p->n,
                            cfg.bm, cfg.bn, flops, hbm, (double)bytes * (world - 1) / world);
  if (g < 2) g = 2; /* a scatter block and a reduce block */

  weft_gemm_hooks_t h;
  memset(&h, 0, sizeof h);
  h.notify_counters = o->gemm_ar_ctr;
  h.notify_rows = l.rows;
  h.notify_sys = 1;
  h.sms = o->gpu.sms - g;
  WEFT_CHECK(weft_gemm_prepare(comm, p, &cfg, &h)); /* before the consumer waits for it */
  int counters = (p->m + l.rows - 1) / l.rows;
  WEFT_CU(comm, cuMemsetD8Async((CUdeviceptr)(uintptr_t)o->gemm_ar_ctr, 0,
                                (size_t)counters * sizeof(uint64_t), stream));
  WEFT_CU(comm, cuMemsetD8Async((CUdeviceptr)(uintptr_t)o->gemm_ar_arrivals, 0,
                                (size_t)l.items * sizeof(uint64_t), stream));
  WEFT_CHECK(weft_ops_fork(comm, stream));
  WEFT_CHECK(weft_gemm_launch(comm, p, &cfg, &h, a, b, ws, stream));

  weft_launch_config_t lc = WEFT_LAUNCH_CONFIG_INIT;
  lc.grid[0] = (unsigned)g;
  lc.block[0] = GEMM_AR_THREADS;
  const char *partial = ws;
  char *staging = (char *)ws + l.partial_bytes;
  int m = p->m, dt = (int)p->out, rows = l.rows;
  int scatter = g / GEMM_AR_SCATTER_SHARE > 0 ? g / GEMM_AR_SCATTER_SHARE : 1;
  unsigned long long n = (unsigned long long)p->n, units = weft_gemm_notify_units(p, &cfg);
  void *args[] = {(void *)&partial, &staging, &l.slot_bytes, &l.item_bytes, &c, &m, &n, &dt,
                  &o->gemm_ar_ctr, &rows, &units, &o->gemm_ar_arrivals, &l.piece, &scatter};
  WEFT_CHECK(weft_kernel_launch(o->gemm_ar_reduce, &lc, args, (weft_stream_t)o->side));
  return weft_ops_join(comm, stream);
}

/* Whether the two-shot epilogue form takes p into c (its sums are TMA-stored: c 16-byte
 * aligned), and its GEMM configuration (the plan's). */
static int gemm_ar_cols_takes(weft_comm_t *comm, const weft_gemm_problem_t *p,
                              const weft_ops_plan_t *plan, const void *c, weft_gemm_config_t *cfg) {
  int world = comm->local_world;
  /* (the shape's cheap refusals first: AUTO asks on every call, of any m) */
  if (world < 2 || p->m > 128 || p->out == WEFT_DTYPE_FP32 || (uintptr_t)c % 16) return 0;
  weft_ops_gemm_config(comm, p, plan, cfg);
  return weft_gemm_config_unsplit(p, comm->ops->gpu.sms, cfg) &&
         (p->n + cfg->bn - 1) / cfg->bn < GEMM_AR_WORDS &&
         (size_t)world * gemm_ar_cols_slot(world, p->n, cfg->bn, weft_dtype_size(p->out)) <=
             GEMM_AR_STAGING_BYTES;
}

/* The two-shot epilogue form (file comment). */
static weft_status_t gemm_ar_cols(weft_comm_t *comm, const weft_gemm_problem_t *p,
                                  const weft_gemm_config_t *cfg, const void *a, const void *b,
                                  void *c, CUstream stream) {
  weft_ops_t *o = comm->ops;
  int me = comm->local_rank, world = comm->local_world;
  int tiles_n = (p->n + cfg->bn - 1) / cfg->bn;
  int seg = weft_gemm_ar_cols_width(p->n, cfg->bn, world) / cfg->bn; /* tile columns a rank */
  size_t slot = gemm_ar_cols_slot(world, p->n, cfg->bn, weft_dtype_size(p->out));
  weft_gemm_hooks_t h;
  memset(&h, 0, sizeof h);
  /* the order: the columns after this rank's share first, its own last */
  h.rotate_m = (me + 1) * seg < tiles_n ? (me + 1) * seg : 0;
  h.notify_counters = (uint64_t *)(uintptr_t)weft_heap_peer(&comm->heap, o->gemm_ar_words, 0);
  h.notify_sys = 1;
  char *staging = o->gemm_ar_staging;
  h.ar_staging = staging, h.ar_slot = slot, h.ar_flags = o->gemm_ar_words, h.ar_c = c;
  h.ar_cols = 1;
  return weft_gemm_launch(comm, p, cfg, &h, a, b, staging + (size_t)me * slot, stream);
}

/* Whether the LL form takes p, and its GEMM configuration: the plan's, as the LL epilogue's
 * kernel (weft_gemm_config_ll). */
static int gemm_ar_ll_takes(weft_comm_t *comm, const weft_gemm_problem_t *p,
                            const weft_ops_plan_t *plan, weft_gemm_config_t *cfg) {
  size_t bytes = (size_t)p->m * (size_t)p->n * weft_dtype_size(p->out);
  weft_ops_gemm_config(comm, p, plan, cfg);
  return weft_gemm_config_ll(p, cfg) && bytes <= WEFT_ALLREDUCE_LL_MAX_BYTES(comm->local_world);
}

/* The LL form (file comment). */
static weft_status_t gemm_ar_ll(weft_comm_t *comm, const weft_gemm_problem_t *p,
                                const weft_gemm_config_t *cfg, const void *a, const void *b,
                                void *c, CUstream stream) {
  weft_gemm_hooks_t h;
  memset(&h, 0, sizeof h);
  h.ll_area = comm->ops->red_ll_buf;
  h.ll_slot = comm->ops->red_ll_slot;
  WEFT_CHECK(weft_gemm_launch(comm, p, cfg, &h, a, b, c, stream));
  size_t bytes = (size_t)p->m * (size_t)p->n * weft_dtype_size(p->out);
  return weft_reduce_ll_sum(comm, c, bytes, p->out, stream);
}

/* One call of a checked problem as `plan` (a weft_ops_run_t: the autotuner's trials call it
 * too), with comm's context current. */
static weft_status_t gemm_ar_run(weft_comm_t *comm, const void *ctx, const weft_ops_plan_t *plan,
                                 CUstream stream) {
  const weft_gemm_rs_call_t *x = ctx;
  const weft_gemm_problem_t *p = x->p;
  const void *a = x->a, *b = x->b;
  void *c = x->c, *workspace = x->workspace;
  int world = comm->local_world;
  size_t count = (size_t)p->m * (size_t)p->n;
  weft_algo_t algo;
  WEFT_CHECK(weft_ops_form(comm, plan, "gemm_ar", p, 1, &algo));
  if (p->k && (plan->algo == WEFT_ALGO_TWO_SHOT || plan->algo == WEFT_ALGO_AUTO)) {
    weft_gemm_config_t cfg;
    if (gemm_ar_cols_takes(comm, p, plan, c, &cfg))
      return gemm_ar_cols(comm, p, &cfg, a, b, c, stream);
    if (plan->algo == WEFT_ALGO_TWO_SHOT) algo = WEFT_ALGO_SEQUENTIAL; /* a shape it refuses */
  }
  if (p->k && plan->algo == WEFT_ALGO_LL) {
    weft_gemm_config_t cfg;
    if (gemm_ar_ll_takes(comm, p, plan, &cfg)) return gemm_ar_ll(comm, p, &cfg, a, b, c, stream);
    algo = WEFT_ALGO_SEQUENTIAL; /* a shape LL does not take */
  }
  if (algo == WEFT_ALGO_SM) return gemm_ar_sm(comm, p, plan, a, b, c, workspace, stream);
  int done = 0;
  if (algo == WEFT_ALGO_COPY_ENGINE && p->m % world == 0)
    WEFT_CHECK(weft_gemm_rs_allreduce(comm, p, plan, a, b, c, workspace, stream, &done));
  if (done) return WEFT_STATUS_SUCCESS;
  WEFT_CHECK(weft_gemm_launch(comm, p, NULL, NULL, a, b, workspace, stream));
  return weft_allreduce(comm, workspace, c, count, p->out, WEFT_RED_OP_SUM, WEFT_ALGO_AUTO,
                        (weft_stream_t)stream);
}

weft_status_t weft_gemm_ar(weft_comm_t *comm, const void *a, int lda, const void *b, int ldb,
                           void *c, void *workspace, int m, int n, int k, weft_dtype_t in,
                           weft_dtype_t out, weft_gemm_layout_t layout, weft_algo_t algo,
                           weft_stream_t stream) {
  weft_gemm_problem_t p;
  static const weft_algo_t all[] = {WEFT_ALGO_COPY_ENGINE, WEFT_ALGO_SM, WEFT_ALGO_SEQUENTIAL,
                                     WEFT_ALGO_LL, WEFT_ALGO_TWO_SHOT};
  enum { NALL = sizeof all / sizeof all[0] };
  WEFT_CHECK(weft_gemm_rs_check(comm, a, lda, b, ldb, c, workspace, m, n, k, in, out, layout, algo,
                                all, NALL, 1, "gemm_ar", &p));
  if (m == 0 || n == 0) return WEFT_STATUS_SUCCESS;
  size_t bytes = (size_t)m * (size_t)n * weft_dtype_size(out);
  WEFT_ARG(comm, weft_heap_contains(&comm->heap, c, bytes),
           "c %p (+%zu bytes) must lie in the symmetric heap (weft_malloc)", c, bytes);
  WEFT_CHECK(weft_comm_make_current(comm));
  /* The autotuner's candidates: the forms that run as themselves on this shape (the copy engine
   * needs m a multiple of the ranks, LL a shape it takes); one that fell back to the sequential
   * form would be a second trial of it. */
  weft_algo_t cand[NALL];
  int nc = 0;
  for (int i = 0; i < NALL && comm->ops->autotune; i++) {
    weft_ops_plan_t whole = {all[i], 0, 0};
    weft_gemm_config_t cfg;
    if (all[i] == WEFT_ALGO_COPY_ENGINE && m % comm->local_world) continue;
    if (all[i] == WEFT_ALGO_LL && !gemm_ar_ll_takes(comm, &p, &whole, &cfg)) continue;
    if (all[i] == WEFT_ALGO_TWO_SHOT && !gemm_ar_cols_takes(comm, &p, &whole, c, &cfg)) continue;
    cand[nc++] = all[i];
  }
  weft_gemm_rs_call_t x = {&p, a, b, c, workspace};
  weft_ops_plan_t plan;
  WEFT_CHECK(weft_ops_plan(comm, algo, "gemm_ar", &p, cand, nc, 1, gemm_ar_run, &x, (CUstream)stream,
                           &plan));
  return gemm_ar_run(comm, &x, &plan, (CUstream)stream);
}
