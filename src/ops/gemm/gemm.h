/*
 * gemm.h — the GEMM launcher inside the library: what weft_gemm and the overlapped ops (AG+GEMM,
 * GEMM+RS, GEMM+AR) share. A problem (shapes, strides, dtypes) and a tile configuration become
 * one specialisation of kernels/gemm/gemm.cu (-D defines, compiled once per communicator and
 * cached on disk), tensor maps and one launch; the hooks (per-tile wait, per-tile notify,
 * tile-order table, SM budget) are the overlapped ops' part. Its files: config.c, the shape
 * heuristic; specialisation.c, the defines (what each means: kernels/gemm/config.cuh) and the
 * compiled kernels; launch.c, the checks, the tensor maps, the launch and the op.
 */
#ifndef WEFT_OPS_GEMM_H
#define WEFT_OPS_GEMM_H

#include <cuda.h>
#include <stdint.h>

#include "../../internal.h"

typedef struct weft_ops_gpu weft_ops_gpu_t; /* ../ops.h */

/* C[m, n] = A[m, k] op(B): A row-major with row stride lda; B [n, k] (b_kmajor) or [k, n],
 * row stride ldb; C row-major with row stride ldc. Strides in elements. */
typedef struct weft_gemm_problem {
  int m, n, k;
  long long lda, ldb, ldc;
  weft_dtype_t in, out; /* in: BF16 or FP16; out: BF16, FP16 or FP32 */
  int b_kmajor;
  /* A is [k, m] (m contiguous, row stride lda) instead: only as the problem of a transposed
   * product's kernel with [k, n] B (weft_gemm_problem_swapped) */
  int a_mn_major;
} weft_gemm_problem_t;

/* One specialisation of kernels/gemm/gemm.cu (its defines) and its split count. */
typedef struct weft_gemm_config {
  int bm, bn, stages, cluster, epi_bufs, group;
  int splitk;   /* the direct-store / split-K kernel (WEFT_GEMM_SPLITK=1) */
  int k_splits; /* 1 with splitk: direct store, no workspace */
  /* splitk with k_splits 2..8 (and at most the warpgroup's columns / 8): the splits of a tile
   * are one cluster and reduce through distributed shared memory, no workspace
   * (WEFT_GEMM_CLUSTER_K); weft_gemm_launch takes the workspace instead under a notify hook */
  int splitk_cluster;
  int a_rows;   /* rows of A per stage: 0 = bm; 8, 16 or 32 for m <= a_rows (WEFT_GEMM_A_ROWS) */
  /* TMA-store kernels (no splitk): at most this many k-splits for each cluster tile of the
   * grid's last, partly filled wave (WEFT_GEMM_TAIL; the launch picks the count from the
   * grid, the workspace and k); 0 or 1: no split tail */
  int tail_splits;
  /* the transposed product (kernels/gemm/config.cuh, WEFT_GEMM_C_T): the kernel runs C^T = B A^T on
   * weft_gemm_problem_swapped(p), so bm tiles n and bn tiles m (in steps of 16, where 128-row
   * tiles would pad m), and the fields above are that problem's; splitk is 1. No hook but the SM
   * budget (weft_gemm_hooks_kernel) */
  int swap_ab;
} weft_gemm_config_t;

/* The overlap hooks. A NULL pointer leaves its hook compiled out. */
typedef struct weft_gemm_hooks {
  const int *order_table; /* position -> cluster-tile index (kernels/gemm/gemm.cu, param 7) */
  int rotate_m;           /* device grouped order starting at this cluster tile-row */
  const uint64_t *wait_signals; /* before a tile's first load: signal[row / wait_rows] >= */
  int wait_rows;                /* wait_expected for every row of A the tile reads */
  uint64_t wait_expected;
  /* with wait_signals: A's rows [a_own_row0, a_own_row0 + a_own_rows) are also at a_own (the same
   * row stride): a tile wholly inside them reads them there and waits on no signal
   * (kernels/gemm/config.cuh, WEFT_GEMM_A_OWN) */
  const void *a_own;
  int a_own_row0, a_own_rows;
  uint64_t *notify_counters; /* after a 64-row sub-tile's store: +1 on counter[row / */
  int notify_rows;           /* notify_rows] (release; .sys when notify_sys) */
  int notify_sys;
  /* the fused-scatter epilogue (kernels/gemm/config.cuh, WEFT_GEMM_SCATTER; needs notify_counters,
   * notify_sys, a TMA-store configuration and m a multiple of notify_rows): the bytes between two
   * ranks' copies of symmetric memory. C's segment q (notify_rows rows) goes to rank q's slot (c
   * is rank 0's; weft_gemm_scatter_rows rows of ldc elements, the segment from row
   * (q * notify_rows) % 64), and its counter is rank q's copy of notify_counters (rank 0's) */
  long long scatter_stride;
  /* the LL epilogue (kernels/gemm/config.cuh, WEFT_GEMM_LL; a configuration weft_gemm_config_ll
   * gave, no other hook): c is not written; its 8-byte
   * words go as LL lines into this rank's slot of every rank's copy of ll_area (weft_red_ll's
   * [2][local world][ll_slot] area, flagged with the reduction epoch + 1), which
   * weft_reduce_ll_sum then sums */
  unsigned char *ll_area;
  unsigned long long ll_slot;
  /* GEMM + AllReduce's own segment, reduced in the epilogue (kernels/gemm/config.cuh,
   * WEFT_GEMM_AR_OWN; needs notify_counters, notify_sys, a TMA-store configuration, 16-bit C, no
   * scatter, and ar_row0, ar_rows and ar_chunk_rows multiples of the cluster tile's rows): rows
   * [ar_row0, ar_row0 + ar_rows) get every peer's partial of them added (slot p of ar_staging,
   * p * ar_slot bytes in, row stride n, once ar_flags[p] counts their chunk of ar_chunk_rows rows:
   * chunk c has landed when it is above c) and go to ar_c (symmetric, ldc as c) on every rank; the
   * other rows to c */
  const char *ar_staging;
  unsigned long long ar_slot;
  const uint64_t *ar_flags;
  void *ar_c;
  int ar_row0, ar_rows, ar_chunk_rows;
  /* with ar_staging: those rows' sums made by the storer warps' idle lanes rather than the
   * consumers (kernels/gemm/config.cuh, WEFT_GEMM_AR_SUMMERS), except in the grid's last round */
  int ar_summers;
  /* with ar_staging: the two-shot epilogue of small m instead (kernels/gemm/config.cuh,
   * WEFT_GEMM_AR_COLS; one row of unclustered 128-row tiles, no split, no split tail): the segments
   * are the ranks' shares of the tile columns, rotate_m the first tile column of the order (the one
   * after the rank's segment); c is this rank's staging slot (ar_staging + rank * ar_slot, 128 rows
   * of weft_gemm_ar_cols_width elements); notify_counters rank 0's copy of the symmetric words
   * (tiles_n arrival words, then the done word, all 0 between calls), ar_flags this rank's;
   * ar_row0, ar_rows and ar_chunk_rows are not used */
  int ar_cols;
  /* the grouped GEMM of an MoE layer (kernels/gemm/config.cuh, WEFT_GEMM_GROUPED; a configuration
   * weft_gemm_config_grouped gave, no other hook): b holds group_experts matrices, each
   * group_stride elements after the one before; tile row t of A multiplies expert
   * group_expert[t * bm / group_rows]'s, and A's rows in use are *group_tiles * group_rows (device
   * memory: a routing plan's, weft_moe_route) of p's m */
  const int *group_expert, *group_tiles;
  int group_rows, group_experts;
  long long group_stride;
  /* the grouped GEMM's options (kernels/gemm/config.cuh), over the plan's row -> entry table
   * group_entry and its topk: group_gated, the gated activation (WEFT_GEMM_GATED: B's n columns
   * are gate then up halves, C is [m, n / 2]); or combine_weights, the top-k combine
   * (WEFT_GEMM_COMBINE: row r is scaled by combine_weights[entry] of type combine_wtype and added
   * into row entry / group_topk of c, which holds the tokens' rows, row stride ldc); and
   * gather_a, A's rows gathered from the tokens (WEFT_GEMM_A_GATHER: row r of A is row entry /
   * group_topk of gather_a, row stride gather_lda elements; a and lda unused), which may wait
   * for its tokens' ranks (wait_signals: signal s covers tokens [s * wait_rows, +wait_rows);
   * WEFT_GEMM_GROUP_WAIT), its tile rows then in group_order's order */
  const int *group_order;
  const int *group_entry;
  int group_topk, group_gated;
  const void *combine_weights;
  weft_dtype_t combine_wtype;
  const void *gather_a;
  long long gather_lda;
  int sms; /* CTAs to run (the SM budget); 0: every SM */
} weft_gemm_hooks_t;

/* Whether h asks for more than an SM budget (hooks compiled into the kernel). */
static inline int weft_gemm_hooks_kernel(const weft_gemm_hooks_t *h) {
  return h && (h->order_table || h->rotate_m || h->wait_signals || h->notify_counters ||
               h->ll_area || h->ar_staging || h->group_expert);
}

/* The problem a swap_ab configuration's kernel runs: C^T [n, m] = op(B)^T A^T, B's rows (or its
 * [k, n] columns: a_mn_major) as A and A [m, k] as [n, k] B, C^T stored as C (row stride ldc). */
static inline weft_gemm_problem_t weft_gemm_problem_swapped(const weft_gemm_problem_t *p) {
  weft_gemm_problem_t t = *p;
  t.m = p->n, t.n = p->m, t.lda = p->ldb, t.ldb = p->lda;
  t.b_kmajor = 1, t.a_mn_major = !p->b_kmajor;
  return t;
}

/* The problem the kernel of configuration c runs for p: p, or with swap_ab its swapped problem,
 * written into *tmp. */
static inline const weft_gemm_problem_t *weft_gemm_kernel_problem(const weft_gemm_problem_t *p,
                                                                 const weft_gemm_config_t *c,
                                                                 weft_gemm_problem_t *tmp) {
  if (!c->swap_ab) return p;
  *tmp = weft_gemm_problem_swapped(p);
  return tmp;
}

/* Split-K scratch of a communicator: whole partial tiles of the splits of one call. The chooser
 * never asks for more (weft_gemm_config_choose's ws_floats). */
#define WEFT_GEMM_WS_TILES_PER_SM 2 /* 128 x 128 fp32 tiles per SM */

/* Checks a problem: WEFT_STATUS_SUCCESS or INVALID_ARGUMENT with the reason on comm. */
weft_status_t weft_gemm_problem_check(weft_comm_t *comm, const weft_gemm_problem_t *p,
                                      const void *a, const void *b, const void *c);

/* The shape heuristic (measured on H100/H200: dev/gemm/README.md): the configuration for p on gpu
 * with a split-K workspace of ws_floats floats and ws_counters tile counters, for a launch with
 * kernel hooks (hooked: no swap_ab) or without. Pure host arithmetic (the CPU tests enumerate its
 * choices). */
void weft_gemm_config_choose(const weft_gemm_problem_t *p, const weft_ops_gpu_t *gpu,
                             size_t ws_floats, int ws_counters, int hooked,
                             weft_gemm_config_t *cfg);

/* A large-m configuration c (weft_gemm_config_choose's) with tiles bn wide (one of the large-m
 * widths: 128, 176, 192, 208, 224, 240, 256) instead: 1 when c changed, 0 when c takes no such
 * width (split-K or 64-row tiles, [k, n] B with a width other than 128, 192 or 256, or already
 * that wide). For the autotuner's plans. */
int weft_gemm_config_width(const weft_gemm_problem_t *p, int bn, weft_gemm_config_t *c);

/* c as one row of unsplit 128-row tiles with TMA stores, for GEMM + AllReduce's two-shot epilogue
 * (weft_gemm_hooks_t.ar_cols): c unchanged where it is one already; 128 x 128 tiles split in k,
 * and two rows of unsplit 64 x 128 tiles, become 128 x 64 tiles, unsplit, where they fill 3/4
 * to all of the sms SMs in one wave (the 8192-column rows of GEMM + AllReduce's table: 128
 * tiles). 0 where p or c does not take it (m > 128, other tiles, clusters, a split tail, or C
 * rows TMA cannot store). */
int weft_gemm_config_unsplit(const weft_gemm_problem_t *p, int sms, weft_gemm_config_t *c);

/* The grouped GEMM's configuration for p (m: the plan's largest row count) over a plan of
 * group_rows-row tiles (a multiple of 64): 128-row tiles where group_rows allows, else 64; the
 * tile width that pads n least; unclustered, unsplit, the TMA-store epilogue. gated: for the
 * gated epilogue (weft_gemm_hooks_t.group_gated), whose warpgroups store half their columns: a
 * width whose half still fills a staging box ([k, n] B: whole 64-column boxes of B). */
void weft_gemm_config_grouped(const weft_gemm_problem_t *p, int group_rows, int gated,
                              weft_gemm_config_t *c);

/* c as the kernel of the LL epilogue (weft_gemm_hooks_t.ll_area), which is the direct-store
 * kernel's (splitk): c unchanged where it is one, else its tiles unsplit (k_splits 1) where it has
 * neither 2x1 clusters nor a split tail (the direct store takes neither); C must be contiguous
 * (ldc = n) with rows of a multiple of 8 bytes. 0 where p or c does not take it. */
int weft_gemm_config_ll(const weft_gemm_problem_t *p, weft_gemm_config_t *c);

/* The -D options of the specialisation for (p, cfg, hooks) into opts (borrowed pointers into
 * buf); returns their number (at most WEFT_GEMM_MAX_OPTIONS). hooks may be NULL. What each
 * define means, the values it takes and which field sets it: kernels/gemm/config.cuh. */
#define WEFT_GEMM_MAX_OPTIONS 20
int weft_gemm_options(const weft_gemm_problem_t *p, const weft_gemm_config_t *cfg,
                      const weft_gemm_hooks_t *hooks, char buf[WEFT_GEMM_MAX_OPTIONS][48],
                      const char *opts[WEFT_GEMM_MAX_OPTIONS]);

/* Dynamic shared memory of a configuration (bytes); the kernel allows at most
 * WEFT_GEMM_MAX_SMEM. */
#define WEFT_GEMM_MAX_SMEM 232448
#define WEFT_GEMM_MAX_STAGES 16 /* kernels/gemm/config.cuh: WEFT_GEMM_STAGES, 2..16 */
size_t weft_gemm_smem_bytes(const weft_gemm_config_t *cfg);

/* The split tail of a launch of cfg on `clusters` clusters (kernels/gemm/config.cuh,
 * WEFT_GEMM_TAIL): the cluster tiles of the grid's last, partly filled wave that are split along k
 * (0: none; cfg->tail_splits, the workspace and 8 k-blocks a split bound it) and their split count
 * in *splits (1 with none). */
int weft_gemm_tail(const weft_gemm_problem_t *p, const weft_gemm_config_t *cfg, int clusters,
                   size_t ws_floats, int ws_counters, int *splits);

/* The columns of a rank's segment in the two-shot epilogue (weft_gemm_hooks_t.ar_cols): whole
 * tiles of bn columns, the ranks' shares of the tile columns rounded up. */
static inline int weft_gemm_ar_cols_width(int n, int bn, int world) {
  return ((n + bn - 1) / bn + world - 1) / world * bn;
}

/* Rows of a fused-scatter slot (weft_gemm_hooks_t.scatter_stride) for segments of seg rows: the
 * 64-row blocks a segment touches, at most. */
static inline int weft_gemm_scatter_rows(int seg) { return 64 * ((seg + 63) / 64 + 1); }

/* What a HOOK_NOTIFY kernel of cfg adds, over all tile columns, for one row of 64-row sub-tiles
 * (kernels/gemm/gemm.cu, param 13): a counter of r rows (r a multiple of 64) is complete once it
 * reaches units * ceil(its rows / 64). */
uint64_t weft_gemm_notify_units(const weft_gemm_problem_t *p, const weft_gemm_config_t *cfg);

/* Launches C = A op(B) on stream. cfg NULL: weft_gemm_config_choose; hooks NULL: none. The
 * problem must have passed weft_gemm_problem_check. Compiles and loads the specialisation on
 * first use (thread-safe). */
weft_status_t weft_gemm_launch(weft_comm_t *comm, const weft_gemm_problem_t *p,
                               const weft_gemm_config_t *cfg, const weft_gemm_hooks_t *hooks,
                               const void *a, const void *b, void *c, CUstream stream);

/* Compiles and loads the specialisation that weft_gemm_launch(p, cfg, hooks) will run, without
 * launching. An overlapped op calls it before it enqueues anything that waits for the GEMM:
 * loading a module can wait for the GPU's work in flight (a lazy load, the module's state
 * written by a synchronous copy), which would then wait for a GEMM not yet launched. */
weft_status_t weft_gemm_prepare(weft_comm_t *comm, const weft_gemm_problem_t *p,
                                const weft_gemm_config_t *cfg, const weft_gemm_hooks_t *hooks);

#endif
