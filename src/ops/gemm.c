/*
 * gemm.c — weft_gemm and the launcher the overlapped ops share (gemm.h): argument checks, the
 * shape heuristic, the specialisations of kernels/gemm.cu (see its launch contract), tensor
 * maps and the launch. Shapes: A [m, k] (row stride lda), B [n, k] or [k, n] (ldb), C [m, n]
 * (ldc), all row-major, strides in elements.
 */
#include "gemm.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../runtime/module.h"
#include "../runtime/comm.h"
#include "../runtime/loader.h"
#include "ops.h"

#define GEMM_THREADS 384 /* one producer and two consumer warpgroups */
#define GEMM_BK 64
/* memory bandwidth an SM from which decode tiles are chosen as for fast memory (H200: 36 GB/s,
 * H100 SXM: 25; weft_gemm_config_choose) */
#define GEMM_FAST_HBM_GBPS_PER_SM 30
/* k-blocks from which 64 < m <= 128 takes 128-row tiles in 2 clustered splits over 64-row tiles
 * (weft_gemm_config_choose) */
#define GEMM_MID_SPLIT_MIN_KB 172
/* k-blocks a split of a 64-column decode tile takes at least to run through the workspace where
 * its clustered splits would not fit at once, with memory fast for the SMs and slow
 * (weft_gemm_config_choose) */
#define GEMM_WS_SPLIT_MIN_KB_FAST 24
#define GEMM_WS_SPLIT_MIN_KB_SLOW 40
/* the largest A and B (bytes) whose launch is programmatic (weft_gemm_launch) */
#define GEMM_PDL_MAX_BYTES (24.0 * (1 << 20))
/* The split tail (WEFT_GEMM_TAIL): at most 4 splits a tile; the partials' round trip (write,
 * counter, the last split's reads: 8-9 us on H100) costs about 11 k-blocks of a 256-column tile,
 * in k-blocks x columns (H100, 2026-11-25: 128- and 256-column tiles, k = 4096, dev/gemm/NOTES.md) */
#define GEMM_TAIL_SPLITS 4
#define GEMM_TAIL_COST (11 * 256)
/* what the width choice charges the split tail instead (weft_gemm_config_choose) */
#define GEMM_TAIL_CHOICE_COST (18 * 256)
/* the largest m the transposed product (swap_ab) takes: measured faster than 128-row tiles up to
 * 416 rows, and up to 53% slower at 576-1000 (H200, dev/gemm/NOTES.md) */
#define GEMM_SWAP_MAX_M 512

/* What makes a specialisation (kernel_key fills it; compared whole, padding zeroed): the
 * configuration without its run-time split count, the dtypes, the layout, whether B is read once
 * and the hooks present. */
typedef struct gemm_key {
  weft_gemm_config_t cfg;
  int in, out, b_kmajor, a_mn_major, b_once, table, wait, a_own, notify, notify_sys, scatter, ll,
      ar_own, ar_summers, ar_cols;
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

static int out_size(weft_dtype_t t) { return t == WEFT_DTYPE_FP32 ? 4 : 2; }

/* Rows of A per ring stage (a_rows 0: the tile's). */
static int a_rows(const weft_gemm_config_t *c) { return c->a_rows ? c->a_rows : c->bm; }

/* The columns of a consumer warpgroup's part of a tile. */
static int wg_n(const weft_gemm_config_t *c) { return c->bm == 128 ? c->bn : c->bn / 2; }

/* Whether the splits of a tile reduce inside one cluster (WEFT_GEMM_CLUSTER_K). */
static int k_clustered(const weft_gemm_config_t *c) {
  return c->splitk && c->splitk_cluster && c->k_splits > 1;
}

/* Whether the grid reads each byte of B once (one cluster tile row: WEFT_GEMM_B_EVICT_FIRST). */
static int b_read_once(const weft_gemm_problem_t *p, const weft_gemm_config_t *c) {
  return p->m <= c->bm * c->cluster;
}

/* Whether the kernel splits its last wave's tiles (WEFT_GEMM_TAIL). */
static int tail_split(const weft_gemm_config_t *c) { return !c->splitk && c->tail_splits > 1; }

/* The split tail of a grid of `clusters` clusters over `work` cluster tiles of nkb k-blocks and
 * bn columns: the cluster tiles of the last, partly filled wave (*tiles) and their splits
 * (*splits), at most max_splits, one item per cluster at most, 8 k-blocks a split at least, and
 * within the workspace (floats per split tile, tiles a cluster tile); only where the k-blocks the
 * last wave no longer waits for outweigh the partials' round trip. 0 tiles, 1 split otherwise. */
static void tail_plan(long long work, long long clusters, long long nkb, int bn, int max_splits,
                      long long split_floats, int cluster_tiles, size_t ws_floats, int ws_counters,
                      int *tiles, int *splits) {
  long long t = work % clusters, s = t ? clusters / t : 0;
  if (s > max_splits) s = max_splits;
  if (s > nkb / 8) s = nkb / 8;
  while (s > 1 && (size_t)(t * cluster_tiles * s * split_floats) > ws_floats) s--;
  if (s < 2 || t * cluster_tiles > ws_counters || (nkb - nkb / s) * bn <= GEMM_TAIL_COST) t = 0, s = 1;
  *tiles = (int)t, *splits = (int)s;
}

int weft_gemm_tail(const weft_gemm_problem_t *p, const weft_gemm_config_t *c, int clusters,
                   size_t ws_floats, int ws_counters, int *splits) {
  int tiles = 0;
  *splits = 1;
  if (tail_split(c) && clusters > 0) {
    long long work = (long long)(((p->m + c->bm - 1) / c->bm + c->cluster - 1) / c->cluster) *
                     ((p->n + c->bn - 1) / c->bn);
    tail_plan(work, clusters, (p->k + GEMM_BK - 1) / GEMM_BK, c->bn, c->tail_splits,
              (long long)c->bm * c->bn, c->cluster, ws_floats, ws_counters, &tiles, splits);
  }
  return tiles;
}

/* The CTAs of a cluster: 2 along M, or a tile's splits. */
static int cluster_size(const weft_gemm_config_t *c) {
  return c->cluster * (k_clustered(c) ? c->k_splits : 1);
}

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

/* ---- heuristic --------------------------------------------------------------------------------- */

size_t weft_gemm_smem_bytes(const weft_gemm_config_t *c) {
  size_t stage = (size_t)a_rows(c) * GEMM_BK * 2 + (size_t)c->bn * GEMM_BK * 2;
  /* the epilogue's staging boxes, or the partials a cluster reduction receives */
  size_t epi = !c->splitk ? 2 * (size_t)c->epi_bufs * 8192
               : k_clustered(c)
                   ? (size_t)(c->k_splits - 1) * ((wg_n(c) / 8 + c->k_splits - 1) / c->k_splits) * 4096
                   : 0;
  return (size_t)c->stages * stage + epi + 16 * (size_t)c->stages + 128 + 1024;
}

uint64_t weft_gemm_notify_units(const weft_gemm_problem_t *p, const weft_gemm_config_t *c) {
  int tiles_n = (p->n + c->bn - 1) / c->bn;
  if (c->bm == 128) return (uint64_t)tiles_n; /* one warpgroup per 64-row half, full width */
  /* BM = 64: one warpgroup per BN/2-column half, none for a half wholly past n */
  return (uint64_t)tiles_n + (uint64_t)(tiles_n - 1) + ((tiles_n - 1) * c->bn + c->bn / 2 < p->n);
}

/* Whether C can take TMA stores: a 16-byte-multiple row stride and row (16-byte alignment the
 * checks require of every pointer). A row of n elements that ends inside a 16-byte unit is not
 * enough: the TMA store writes the whole unit (measured on H100: fp32 C with n = 26 and ldc = 28
 * had columns 26 and 27 written). Otherwise the direct-store epilogue writes C. */
static int c_takes_tma(const weft_gemm_problem_t *p) {
  return p->ldc * out_size(p->out) % 16 == 0 && p->n * out_size(p->out) % 16 == 0;
}

/* The large-m tile widths: stages and staging boxes for each, and the per-width cost of the
 * wave model (weft_gemm_config_choose): 1 + 0.04 (256 / width - 1), 1.05 for 128 (fitted, with
 * the model, to an H100 sweep; dev/gemm/NOTES.md). Widths between the multiples of 64 fit a tile
 * row to n (8192x1376: 8 tiles of 176 columns cover 1408, 6 of 256 1536); their last staging box
 * overlaps the one before it (kernels/gemm.cu, WEFT_GEMM_BOX_COL). [k, n] B takes the multiples
 * of 64 (cost_kn; 0: not), where 192 columns cost no more than 256 (H200, two runs of the 21
 * large shapes of weft-bench gemm with [k, n] B on 256, 192 and 128, each width in the same run:
 * 192 ahead by 1-4% on seven, 8192x7392x8192 -2.7% / -1.3%, at most 2.5% behind on the others;
 * bench/results/2026-11-26-gemm-kn-h200x4.md). */
static const struct gemm_width {
  int bn, stages, epi;
  double cost, cost_kn;
} gemm_widths[] = {{256, 4, 2, 1.0, 1.0}, {240, 4, 2, 1.003, 0}, {224, 4, 2, 1.006, 0},
                   {208, 4, 2, 1.009, 0}, {192, 4, 3, 1.013, 1.0}, {176, 4, 3, 1.018, 0},
                   {128, 6, 2, 1.05, 1.05}};
#define GEMM_WIDTHS (int)(sizeof gemm_widths / sizeof gemm_widths[0])

/* What every configuration must satisfy: EPI_BUFS divides the warpgroup's output boxes
 * (WG_N * outsize / 128, rounded up); the stages fit shared memory. */
static void config_fit(const weft_gemm_problem_t *p, weft_gemm_config_t *c) {
  int boxes = (wg_n(c) * out_size(p->out) + 127) / 128;
  if (boxes < 1) boxes = 1;
  if (c->epi_bufs > boxes) c->epi_bufs = boxes;
  while (boxes % c->epi_bufs) c->epi_bufs--;
  while (weft_gemm_smem_bytes(c) > WEFT_GEMM_MAX_SMEM && c->stages > 2) c->stages--;
}

/* Whether `tiles` fill 3/4 to all of the SMs in one wave. */
static int fills_one_wave(long long tiles, int sms) {
  return tiles <= sms && 4 * tiles >= 3LL * sms;
}

/* c as 128 x 64 tiles, unclustered, unsplit, with as many stages as fit (config_fit after). */
static void tiles_128x64(weft_gemm_config_t *c) {
  c->bm = 128, c->bn = 64, c->a_rows = 0, c->cluster = 1, c->tail_splits = 0;
  c->splitk = 0, c->k_splits = 1, c->splitk_cluster = 0;
  c->stages = WEFT_GEMM_MAX_STAGES, c->epi_bufs = 1;
}

/* The most splits of nkb k-blocks: at least 16 k-blocks a split, or 8 for two. */
static long long k_split_cap(long long nkb) {
  return nkb / 16 >= 2 ? nkb / 16 : nkb / 8 >= 2 ? 2 : 1;
}

/* ks splits of a tile's k within k_split_cap and with whole partial tiles of every split inside
 * the communicator's workspace (tiles tiles of bm x bn). */
static long long k_splits_fit(long long ks, long long tiles, long long nkb, int bm, int bn,
                              size_t ws_floats, int ws_counters) {
  if (ks > k_split_cap(nkb)) ks = k_split_cap(nkb);
  while (ks > 1 && (tiles > ws_counters || (size_t)(ks * tiles * bm * bn) > ws_floats)) ks--;
  return ks < 1 ? 1 : ks;
}

/* The transposed product's configuration (swap_ab) for 128 < m <= GEMM_SWAP_MAX_M: 128-row
 * tiles along n and tiles of m's columns, each a multiple of 16 wide, from 80 to 256 (three of 64
 * ran 160 x 5504 x 4096 1.17x slower than the 128-row tiles, H200). The count of column tiles
 * (the fewest that take m, or up to two more) and the k-splits are those whose waves cost least,
 * a wave costing the tile's width + 32 (the A rows it loads besides) and a split 5% more for its
 * partials' round trip, with split tiles in one wave at most (288 x 3584 x 4096 in 3 splits over
 * two waves: 1.30x) and splits through the workspace (3, 5-7) of 64 k-blocks at least (160 x
 * 5504 x 4096 and 288 x 2752 x 4096 in 3 of 21: 1.04-1.17x; 160 x 5120 x 13312 in 3 of 69:
 * 0.82x). On 132 SMs: 160 x 8192 (64 tiles) in 2 splits, 160 x 5120 (40) in 3, 288 x 8192 in two
 * column tiles of 144 (128 tiles), 288 x 5120 in three of 96 (120 tiles) rather than two (80).
 * Splits of 2, 4 or 8 reduce in a cluster where that leaves 4 stages of the ring (the partials
 * received take shared memory) and the clusters fit at once (weft_ops_gpu_t.clusters; more
 * would run the workspace reduction at launch), else in the workspace. */
static void config_swapped(const weft_gemm_problem_t *p, const weft_ops_gpu_t *gpu,
                           size_t ws_floats, int ws_counters, weft_gemm_config_t *c) {
  weft_gemm_problem_t t = weft_gemm_problem_swapped(p);
  int sms = gpu->sms;
  long long tiles_m = (t.m + 127) / 128, nkb = (p->k + GEMM_BK - 1) / GEMM_BK;
  int fewest = (t.n + 255) / 256; /* 129-256 rows: 1 at 129 wide or more; 257-512: 2 */
  double best = 0;
  weft_gemm_config_t s;
  memset(&s, 0, sizeof s);
  s.bm = 128, s.group = 8, s.epi_bufs = 2, s.cluster = 1, s.splitk = 1, s.swap_ab = 1;
  for (int cols = fewest; cols <= fewest + 2; cols++) {
    s.bn = ((t.n + cols - 1) / cols + 15) / 16 * 16;
    if (s.bn < 80) break;
    long long tiles = tiles_m * cols;
    long long kmax = k_splits_fit(8, tiles, nkb, 128, s.bn, ws_floats, ws_counters);
    for (long long ks = 1; ks <= kmax && (ks == 1 || tiles * ks <= sms); ks++) {
      s.k_splits = (int)ks;
      s.splitk_cluster = (ks == 2 || ks == 4 || ks == 8) && ks <= wg_n(&s) / 8 &&
                         tiles <= weft_ops_gpu_clusters(gpu, (int)ks);
      for (;; s.splitk_cluster = 0) {
        s.stages = WEFT_GEMM_MAX_STAGES;
        config_fit(&t, &s);
        if (!s.splitk_cluster || s.stages >= 4) break;
      }
      if (ks > 1 && !s.splitk_cluster && nkb / ks < 64) continue;
      double cost = (double)((tiles * ks + sms - 1) / sms) / (double)ks * (s.bn + 32) *
                    (ks > 1 ? 1.05 : 1.0);
      if (best == 0 || cost < best) best = cost, *c = s;
    }
  }
}

/* Whether the transposed product s runs p on `sms` SMs (H200 and H100, each against the 128-row
 * tiles in the same call, dev/gemm/NOTES.md): its column tiles must pad m by at least a
 * sixth less than 128-row tiles do (m = 129-208, 288-320 and 416 on the layers' large (n, k)
 * 0-29% faster with either B; 224 and 448, an eighth less, -9% to +9%; 576, a tenth, -6% to
 * +20%; whole 128-row tiles up to 26% slower). Below a quarter less (208, 320, 416 rows) the
 * saving pays for splitting k only over 64 k-blocks a split at least (208 x 8192 x 3584 and
 * 416 x 4096 x 1376-3584, 11-29 a split, 2-25% slower, where 160 and 288 rows gained 7-35% in the
 * same splits; 58-128 a split 0.80-1.01x), and not for a wave under 85% full (416 x 6656 x
 * 16384, 104 tiles: +5%). Where memory is slow for the SMs (fast_hbm 0: the H100) only past two
 * 128-row tile rows, where the two rows are the memory's time, not the padding's (288-416 rows
 * 10-27% faster, 129-208 -8% to +8%). */
static int swap_takes(const weft_gemm_problem_t *p, const weft_gemm_config_t *s, int sms,
                      int fast_hbm) {
  int rows = (p->m + 127) / 128 * 128, width = (p->m + s->bn - 1) / s->bn * s->bn;
  long long items = (long long)((p->n + 127) / 128) * ((p->m + s->bn - 1) / s->bn) * s->k_splits,
            waves = (items + sms - 1) / sms, nkb = (p->k + GEMM_BK - 1) / GEMM_BK;
  int quarter = 4 * (rows - width) >= rows;
  return 6 * (rows - width) >= rows && (fast_hbm || p->m > 256) &&
         (quarter || (s->k_splits > 1 ? nkb / s->k_splits >= 64 : 100 * items >= 85 * waves * sms));
}

/* Small M (decode) streams B from HBM: what matters is how many SMs stream it and how little work
 * is left after the stream (the split-K reduction). The H100 sweeps (dev/gemm/NOTES.md) found the
 * best at about 45-130 CTAs: for m <= 16 BM=64 BN=64 (BN=128 with [k, n] B) with splits up to the
 * SMs (with the 16-stage ring of A_ROWS tiles, 2 splits of 64 columns beat 3 of 128 on 4 of the 6
 * decode shapes measured, 2026-11-23); above, the
 * largest tile that still gives enough tiles (2/5 of the SMs for m <= 64, half for m <= 128;
 * 128x64 for m > 64 where those fill at most half the SMs), then splits up to
 * about two thirds of the SMs, 2 once the tiles fill 2/5 of the SMs and while twice them fit;
 * splits of 2, 4 or 8 reduce inside a cluster (2026-11-25). [k, n] B has no
 * 32-column warpgroup tiles (BM=64 BN=64). Large M: 128x256 tiles, 2x1 clusters multicasting B
 * (none for an odd count of tile rows), 4 stages (the fast.cu ladder; 1.00-1.09x cuBLAS on the
 * large shapes of weft-bench gemm). Between them, 128 < m <= 512 without hooks: the transposed
 * product where its column tiles pad m less (config_swapped, swap_takes). */
void weft_gemm_config_choose(const weft_gemm_problem_t *p, const weft_ops_gpu_t *gpu,
                             size_t ws_floats, int ws_counters, int hooked, weft_gemm_config_t *c) {
  int sms = gpu->sms, fast_hbm = gpu->hbm_gbps >= GEMM_FAST_HBM_GBPS_PER_SM * sms;
  if (!hooked && p->m > 128 && p->m <= GEMM_SWAP_MAX_M) {
    config_swapped(p, gpu, ws_floats, ws_counters, c);
    if (swap_takes(p, c, sms, fast_hbm)) return;
  }
  memset(c, 0, sizeof *c);
  c->group = 8;
  c->epi_bufs = 2;
  c->k_splits = 1;
  if (p->m <= 128) {
    static const int tiny[][2] = {{64, 64}, {64, 128}}, small[][2] = {{64, 128}, {64, 64}},
                     mid[][2] = {{128, 128}, {64, 128}, {64, 64}};
    const int(*cand)[2] = p->m <= 16 ? tiny : p->m <= 64 ? small : mid;
    int ncand = p->m <= 16 ? 1 : p->m <= 64 ? 2 : 3;
    if (p->m <= 16 && !p->b_kmajor) cand = small; /* [k, n] B: no 32-column warpgroup tiles */
    /* (m <= 64: 64x128 tiles from 2/5 of the SMs, then split in 2, read B at the rate of twice
     * as many 64x64 tiles: H200, graphs, cold, same run, 2026-11-26: 64x8192x3696 21.5 -> 19.8
     * us, 64x7168x8192 34.4 -> 32.8, 64x7392x8192 and 64x8192x7392 -5%; three quarters of the
     * SMs before) */
    int enough = p->m <= 64 ? 2 * sms / 5 : sms / 2, target = p->m <= 16 ? sms : 2 * sms / 3;
    if (!p->b_kmajor && ncand > 1) ncand--; /* drop BM=64 BN=64 */
    long long tiles = 1;
    for (int i = 0; i < ncand; i++) {
      c->bm = cand[i][0], c->bn = cand[i][1];
      tiles = (long long)((p->m + c->bm - 1) / c->bm) * ((p->n + c->bn - 1) / c->bn);
      if (tiles >= enough) break;
    }
    /* 64 < m <= 128 with few tile columns: one 128-row tile per column, split in a cluster,
     * rather than two 64-row tiles, each reading its B tile again (H100, graphs, cold:
     * 128x1792x4096 10.6 us against 14.2 for 56 unsplit 64x64 tiles, 128x2752x4096 12.2 against
     * 14.2; 96x1792x4096 -20%), up to one such tile per two SMs. There the H100 had 112 64x64
     * tiles 1-2% ahead at n = 3584, 4096, but the H200's faster HBM turns it round (graphs,
     * cold, same run, 2026-11-26: 128x3584x4096 14.2 -> 11.6 us, 128x3584x8192 26.0 -> 20.5,
     * 128x3696x8192 30 -> 21.7, 128x4096x3584 12.9 -> 11.5). With [k, n] B (H100, 2026-11-25:
     * 128x4096xk, k = 2752-7168, 128x64 in 2 clustered splits 11.7-24.6 us against 12.8-26.8
     * for 64x128 in 2, and -8 to -10% at m = 80-112). At n = 8192 64x128 unsplit stays ahead.
     * Over at most 28 k-blocks 64x64 tiles (with 10 stages, below) from 2/5 of the SMs stay
     * ahead where memory is slow for the SMs (H100, 25 GB/s an SM, same run: 128x4096x1376 7.9
     * against 8.3 us, 128x4096x1792 8.9 against 9.3), not where it is fast (H200, 36 GB/s an SM,
     * graphs, cold, same runs, six runs, 2026-11-26: 128x64 in 2 splits 2-6% ahead on both). */
    long long col64 = (p->n + 63) / 64, nkb = (p->k + GEMM_BK - 1) / GEMM_BK;
    if (p->m > 64 &&
        (col64 * 5 < 2LL * sms || (col64 * 2 <= sms && (nkb > 28 || !p->b_kmajor || fast_hbm))))
      c->bm = 128, c->bn = 64;
    /* (with more, 64x128 tiles beat 128x64: half the A rows a tile, which matters most where
     * k is no multiple of 64 and A's rows no multiple of 128 bytes: 128x8192x3696 -9.6%,
     * 128x8192x7392 -9.3%, 128x8192x3584 and 128x7392x8192 -0.5%) */
    /* Over long k with fast memory, where 128x128 tiles fill under half the SMs but twice them
     * fit: 128x128 in 2 clustered splits (the split rule below gives 2) rather than 64x128
     * tiles, whose two row halves each stream the same B tile (H200, same runs, 2026-11-26,
     * bench/results/2026-11-26v-stop34.md section 6: [k, n] B 128x5120x13312 49.9 -> 41.9 us,
     * 128x8192x14336 71.3-72.1 -> 65.5, 128x8192x28672 133-134 -> 122, 80x8192x13312 -12%;
     * [n, k] B up to 19% faster, 128x8192x11008 within 1.5%; at k = 8192-10240 within 1.5%
     * either way, 7168 +3%, 3584 +9%). Not on the H100 (25 GB/s an SM), where 64x128 tiles
     * stayed up to 7% ahead on 6 of the 8 shapes with [k, n] B, and within 4% either way with
     * [n, k] B, in the same runs. */
    if (p->m > 64 && c->bm == 64 && fast_hbm && nkb >= GEMM_MID_SPLIT_MIN_KB &&
        2 * ((p->n + 127) / 128) <= sms)
      c->bm = 128, c->bn = 128;
    tiles = (long long)((p->m + c->bm - 1) / c->bm) * ((p->n + c->bn - 1) / c->bn);
    /* splits up to the target; from 2/5 of the SMs in tiles 2 splits while they fit at once
     * (H100, graphs, cold: 64 tiles as fast in 2 clustered splits as whole at k = 2752-4096,
     * 5-11% faster at k = 1376-1792, 64x4096x1376 7.5 us against 8.4); at least 16 k-blocks a
     * split, or 8 for two */
    long long ks = tiles * 5 < 2LL * sms ? (target + tiles / 2) / tiles : 2 * tiles <= sms ? 2 : 1;
    ks = k_splits_fit(ks, tiles, nkb, c->bm, c->bn, ws_floats, ws_counters);
    long long kcap = k_split_cap(nkb);
    /* A tile's splits reduce in one cluster, through shared memory: the workspace round trip
     * (fence, counter, re-read) was 2-4 us of a 10-15 us decode call (dev/gemm/NOTES.md). Clusters
     * of 2, 4 or 8 CTAs, which a GPC's SMs hold evenly (43 clusters of 3 did not fit at once on
     * an H100), so 3 to 7 splits round up where the CTAs still fit at once and the k-blocks
     * allow (128x1792x4096: 4 splits of 28 tiles 9.5 us, 2 splits 11.0), else down (2
     * clustered splits beat 3 through the workspace by 4% at m = 1 and 16, n = 2752, k = 4096;
     * H100, 2026-11-25). */
    int cluster_max = wg_n(c) / 8 < 8 ? wg_n(c) / 8 : 8;
    if (ks > 2 && ks <= cluster_max) {
      long long up = ks > 4 ? 8 : 4;
      ks = up <= cluster_max && up * tiles <= sms && up <= kcap ? up : up / 2;
    }
    /* Where the GPCs hold fewer such clusters than tiles (H100 and H200: 30 of 4 CTAs, 15 of 8,
     * so 32 tiles in 4 splits or 16 in 8 at n = 2048-4096), the splits would run through the
     * workspace at launch: half as many in clusters instead, except 64-column tiles over long
     * splits, where twice the CTAs stream B faster than the workspace's round trip costs, from
     * 24 k-blocks a split with fast memory and 40 with slow (graphs, cold, same runs,
     * 2026-11-26, bench/results/2026-11-26y-stop37.md: half as many clustered against the
     * workspace's splits, 64x64 and 128x64 tiles, on the H200 at 16 k-blocks a split 3-7%
     * faster, at 24 1-3% slower, at 32-40 7-14% slower; on the H100 at 16-32 1% slower to 15%
     * faster, at 40 4% faster to 5% slower; 64x128 tiles of [k, n] B at 16-40 k-blocks 2-25%
     * faster on both, at 56 4% faster to 1% slower; [k, n] 1x2048x8192 15.4 -> 11.9 us on the
     * H200, 18.7 -> 14.5 on the H100). */
    int ws_min_kb = fast_hbm ? GEMM_WS_SPLIT_MIN_KB_FAST : GEMM_WS_SPLIT_MIN_KB_SLOW;
    while ((ks == 4 || ks == 8) && ks <= cluster_max &&
           tiles > weft_ops_gpu_clusters(gpu, (int)ks) && (c->bn > 64 || nkb / ks < ws_min_kb))
      ks /= 2;
    c->k_splits = (int)ks;
    c->splitk_cluster = (ks == 2 || ks == 4 || ks == 8) && ks <= cluster_max &&
                        tiles <= weft_ops_gpu_clusters(gpu, (int)ks);
    /* 32-column warpgroup tiles exist only in the direct-store (split-K) kernel */
    c->splitk = ks > 1 || wg_n(c) == 32;
    c->cluster = 1;
    /* B streams from memory: the ring should hold B, not A's zero rows (a 64-row tile for m <= 32
     * loads only the rows that exist, rounded to a swizzle atom) */
    if (c->bm == 64 && p->m <= 32) c->a_rows = p->m <= 8 ? 8 : p->m <= 16 ? 16 : 32;
    /* Split tiles stream faster through a shorter ring (H100, graphs, cold, same run, 80 decode
     * shapes: 8 stages against 13-16: 64x2752x4096 0.888x -> 0.965x, 1x3584x4096 0.928x ->
     * 0.977x, 16x2752x4096 1.03x -> 1.14x, none slower beyond the noise; 10 stages about the
     * same, 6 worse). Unsplit tiles keep as many as fit (128x3584x4096 at 7 stages: -12%),
     * except two 64-row tile rows over at most 28 k-blocks: 10 stages (H100, graphs, cold, two
     * runs: 128x4096x1376 -1.9% and -2.0%, 128x4096x1792 -1.8% and -1.2%; 128x4096x2752 +0.2%,
     * 128x3584x4096 +3.6%, 64x4096x1376 (one tile row) +3.0%). */
    c->stages = ks > 1 ? 8 : c->bm == 64 && p->m > 64 && nkb <= 28 ? 10 : WEFT_GEMM_MAX_STAGES;
  } else {
    /* Large m: 128-row tiles in 2x1 clusters, the width that wave quantisation and the tile row's
     * fit to n make fastest. A persistent grid runs ceil(cluster tiles / clusters) waves, each as
     * long as the tile is wide, so the estimate is waves x k-blocks x width x a per-width cost
     * (gemm_widths: narrower tiles reload A more often), the cost of narrow tiles raised where A's
     * and B's rows are no multiple of 128 bytes (k or lda no multiple of 64), and the split tail
     * (weft_gemm_tail) counted where it is cheaper: the last wave's share of the k-blocks plus
     * GEMM_TAIL_CHOICE_COST. [k, n] B takes the widths of whole 64-column boxes (gemm_widths'
     * cost_kn). Fitted to an H100 sweep of every width on weft-bench gemm's 21 large shapes (two
     * runs, same call, dev/gemm/NOTES.md): this choice was the fastest width or within
     * 1.5% of it on each, the 256/192/128 choice before it up to 8.7% from it. There the narrow
     * widths lost 4-23% more with unaligned rows (8192x8192x3696: 176 columns +23%, 208 +13%;
     * 8192x8192x3584: 176 +1.4%), and a tail's estimate against another width's whole tiles was
     * optimistic by about 7 k-blocks of a 256-column tile.
     * An odd count of tile rows leaves the last cluster's second tile empty, a waste that the
     * clusters' B multicast does not repay: unclustered tiles there (H200, same runs,
     * 2026-11-26, bench/results/2026-11-26v-stop34.md section 7: m = 384 0.77-0.86x -> 0.97-1.03x
     * cuBLAS; the best unclustered width ahead of the best clustered one by 5-15% at m = 640-1664,
     * 5% at 4224 and 6272, 1-2% at 8320; H100: see there). */
    long long tiles_m = (p->m + 127) / 128;
    int cl = tiles_m % 2 ? 1 : 2;
    long long ctiles_m = (tiles_m + cl - 1) / cl, clusters = sms / cl > 0 ? sms / cl : 1;
    long long nkb = (p->k + GEMM_BK - 1) / GEMM_BK;
    /* (with [k, n] B no such loss showed: at k = 7392 and 3696, 192 columns ran 2.6-4.1% ahead
     * of 256, H200, 2026-11-26) */
    int unaligned = p->b_kmajor && (p->k % 64 || p->lda % 64 || p->ldb % 64);
    double best = 0;
    int best_i = 0;
    for (int i = 0; i < GEMM_WIDTHS; i++) {
      const struct gemm_width *w = &gemm_widths[i];
      if (!p->b_kmajor && !w->cost_kn) continue;
      double cost = (p->b_kmajor ? w->cost : w->cost_kn) *
                    (unaligned ? 1 + 0.3 * (256.0 / w->bn - 1) : 1);
      long long units = ctiles_m * ((p->n + w->bn - 1) / w->bn);
      double t = (double)((units + clusters - 1) / clusters * nkb) * w->bn * cost;
      int tiles, splits;
      tail_plan(units, clusters, nkb, w->bn, GEMM_TAIL_SPLITS, 128LL * w->bn, cl, ws_floats,
                ws_counters, &tiles, &splits);
      double ts = ((double)(units / clusters * nkb) + (double)nkb / splits) * w->bn * cost +
                  GEMM_TAIL_CHOICE_COST;
      if (tiles && ts < t) t = ts;
      if (best == 0 || t < best) best = t, best_i = i;
    }
    const struct gemm_width *w = &gemm_widths[best_i];
    c->bn = w->bn, c->stages = w->stages, c->epi_bufs = w->epi;
    c->tail_splits = GEMM_TAIL_SPLITS;
    c->bm = 128;
    c->cluster = cl;
    /* Two tile rows (129-256 rows, not transposed) over few columns and at most 128 k-blocks:
     * where 128 x 64 tiles fill 3/4 to all of the SMs (128-column ones half at most), those,
     * unclustered and unsplit, rather than 2x1 clusters of 128-column tiles with a split tail
     * (cold, two runs of each build alternating, 2026-11-27, bench/results/2026-11-27d-stop42.md
     * sections 5 and 9: n = 3584 and 4096 at k = 2752-8192 with either B, H200 0-26% faster,
     * H100 12-34%; 256x4096x2752 [k, n] on the H200 17.6 -> 13.8 us against cuBLAS's 14.4; at
     * 144 k-blocks -6% to +1% on the H200, at 160-176 up to 7% slower, at 224 6-15%; at
     * n = 2752, 86 tiles, +3%) */
    if (tiles_m == 2 && fills_one_wave(2 * ((p->n + 63) / 64), sms) && nkb <= 128)
      tiles_128x64(c);
  }
  if (!c_takes_tma(p)) c->splitk = 1, c->tail_splits = 0; /* direct store, k_splits as chosen */
  config_fit(p, c);
}

int weft_gemm_config_width(const weft_gemm_problem_t *p, int bn, weft_gemm_config_t *c) {
  if (c->splitk || c->bm != 128 || c->bn == bn) return 0;
  for (int i = 0; i < GEMM_WIDTHS; i++)
    if (gemm_widths[i].bn == bn && (p->b_kmajor || gemm_widths[i].cost_kn)) {
      c->bn = bn, c->stages = gemm_widths[i].stages, c->epi_bufs = gemm_widths[i].epi;
      config_fit(p, c);
      return 1;
    }
  return 0;
}

int weft_gemm_config_unsplit(const weft_gemm_problem_t *p, int sms, weft_gemm_config_t *c) {
  if (p->m > 128 || c->cluster != 1 || c->swap_ab || tail_split(c) || !c_takes_tma(p)) return 0;
  if (c->bm == 128 && !c->splitk) return 1;
  /* 128 x 128 tiles split in k, or two rows of 64 x 128 tiles (as many CTAs; 128 x 64 tiles ran
   * within 0.5% of them at k a multiple of 64: dev/gemm/NOTES.md) */
  if (c->bn != 128 || (c->bm == 64 && (p->m <= 64 || c->splitk)) ||
      !fills_one_wave((p->n + 63) / 64, sms))
    return 0;
  tiles_128x64(c);
  config_fit(p, c);
  return 1;
}

/* C as the LL epilogue writes it: contiguous rows of whole 8-byte words. */
static int ll_rows(const weft_gemm_problem_t *p) {
  return p->ldc == p->n && p->n * out_size(p->out) % 8 == 0;
}

int weft_gemm_config_ll(const weft_gemm_problem_t *p, weft_gemm_config_t *c) {
  if (!ll_rows(p) || c->swap_ab) return 0;
  if (c->splitk) return 1;
  if (c->cluster != 1 || tail_split(c)) return 0;
  c->splitk = 1, c->k_splits = 1, c->splitk_cluster = 0, c->tail_splits = 0;
  return 1;
}

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
  if (h && h->wait_signals) GEMM_DEFINE("HOOK_WAIT", 1);
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
    WEFT_CHECK_GOTO(weft_module_load_embedded(comm, "kernels/gemm.cu", opts, nopts, &g->module),
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

/* The clusters a launch of g runs: the SM budget's, at most the co-resident ones. */
static int grid_clusters(const weft_gemm_config_t *c, const weft_gemm_hooks_t *h,
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
static weft_status_t gemm_resolve(weft_comm_t *comm, const weft_gemm_problem_t *p,
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
  return gemm_resolve(comm, p, &cfg, hooks, &tmp, &g, &tail_tiles, &tail_ks);
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
  struct weft_gemm_kernel *g;
  int tail, tail_ks;
  WEFT_CHECK(gemm_resolve(comm, p, &cfg, h, &tmp, &g, &tail, &tail_ks));
  int tiles_m = (p->m + cfg->bm - 1) / cfg->bm, tiles_n = (p->n + cfg->bn - 1) / cfg->bn;
  int cs = cluster_size(cfg), clustered = k_clustered(cfg);
  /* (after gemm_resolve: a cluster reduction it turned into the workspace one needs it) */
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
  /* a partial last tile row: a map of its rows only (kernels/gemm.cu, params 37-38) */
  int a_tail_rows = a_rows(cfg) == cfg->bm && !p->a_mn_major ? (p->m % cfg->bm + 7) / 8 * 8 : 0;
  if (a_tail_rows >= cfg->bm) a_tail_rows = 0;
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
  if (p->b_kmajor)
    WEFT_CHECK(encode(comm, &tb, b, p->in, (uint64_t)p->k, (uint64_t)p->n, p->ldb, GEMM_BK,
                      (uint32_t)(cfg->bn / cfg->cluster), 0, 0));
  else
    WEFT_CHECK(encode(comm, &tb, b, p->in, (uint64_t)p->n, (uint64_t)p->k, p->ldb, 64, GEMM_BK, 0, 0));
  if (ar) /* C on every rank, based at rank 0's copy */
    WEFT_CHECK(encode(comm, &tcall, (void *)(uintptr_t)weft_heap_peer(&comm->heap, h->ar_c, 0),
                      p->out, (uint64_t)p->n, (uint64_t)p->m, p->ldc,
                      (uint32_t)(128 / out_size(p->out)), 64, comm->local_world,
                      (long long)comm->heap.stride));
  else
    tcall = ta; /* unused */
  if (cfg->splitk) {
    tc = ta; /* unused */
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
  /* Short calls launch for programmatic dependent launch: where the stream's previous kernel
   * lets its dependents start early (weft's GEMM and LL collectives), this grid's CTAs take the
   * SMs it leaves and wait there (the kernel's griddepcontrol.wait), so the launch's latency
   * overlaps that kernel's tail. Back to back on an H200 (graphs, cold, same runs, 2026-11-26,
   * bench/results/2026-11-26y-stop37.md sections 7 and 9): A and B of up to 22 MB (calls of
   * 6-10 us) 9-15% faster; m = 64-160 from 45 MB and [k, n] 1x13312x16384 5-21% slower (why is
   * not known: not where the early CTAs wait), m = 1 at 58-117 MB 2-5% faster. */
  lc.programmatic = 2.0 * ((double)p->m + p->n) * p->k <= GEMM_PDL_MAX_BYTES;
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
  void *args[] = {&ta,    &tb,       &tc,      &cp,     &M,     &N,  &K,   &table, &rot, &sig, &wrows,
                  &expected, &timeout, &notify, &nrows, &ws, &ctr, &ks,   &err,   &ldc, &stride,
                  &tail, &ll_epoch, &ll_slot, &rank, &world, &town, &own_row0, &own_rows,
                  &tcall, &ar_staging, &ar_slot, &ar_flags, &ar_row0, &ar_rows, &ar_chunk, &ar_c,
                  &tatail, &a_tail_rows};
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
