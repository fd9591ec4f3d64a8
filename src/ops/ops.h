/*
 * ops.h — the table of weft's ops: each op owns its kernels (one file under kernels/), loaded at
 * communicator init, and whatever symmetric scratch it needs, allocated then (never inside a
 * call, so that calls stay capturable).
 *
 * The small-message kernels (the LL forms of AllGather, AllReduce/ReduceScatter and AllToAll, and
 * AllReduce's push two-shot) are launched for programmatic dependent launch and begin with
 * weft_pdl_begin (weft/sync.cuh), and the GEMM lets its successor be scheduled from its start:
 * a call's launch hides behind the stream's previous kernel (2 H200s, 2026-11-26: 0.3-1.2 us a
 * call, 5-20% from 8 B to 512 KiB, bench/results/2026-11-26-collectives-h200x2.md,
 * "Programmatic dependent launch of the small-message kernels (A/B)"; GEMM + AllReduce at m = 128 1-2 us,
 * bench/results/2026-11-27-tp-overlap-h200x2.md, "The early trigger").
 */
#ifndef WEFT_OPS_H
#define WEFT_OPS_H

#include <cuda.h>
#include <pthread.h>

#include "../internal.h"
#include "plan.h"
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
  /* MoE routing (kernels/moe.cu) */
  struct weft_module *moe;
  struct weft_kernel *moe_count, *moe_plan, *moe_place, *moe_gather, *moe_silu_mul, *moe_combine,
      *moe_arrival_order;
  /* fork/join of copy-engine work over the side stream */
  CUstream side; /* beside the caller's: copies and consumers that run next to a kernel */
  CUevent fork, join;
  weft_ops_gpu_t gpu; /* the GPU as the ops' choices see it */
  /* the autotuner (autotune.c): on for AUTO calls of the overlapped ops (weft_comm_set_autotune,
   * WEFT_AUTOTUNE=1); the decisions so far */
  int autotune;
  pthread_mutex_t tune_lock;
  struct weft_tuned *tuned;
  unsigned long tune_trials; /* decisions made by timing (the others came from disk) */
  int comm_sms;  /* WEFT_COMM_SMS: the SMs an SM-side consumer takes beside a GEMM (0: the model) */
} weft_ops_t;

/* The ops' state of a communicator (comm->ops) and every op's init, in the order of the table in
 * ops.c; destroy undoes it, safe on a partial one. */
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
weft_status_t weft_moe_init(weft_comm_t *comm);
void weft_moe_destroy(weft_comm_t *comm);

/* The side stream starts after everything so far on stream (fork), and stream continues after
 * everything on the side stream (join). */
weft_status_t weft_ops_fork(weft_comm_t *comm, CUstream stream);
weft_status_t weft_ops_join(weft_comm_t *comm, CUstream stream);

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

#endif
