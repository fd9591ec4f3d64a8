/*
 * plan.h — how an op's call runs: AUTO's choice of algorithm, the candidate plans of the
 * overlapped ops and the distributed autotuner that times them (docs/architecture.md, "How a
 * plan is chosen"), and the resource-partition model of an SM-side consumer. Every such decision
 * is made here, once; the ops call these and do not choose again.
 */
#ifndef WEFT_PLAN_H
#define WEFT_PLAN_H

#include <cuda.h>

#include "../internal.h"

typedef struct weft_gemm_problem weft_gemm_problem_t;
typedef struct weft_gemm_config weft_gemm_config_t;
typedef struct weft_ops_gpu weft_ops_gpu_t;

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

/* GEMM + AllReduce's AllReduce moves world times the bytes of GEMM + ReduceScatter's
 * ReduceScatter, so a long GEMM hides it from half the rows (weft_ops_overlap_algo): from n x k
 * a rank of this many elements (4 H200s, m = 2048, 8192 x 28672: 0.442 ms overlapped against
 * 0.497; 2 H200s, m = 1024: 0.383 against 0.391; the 4096 x 11008 layer at the same m, 11 and 23
 * million a rank: 1.21x and 1.33x slower overlapped; bench/results/2026-11-27-tp-overlap-h200x4.md,
 * "Where overlap starts to win: WEFT_OVERLAP_MIN_ROWS") */
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

/* The form one call of an overlapped op runs in, decided here and nowhere else: the plan's
 * algorithm, AUTO resolved by weft_ops_overlap_algo (allreduce: GEMM + AllReduce's rule, from
 * p's n x k), the sequential form where the GEMM has nothing to overlap (n or k 0), and the
 * copy-engine form only where it can run (weft_ops_engine_form). */
weft_status_t weft_ops_form(weft_comm_t *comm, const weft_ops_plan_t *plan, const char *op,
                            const weft_gemm_problem_t *p, int allreduce, weft_algo_t *algo);

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

/* ---- the autotuner (autotune.c) ---- */

/* Enqueues the op as candidate `candidate` on stream (ctx: the op's arguments). */
typedef weft_status_t (*weft_autotune_run_t)(weft_comm_t *comm, const void *ctx, int candidate,
                                             CUstream stream);

/* The distributed autotuner: the index of the fastest of the candidates names[0..n) (or of an
 * earlier one within 3% of it: weft_autotune_pick) for the op `key` names (op, shapes, dtypes,
 * layout; world size, GPU and version are added), in *best, the same on every rank; -1 when no
 * decision can be made now (a rank is capturing a graph: the caller takes its heuristic).
 * Collective over the world, like the op. Decided once per key and process: the process's table,
 * else an agreed disk entry (<cache dir>/autotune), else timed trials of every candidate on the
 * caller's buffers (autotune.c). */
weft_status_t weft_autotune(weft_comm_t *comm, const char *key, const char *const *names, int n,
                            weft_autotune_run_t run, const void *ctx, CUstream stream, int *best);

/* Frees the table (weft_comm_destroy). */
void weft_autotune_forget(weft_comm_t *comm);

/* The winner among n >= 1 candidates' times (the slowest rank's each): the earliest within 3% of
 * the fastest (autotune.c, step 3: short trials do not order plans that close). */
int weft_autotune_pick(const double *times, int n);

/* The disk entries (<cache dir>/autotune/<sha256 of key>.txt; nothing when the cache is off):
 * the index in names[0..n) of the candidate the entry of `key` names, or -1 (no entry, an entry
 * of another key, a damaged one, a name not among them); writing replaces the entry atomically
 * (a temporary file renamed). key is the full key (weft_autotune adds world, GPU, version). */
int weft_autotune_entry_read(const char *key, const char *const *names, int n);
void weft_autotune_entry_write(const char *key, const char *name);

#endif /* WEFT_PLAN_H */
