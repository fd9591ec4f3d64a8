/*
 * ops.h — the table of weft's ops: each op owns its kernels (one file under kernels/), loaded at
 * communicator init, and whatever symmetric scratch it needs, allocated then (never inside a
 * call, so that calls stay capturable).
 *
 * The small-message kernels (the LL forms of AllGather, AllReduce/ReduceScatter and AllToAll, and
 * AllReduce's push two-shot) are launched for programmatic dependent launch and begin with
 * weft_pdl_begin (weft/sync.cuh), and the GEMM lets its successor be scheduled from its start:
 * a call's launch hides behind the stream's previous kernel (2 H200s, 2026-11-26: 0.3-1.2 us a
 * call, 5-20% from 8 B to 512 KiB; GEMM + AllReduce at m = 128 1-2 us: bench/results/
 * 2026-11-26p-stop28.md).
 */
#ifndef WEFT_OPS_H
#define WEFT_OPS_H

#include <cuda.h>
#include <pthread.h>

#include "../internal.h"
#include "weft/ll_layout.h"

struct weft_module;
struct weft_kernel;
struct weft_gemm_kernel;
typedef struct weft_gemm_problem weft_gemm_problem_t;
typedef struct weft_gemm_config weft_gemm_config_t;

/* What the ops' choices know of the GPU (weft_ops_init measures it; the CPU tests model one). */
typedef struct weft_ops_gpu {
  int sms;      /* multiprocessors */
  int hbm_gbps; /* peak memory bandwidth, GB/s (the GEMM heuristic's decode tiles) */
  /* clusters of 1, 2, 4 and 8 CTAs of one SM each (as every GEMM kernel's) that the GPCs hold
   * at once: fewer than sms / size where a GPC's SMs are no multiple of the size (H200: 132, 66,
   * 30, 15); a GEMM whose split tiles are clusters runs them through the workspace beyond that */
  int clusters[4];
} weft_ops_gpu_t;

/* A grid of `blocks` blocks, at least 1 and at most one a multiprocessor of g. */
static inline unsigned weft_ops_gpu_grid(const weft_ops_gpu_t *g, unsigned long long blocks) {
  return blocks < 1 ? 1u : blocks > (unsigned long long)g->sms ? (unsigned)g->sms : (unsigned)blocks;
}

/* g's clusters of `size` CTAs (1, 2, 4 or 8; 0 for any other size). */
static inline int weft_ops_gpu_clusters(const weft_ops_gpu_t *g, int size) {
  return size == 1 ? g->clusters[0] : size == 2 ? g->clusters[1] : size == 4 ? g->clusters[2]
         : size == 8 ? g->clusters[3] : 0;
}

/* kernels/reduce.cu's kernels, compiled for one reduction operator */
typedef struct weft_red_kernels {
  struct weft_module *mod;
  struct weft_kernel *pull, *ll, *ll2, *ll128, *push2, *ce_enter, *ce_step, *ce_wait, *ce_reduce,
      *ring;
} weft_red_kernels_t;

typedef struct weft_ops {
  /* allgather */
  struct weft_module *ag;
  struct weft_kernel *ag_enter, *ag_exit, *ag_sm, *ag_ll, *ag_ring;
  unsigned char *ag_ll_buf; /* [2][local_world][ag_ll_slot] symmetric */
  size_t ag_ll_slot;
  int ag_ce_push; /* WEFT_AG_CE=push: the copy engines push even in place (measurements) */
  /* gemm: the specialisations loaded so far, and the split-K scratch */
  pthread_mutex_t gemm_lock;
  struct weft_gemm_kernel *gemm_kernels;
  float *gemm_ws;
  unsigned *gemm_counters;
  size_t gemm_ws_floats;
  int gemm_ws_counters;
  /* reduce_scatter and allreduce: kernels/reduce.cu once a weft_red_op_t (-DWEFT_RED_OP), SUM's
   * loaded at init, another's at its first call (a NULL mod: not yet) */
  weft_red_kernels_t red[WEFT_RED_OP_COUNT];
  unsigned char *red_ll_buf;    /* [2][local_world][red_ll_slot] symmetric */
  size_t red_ll_slot;
  int red_ll_two; /* WEFT_AR_LL: -1 unset (by size), 0 one-shot, 1 two-shot (measurements) */
  /* [2][local_world][red_push2_slot] symmetric: the pushes' staging, for AllReduces of at most
   * red_push2_max bytes (WEFT_ALLREDUCE_PUSH_BYTES) and ReduceScatters of segments of at most a
   * local_world-th of that */
  char *red_push2_buf;
  size_t red_push2_slot, red_push2_max;
  /* [2][2][local_world][red_ll128_slot] symmetric: the LL128 two-shot's pieces and sums, for
   * AllReduces of at most red_ll128_max bytes (WEFT_ALLREDUCE_LL128_BYTES; 0: none) */
  unsigned char *red_ll128_buf;
  size_t red_ll128_slot, red_ll128_max;
  /* [2 parities][local_world][red_stage_slot] symmetric: the copy-engine RS's staging, the ring
   * RS's */
  unsigned char *red_stage_buf;
  size_t red_stage_slot;
  /* ag_gemm: one arrival signal per source rank, symmetric [WEFT_MAX_LOCAL_RANKS] */
  uint64_t *ag_gemm_sig;
  /* gemm_rs (kernels/gemm_rs.cu): arrival flags per source rank, symmetric
   * [WEFT_MAX_LOCAL_RANKS]; the GEMM's stored-tile counters, this GPU only [gemm_rs_counters] */
  struct weft_module *gemm_rs;
  struct weft_kernel *gemm_rs_reduce;
  uint64_t *gemm_rs_flags;
  uint64_t *gemm_rs_ctr;
  int gemm_rs_counters;
  /* gemm_ar's SM form (kernels/gemm_ar.cu): the GEMM's stored-row counters (this GPU only) and
   * the pieces' arrival counts (symmetric: the peers add to them) */
  struct weft_module *gemm_ar;
  struct weft_kernel *gemm_ar_reduce;
  uint64_t *gemm_ar_ctr, *gemm_ar_arrivals;
  /* its two-shot epilogue form's words (symmetric, 0 between calls) and staging (gemm_ar.c) */
  uint64_t *gemm_ar_words;
  char *gemm_ar_staging;
  /* alltoall and alltoallv (kernels/alltoall.cu) */
  struct weft_module *a2a;
  struct weft_kernel *a2a_sm, *a2a_ll;
  uint64_t *a2a_inbox;       /* [local_world][WEFT_A2A_INBOX_WORDS] symmetric */
  unsigned char *a2a_ll_buf; /* [2][local_world][a2a_ll_slot] symmetric */
  size_t a2a_ll_slot;
  /* fork/join of copy-engine work over the side stream */
  CUstream side; /* beside the caller's: copies and consumers that run next to a kernel */
  CUevent fork, join;
  weft_ops_gpu_t gpu; /* the GPU as the ops' choices see it */
  int comm_sms;  /* WEFT_COMM_SMS: the SMs an SM-side consumer takes beside a GEMM (0: the model) */
} weft_ops_t;

/* Every op's init/teardown, in the order of the table in ops.c. */
weft_status_t weft_ops_init(weft_comm_t *comm);
void weft_ops_destroy(weft_comm_t *comm);

/* One op's hooks (ops.c's table). */
weft_status_t weft_allgather_init(weft_comm_t *comm);
void weft_allgather_destroy(weft_comm_t *comm);
weft_status_t weft_gemm_init(weft_comm_t *comm);
void weft_gemm_destroy(weft_comm_t *comm);
weft_status_t weft_reduce_init(weft_comm_t *comm);
/* The reduction half of weft_allreduce's LL form, for an array of `bytes` whose lines every rank
 * pushed into its slot of ops.red_ll_buf under the next reduction epoch (GEMM + AllReduce's LL
 * form: the GEMM's LL epilogue): the sums into recv (any device memory). bytes at most
 * WEFT_ALLREDUCE_LL_MAX_BYTES(local world). */
weft_status_t weft_reduce_ll_sum(weft_comm_t *comm, void *recv, size_t bytes, weft_dtype_t dtype,
                                 CUstream stream);
void weft_reduce_destroy(weft_comm_t *comm);
weft_status_t weft_ag_gemm_init(weft_comm_t *comm);
void weft_ag_gemm_destroy(weft_comm_t *comm);
weft_status_t weft_gemm_rs_init(weft_comm_t *comm);
void weft_gemm_rs_destroy(weft_comm_t *comm);
weft_status_t weft_gemm_ar_init(weft_comm_t *comm);
void weft_gemm_ar_destroy(weft_comm_t *comm);
weft_status_t weft_alltoall_init(weft_comm_t *comm);
void weft_alltoall_destroy(weft_comm_t *comm);

/* The side stream starts after everything so far on stream (fork), and stream continues after
 * everything on the side stream (join). */
weft_status_t weft_ops_fork(weft_comm_t *comm, CUstream stream);
weft_status_t weft_ops_join(weft_comm_t *comm, CUstream stream);

/* An overlapped op's algorithm in the autotuner's plan names: "ce", "sm", "ll", "two_shot" or
 * "seq". */
const char *weft_ops_algo_name(weft_algo_t algo);

/* How one call of an overlapped op runs: AUTO (the heuristics), an algorithm the caller named,
 * or the autotuner's pick among the op's candidates (weft_ops_plan). */
typedef struct weft_ops_plan {
  weft_algo_t algo;
  int bn;       /* the GEMM's tile width (weft_gemm_config_width); 0: the heuristic's */
  int comm_sms; /* SMs of an SM-side consumer (gemm_ar's SM form); 0: weft_ops_comm_sms */
} weft_ops_plan_t;

/* Enqueues an op (its arguments in ctx) as `plan` on stream. */
typedef weft_status_t (*weft_ops_run_t)(weft_comm_t *comm, const void *ctx,
                                        const weft_ops_plan_t *plan, CUstream stream);

/* The plan of an overlapped op's call: {algo} unless algo is AUTO and the autotuner is on
 * (weft_comm_set_autotune) with more than one rank; then the fastest of the candidates built
 * from `algos` (each the op accepts; SEQUENTIAL once, the others at the heuristic's tile width
 * and the other widths weft_gemm_config_width gives p, SM with consumer SM counts too for
 * GEMM + AllReduce: allreduce), timed by weft_autotune under a key of op (the public name) and
 * p's shapes, strides and dtypes, AUTO's algorithm (weft_ops_overlap_algo) at the heuristic's
 * width first (a candidate within 3% of the fastest loses to an earlier one); {AUTO} where it
 * cannot decide (a graph capture). Collective, like the op. */
weft_status_t weft_ops_plan(weft_comm_t *comm, weft_algo_t algo, const char *op,
                            const weft_gemm_problem_t *p, const weft_algo_t *algos, int nalgos,
                            int allreduce, weft_ops_run_t run, const void *ctx, CUstream stream,
                            weft_ops_plan_t *plan);

/* The candidates weft_ops_plan times (at most WEFT_OPS_PLAN_MAX) and their names ("ce",
 * "ce/bn128", "sm/sms16", "seq", ...: the names the disk entries keep); returns their number.
 * Pure host arithmetic on gpu with a split-K workspace of ws_floats floats and ws_counters tile
 * counters (the CPU tests call it). */
#define WEFT_OPS_PLAN_MAX 16
int weft_ops_plan_candidates(const weft_gemm_problem_t *p, const weft_ops_gpu_t *gpu,
                             size_t ws_floats, int ws_counters, const weft_algo_t *algos,
                             int nalgos, int sm_consumer,
                             weft_ops_plan_t plans[WEFT_OPS_PLAN_MAX],
                             char names[WEFT_OPS_PLAN_MAX][32]);

/* The GEMM configuration of an overlapped form: the heuristic's, at the plan's tile width. */
void weft_ops_gemm_config(weft_comm_t *comm, const weft_gemm_problem_t *p,
                          const weft_ops_plan_t *plan, weft_gemm_config_t *cfg);

/* The largest `bytes` a rank (or, for AllToAllv, a pair) for which a collective's AUTO takes its
 * LL form at `world` ranks: within LL's largest (max_bytes) and with the bytes a rank pushes, one
 * copy to each peer, at most push. */
static inline size_t weft_ops_ll_auto_max(int world, size_t max_bytes, size_t push) {
  size_t m = world > 1 ? push / (size_t)(world - 1) : max_bytes;
  return m < max_bytes ? m : max_bytes;
}
static inline int weft_ops_ll_auto(int world, size_t bytes, size_t max_bytes, size_t push) {
  return bytes <= weft_ops_ll_auto_max(world, max_bytes, push);
}

/* The SM AllGather's grid (kernels/allgather.cu, weft_ag_sm): `slices` blocks for each peer and
 * `local` for this rank's own copy, about 256 KiB a block, at most one block an SM (at least one
 * a rank). The links are the bottleneck: the own copy (an HBM copy) gets as many blocks as a peer
 * up to 8, then a quarter of them. With as many for the own copy as for a peer at any size (32 of
 * 128 at 4 ranks) the pushes had 3/4 of the SMs (64 MB gathered at 4 ranks: 167 us, now 164;
 * H200 x4, 2026-11-26); with a quarter at any size one block copied 1 MiB alone, the slowest part
 * of 4 MB gathered (37 us against 25). Pure arithmetic (tests/cpu/test_allgather_grid.c). */
static inline void weft_ops_ag_sm_grid(size_t bytes, int world, int sms, unsigned *slices,
                                       unsigned *local) {
  size_t peers = world > 1 ? (size_t)world - 1 : 0, s = bytes >> 18 ? bytes >> 18 : 1, l;
  if (s > WEFT_AG_SM_UNITS) s = WEFT_AG_SM_UNITS; /* every block adds at least 1 */
  for (;; s--) {
    l = s / 4 > 8 ? s / 4 : s < 8 ? s : 8;
    if (peers * s + l <= (size_t)sms || s == 1) break;
  }
  *slices = (unsigned)s, *local = (unsigned)l;
}

/* GEMM + AllReduce's AllReduce moves world times the bytes of GEMM + ReduceScatter's
 * ReduceScatter, so a long GEMM hides it from half the rows (weft_ops_overlap_algo): from n x k
 * a rank of this many elements (4 H200s, m = 2048, 8192 x 28672: 0.442 ms overlapped against
 * 0.497; 2 H200s, m = 1024: 0.383 against 0.391; the 4096 x 11008 layer at the same m, 11 and 23
 * million a rank: 1.21x and 1.33x slower overlapped; bench/results/2026-11-26t-stop32.md
 * section 9) */
#define WEFT_OPS_AR_LONG_NK (32ll << 20)

/* AUTO's choice for an overlapped op whose C has `rows` rows over `world` ranks (weft.h,
 * WEFT_OVERLAP_MIN_ROWS: rows a rank); allreduce: GEMM + AllReduce of n x k a rank (nk), which
 * overlaps from half those rows a rank where nk is at least WEFT_OPS_AR_LONG_NK. */
static inline weft_algo_t weft_ops_overlap_algo(weft_algo_t algo, long long rows, int world,
                                                int allreduce, long long nk) {
  if (algo != WEFT_ALGO_AUTO) return algo;
  long long min_rows = (long long)WEFT_OVERLAP_MIN_ROWS * world;
  if (allreduce && nk >= WEFT_OPS_AR_LONG_NK) min_rows /= 2;
  return world > 1 && rows >= min_rows ? WEFT_ALGO_COPY_ENGINE : WEFT_ALGO_SEQUENTIAL;
}

/* The copy-engine form where *algo is it (AUTO's or the caller's) and this rank shares its GPU
 * with another (WEFT_SHARE_GPUS): the copies and stream signals between two processes on one GPU
 * do not progress while a kernel that waits for them holds it (one H100, 2 to 4 ranks: a
 * copy-engine AG+GEMM or GEMM+RS never finished, its pushes and flags never landed), so AUTO
 * (requested) takes the sequential form there and a caller who asked for the copy-engine form
 * gets WEFT_STATUS_NOT_SUPPORTED saying why. */
weft_status_t weft_ops_engine_form(weft_comm_t *comm, weft_algo_t requested, const char *op,
                                   weft_algo_t *algo);

/* Resource partition (Triton-distributed, §3.8): the SMs an SM-side communication kernel takes from
 * a GEMM that runs beside it on the others. The GEMM is persistent, m x n in tiles of tile_m x
 * tile_n, `flops` and `hbm_bytes` (A, B and C) of work; the consumer moves link_bytes over NVLink
 * at about WEFT_PART_SM_LINK_GBPS per SM (at most WEFT_PART_LINK_GBPS), keeping pace with the GEMM
 * except for the rows of the GEMM's last wave of tiles, which it can only move after them. The
 * model's time, max(GEMM on the rest, the consumer's share before the last wave) + that tail,
 * is evaluated for every count from 2 to sms / 4 and the smallest within 1% of the best wins.
 * WEFT_COMM_SMS overrides it. Pure arithmetic (the CPU tests call it). */
#define WEFT_PART_SM_TFLOPS 5.4    /* bf16 dense, per SM (H100/H200: ~710 TFLOP/s over 132) */
#define WEFT_PART_HBM_GBPS 3000.0  /* one GPU's HBM, what a GEMM streams (H100 3350, H200 4800) */
#define WEFT_PART_SM_LINK_GBPS 5.0 /* one SM of GEMM+AR's consumer, link_bytes a second (H200: 2-5
                                      GB/s; H100 x2 since the reducers' double-buffered loads,
                                      2026-11-25: 6-7 beside a near-empty GEMM) */
#define WEFT_PART_LINK_GBPS 400.0  /* one GPU's NVLink, one direction */
int weft_ops_comm_sms(int sms, int override, long long m, long long n, int tile_m, int tile_n,
                      double flops, double hbm_bytes, double link_bytes);

#endif
