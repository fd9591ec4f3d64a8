/*
 * specialisation.c — the GEMM kernel's specialisations (gemm.h): a problem, configuration and
 * hooks as the -D options of kernels/gemm/gemm.cu (what each define means, its values and the
 * combinations the kernel refuses: kernels/gemm/config.cuh) and as the key that finds the
 * communicator's compiled kernel; that kernel, compiled, loaded and sized for its persistent grid
 * on first use; and the kernel that runs a launch (the split tail's or the whole tiles', the
 * workspace reduction in place of a cluster one).
 */
#include "gemm.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../runtime/module.h"
#include "../../runtime/comm.h"
#include "../../runtime/loader.h"
#include "../ops.h"
#include "common.h"

/* ---- the defines ----------------------------------------------------------------------------- */

int weft_gemm_options(const weft_gemm_problem_t *p, const weft_gemm_config_t *c,
                      const weft_gemm_hooks_t *h, char buf[WEFT_GEMM_MAX_OPTIONS][48],
                      const char *opts[WEFT_GEMM_MAX_OPTIONS]) {
  int n = 0;
#define GEMM_DEFINE(name, value)                                                          \
  do {                                                                                    \
    snprintf(buf[n], sizeof buf[n], "-DWEFT_GEMM_" name "=%d", (int)(value));            \
    opts[n] = buf[n];                                                                     \
    n++;                                                                                  \
  } while (0)
  GEMM_DEFINE("BM", c->bm);
  GEMM_DEFINE("BN", c->bn);
  GEMM_DEFINE("A_ROWS", a_rows(c));
  GEMM_DEFINE("STAGES", c->stages);
  GEMM_DEFINE("CLUSTER_M", c->cluster);
  GEMM_DEFINE("EPI_BUFS", c->epi_bufs);
  GEMM_DEFINE("GROUP", c->group);
  GEMM_DEFINE("SPLITK", c->splitk);
  if (k_clustered(c)) GEMM_DEFINE("CLUSTER_K", c->k_splits);
  GEMM_DEFINE("DTYPE_IN", p->in == WEFT_DTYPE_FP16);
  GEMM_DEFINE("OUT", p->out == WEFT_DTYPE_FP32 ? 2 : p->out == WEFT_DTYPE_FP16);
  GEMM_DEFINE("B_KMAJOR", p->b_kmajor != 0);
  if (p->a_mn_major) GEMM_DEFINE("A_KMAJOR", 0);
  if (tail_split(c)) GEMM_DEFINE("TAIL", 1);
  if (h && h->order_table) GEMM_DEFINE("ORDER_TABLE", 1);
  /* (the grouped kernel's wait is its gathered loads': the tile's ranks) */
  if (h && h->wait_signals && h->group_expert) GEMM_DEFINE("GROUP_WAIT", 1);
  if (h && h->wait_signals && !h->group_expert) GEMM_DEFINE("HOOK_WAIT", 1);
  if (h && h->wait_signals && h->a_own) GEMM_DEFINE("A_OWN", 1);
  if (h && h->notify_counters) {
    GEMM_DEFINE("HOOK_NOTIFY", 1);
    if (h->notify_sys) GEMM_DEFINE("NOTIFY_SYS", 1);
    if (h->scatter_stride) GEMM_DEFINE("SCATTER", 1);
  }
  if (h && h->ll_area) GEMM_DEFINE("LL", 1);
  if (h && h->ar_staging) GEMM_DEFINE("AR_OWN", 1);
  if (h && h->ar_staging && h->ar_summers) GEMM_DEFINE("AR_SUMMERS", 1);
  if (h && h->ar_staging && h->ar_cols) GEMM_DEFINE("AR_COLS", 1);
  if (b_read_once(p, c)) GEMM_DEFINE("B_EVICT_FIRST", 1);
  if (c->swap_ab) GEMM_DEFINE("C_T", 1);
  if (h && h->group_expert) GEMM_DEFINE("GROUPED", 1);
  if (h && h->group_expert && h->group_gated) GEMM_DEFINE("GATED", 1);
  if (h && h->group_expert && h->gather_a) GEMM_DEFINE("A_GATHER", 1);
  if (h && h->group_expert && h->combine_weights) {
    GEMM_DEFINE("COMBINE", 1);
    GEMM_DEFINE("COMBINE_W", h->combine_wtype == WEFT_DTYPE_FP32   ? 2
                             : h->combine_wtype == WEFT_DTYPE_FP16 ? 1
                                                                   : 0);
  }
#undef GEMM_DEFINE
  return n;
}

/* ---- specialisations ------------------------------------------------------------------------- */

static void kernel_key(const weft_gemm_problem_t *p, const weft_gemm_config_t *c,
                       const weft_gemm_hooks_t *h, gemm_key_t *k) {
  memset(k, 0, sizeof *k);
  k->cfg = *c;
  if (!k_clustered(c)) k->cfg.k_splits = 0; /* a kernel parameter, not a define */
  k->cfg.tail_splits = tail_split(c);        /* the split count too */
  k->in = (int)p->in, k->out = (int)p->out, k->b_kmajor = p->b_kmajor != 0;
  k->a_mn_major = p->a_mn_major != 0;
  k->b_once = b_read_once(p, c);
  if (h) {
    k->table = h->order_table != NULL, k->wait = h->wait_signals != NULL;
    k->a_own = k->wait && h->a_own != NULL;
    k->notify = h->notify_counters != NULL;
    k->notify_sys = k->notify && h->notify_sys;
    k->scatter = k->notify && h->scatter_stride != 0;
    k->ll = h->ll_area != NULL;
    k->ar_own = h->ar_staging != NULL;
    k->ar_summers = k->ar_own && h->ar_summers;
    k->ar_cols = k->ar_own && h->ar_cols;
    k->grouped = h->group_expert != NULL;
    k->gated = k->grouped && h->group_gated;
    k->combine = k->grouped && h->combine_weights ? 1 + (int)h->combine_wtype : 0;
    k->gather = k->grouped && h->gather_a != NULL;
  }
}

/* The loaded kernel for (p, c, h): looked up by its key on every call (no strings on this path),
 * compiled and loaded on first use. */
static weft_status_t gemm_kernel(weft_comm_t *comm, const weft_gemm_problem_t *p,
                                 const weft_gemm_config_t *c, const weft_gemm_hooks_t *h,
                                 struct weft_gemm_kernel **out) {
  weft_ops_t *o = comm->ops;
  gemm_key_t key;
  kernel_key(p, c, h, &key);
  pthread_mutex_lock(&o->gemm_lock);
  struct weft_gemm_kernel *g;
  for (g = o->gemm_kernels; g; g = g->next)
    if (!memcmp(&g->key, &key, sizeof key)) break;
  weft_status_t st = WEFT_STATUS_SUCCESS;
  if (!g) {
    g = calloc(1, sizeof *g);
    if (!g) {
      st = WEFT_ERR(comm, WEFT_STATUS_OUT_OF_MEMORY, "gemm kernel record");
      goto out;
    }
    g->key = key;
    char buf[WEFT_GEMM_MAX_OPTIONS][48];
    const char *opts[WEFT_GEMM_MAX_OPTIONS];
    int nopts = weft_gemm_options(p, c, h, buf, opts);
    WEFT_CHECK_GOTO(weft_module_load_embedded(comm, "kernels/gemm/gemm.cu", opts, nopts,
                                              &g->module),
                    st, fail);
    WEFT_CHECK_GOTO(weft_module_get_kernel(g->module, "weft_gemm", &g->kernel), st, fail);
    /* The persistent grid is what fits at once: one CTA per SM, and for 2x1 clusters the pairs
     * that the GPCs hold (fewer than SMs / 2 where a GPC has an odd count). */
    size_t smem = weft_gemm_smem_bytes(c);
    CUresult r = weft_cu.cuFuncSetAttribute(g->kernel->function,
                                            CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, (int)smem);
    if (r != CUDA_SUCCESS) {
      st = weft_cu_error(comm, r, "cuFuncSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES)", __FILE__, __LINE__);
      goto fail;
    }
    __atomic_store_n(&g->kernel->max_dynamic_smem, smem, __ATOMIC_RELEASE);
    int cs = cluster_size(c);
    CUlaunchAttribute at = {.id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION};
    at.value.clusterDim.x = (unsigned)cs, at.value.clusterDim.y = at.value.clusterDim.z = 1;
    CUlaunchConfig lc = {.gridDimX = (unsigned)(o->gpu.sms / cs * cs), .gridDimY = 1,
                         .gridDimZ = 1, .blockDimX = GEMM_THREADS, .blockDimY = 1, .blockDimZ = 1,
                         .sharedMemBytes = (unsigned)smem, .attrs = &at, .numAttrs = 1};
    r = weft_cu.cuOccupancyMaxActiveClusters(&g->max_clusters, g->kernel->function, &lc);
    if (r != CUDA_SUCCESS) {
      st = weft_cu_error(comm, r, "cuOccupancyMaxActiveClusters", __FILE__, __LINE__);
      goto fail;
    }
    if (g->max_clusters < 1) {
      st = WEFT_ERR(comm, WEFT_STATUS_NOT_SUPPORTED, "gemm BM=%d BN=%d: no cluster of %d CTAs fits",
                    c->bm, c->bn, cs);
      goto fail;
    }
    WEFT_TRACE("gemm BM=%d BN=%d stages %d cluster %d splitk %d: %d co-resident clusters", c->bm,
               c->bn, c->stages, cs, c->splitk, g->max_clusters);
    g->next = o->gemm_kernels;
    o->gemm_kernels = g;
  }
  goto out;
fail:
  if (g->module) weft_module_discard(g->module);
  free(g);
  g = NULL;
out:
  pthread_mutex_unlock(&o->gemm_lock);
  *out = g;
  return st;
}

weft_status_t weft_gemm_resolve(weft_comm_t *comm, const weft_gemm_problem_t *p,
                                const weft_gemm_config_t **cfg, const weft_gemm_hooks_t *h,
                                weft_gemm_config_t *tmp, struct weft_gemm_kernel **g,
                                int *tail_tiles, int *tail_ks) {
  const weft_gemm_config_t *c = *cfg;
  *tail_tiles = 0, *tail_ks = 1;
  if (tail_split(c)) {
    *tmp = *c, tmp->tail_splits = 0;
    WEFT_CHECK(gemm_kernel(comm, p, tmp, h, g));
    *tail_tiles = weft_gemm_tail(p, c, grid_clusters(c, h, *g), comm->ops->gemm_ws_floats,
                                 comm->ops->gemm_ws_counters, tail_ks);
    if (!*tail_tiles) {
      *cfg = tmp;
      return WEFT_STATUS_SUCCESS;
    }
    struct weft_gemm_kernel *t = __atomic_load_n(&(*g)->tail, __ATOMIC_ACQUIRE);
    if (!t) {
      WEFT_CHECK(gemm_kernel(comm, p, c, h, &t));
      __atomic_store_n(&(*g)->tail, t, __ATOMIC_RELEASE);
    }
    *g = t;
    return WEFT_STATUS_SUCCESS;
  }
  int clustered = k_clustered(c);
  if (clustered && h && h->notify_counters) {
    *tmp = *c, tmp->splitk_cluster = 0, c = tmp, clustered = 0;
  }
  WEFT_CHECK(gemm_kernel(comm, p, c, h, g));
  long long tiles = (long long)((p->m + c->bm - 1) / c->bm) * ((p->n + c->bn - 1) / c->bn);
  if (clustered && !(h && h->sms) && tiles > (*g)->max_clusters) {
    *tmp = *c, tmp->splitk_cluster = 0, c = tmp;
    /* remembered in the cluster kernel's record: one lookup per call, not two */
    struct weft_gemm_kernel *w = __atomic_load_n(&(*g)->workspace, __ATOMIC_ACQUIRE);
    if (!w) {
      WEFT_CHECK(gemm_kernel(comm, p, c, h, &w));
      __atomic_store_n(&(*g)->workspace, w, __ATOMIC_RELEASE);
    }
    *g = w;
  }
  *cfg = c;
  return WEFT_STATUS_SUCCESS;
}

weft_status_t weft_gemm_prepare(weft_comm_t *comm, const weft_gemm_problem_t *p,
                                const weft_gemm_config_t *cfg, const weft_gemm_hooks_t *hooks) {
  struct weft_gemm_kernel *g;
  weft_gemm_config_t tmp;
  int tail_tiles, tail_ks;
  WEFT_CHECK(weft_comm_make_current(comm));
  weft_gemm_problem_t t;
  p = weft_gemm_kernel_problem(p, cfg, &t);
  return weft_gemm_resolve(comm, p, &cfg, hooks, &tmp, &g, &tail_tiles, &tail_ks);
}
