/*
 * common.h — what the GEMM launcher's files (config.c, specialisation.c, launch.c) share, and no
 * other file includes: the kernel's block size and k-block, what a configuration implies (the
 * kernel reads the same from its defines, kernels/gemm/config.cuh), the records of the compiled
 * kernels, and the choice of the kernel that runs a launch.
 */
#ifndef WEFT_OPS_GEMM_COMMON_H
#define WEFT_OPS_GEMM_COMMON_H

#include "gemm.h"

#define GEMM_THREADS 384 /* one producer and two consumer warpgroups */
#define GEMM_BK 64

/* What makes a specialisation (kernel_key fills it; compared whole, padding zeroed): the
 * configuration without its run-time split count, the dtypes, the layout, whether B is read once
 * and the hooks present. */
typedef struct gemm_key {
  weft_gemm_config_t cfg;
  int in, out, b_kmajor, a_mn_major, b_once, table, wait, a_own, notify, notify_sys, scatter, ll,
      ar_own, ar_summers, ar_cols, grouped, gated, combine /* 1 + the weights' dtype */, gather;
} gemm_key_t;

struct weft_gemm_kernel {
  gemm_key_t key;
  struct weft_module *module;
  struct weft_kernel *kernel;
  int max_clusters; /* co-resident clusters: the persistent grid */
  /* a cluster reduction's kernel: the workspace reduction of the same splits, once looked up;
   * a whole-tile kernel's: the split-tail one (WEFT_GEMM_TAIL), once a launch splits its tail */
  struct weft_gemm_kernel *workspace, *tail;
  struct weft_gemm_kernel *next;
};

static inline int out_size(weft_dtype_t t) { return t == WEFT_DTYPE_FP32 ? 4 : 2; }

/* Rows of A per ring stage (a_rows 0: the tile's). */
static inline int a_rows(const weft_gemm_config_t *c) { return c->a_rows ? c->a_rows : c->bm; }

/* The columns of a consumer warpgroup's part of a tile. */
static inline int wg_n(const weft_gemm_config_t *c) { return c->bm == 128 ? c->bn : c->bn / 2; }

/* Whether the splits of a tile reduce inside one cluster (WEFT_GEMM_CLUSTER_K). */
static inline int k_clustered(const weft_gemm_config_t *c) {
  return c->splitk && c->splitk_cluster && c->k_splits > 1;
}

/* Whether the grid reads each byte of B once (one cluster tile row: WEFT_GEMM_B_EVICT_FIRST). */
static inline int b_read_once(const weft_gemm_problem_t *p, const weft_gemm_config_t *c) {
  return p->m <= c->bm * c->cluster;
}

/* Whether the kernel splits its last wave's tiles (WEFT_GEMM_TAIL). */
static inline int tail_split(const weft_gemm_config_t *c) {
  return !c->splitk && c->tail_splits > 1;
}

/* The CTAs of a cluster: 2 along M, or a tile's splits. */
static inline int cluster_size(const weft_gemm_config_t *c) {
  return c->cluster * (k_clustered(c) ? c->k_splits : 1);
}

/* Whether C can take TMA stores: a 16-byte-multiple row stride and row (16-byte alignment the
 * checks require of every pointer). A row of n elements that ends inside a 16-byte unit is not
 * enough: the TMA store writes the whole unit (measured on H100: fp32 C with n = 26 and ldc = 28
 * had columns 26 and 27 written). Otherwise the direct-store epilogue writes C. */
static inline int c_takes_tma(const weft_gemm_problem_t *p) {
  return p->ldc * out_size(p->out) % 16 == 0 && p->n * out_size(p->out) % 16 == 0;
}

/* C as the LL epilogue writes it: contiguous rows of whole 8-byte words. */
static inline int ll_rows(const weft_gemm_problem_t *p) {
  return p->ldc == p->n && p->n * out_size(p->out) % 8 == 0;
}

/* The clusters a launch of g runs: the SM budget's, at most the co-resident ones. */
static inline int grid_clusters(const weft_gemm_config_t *c, const weft_gemm_hooks_t *h,
                                const struct weft_gemm_kernel *g) {
  int clusters = h && h->sms ? h->sms / cluster_size(c) : g->max_clusters;
  if (clusters > g->max_clusters) clusters = g->max_clusters;
  return clusters < 1 ? 1 : clusters;
}

/* The configuration that runs (*cfg, or *tmp), its loaded kernel and the launch's split tail
 * (weft_gemm_tail: *tail_tiles cluster tiles in *tail_ks splits; 0 and 1 without). A split-tail
 * configuration runs the split-tail kernel only where this launch splits a tail, else the
 * whole-tile kernel: the tail's decode slowed the producer thread of 128-column tiles
 * with hooks (H100: wait +2-3%). A cluster reduction becomes the workspace reduction of the same
 * splits (the same sums) under a notify hook, whose contract (+1 per stored sub-tile) is the
 * workspace reduction's, and where the GPCs cannot hold all of its clusters at once (clusters of
 * 3 CTAs on an H100 ran a second wave: 1.2x the time). */
weft_status_t weft_gemm_resolve(weft_comm_t *comm, const weft_gemm_problem_t *p,
                                const weft_gemm_config_t **cfg, const weft_gemm_hooks_t *h,
                                weft_gemm_config_t *tmp, struct weft_gemm_kernel **g,
                                int *tail_tiles, int *tail_ks);

#endif
