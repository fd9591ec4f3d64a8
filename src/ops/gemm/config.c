/*
 * config.c — the GEMM's shape heuristic (gemm.h): the configuration (tiles, 2x1 clusters, stages,
 * k-splits, split tail, transposed product) that weft_gemm_config_choose picks for a problem on a
 * GPU, the changes the overlapped ops and the autotuner make to one (another tile width, unsplit
 * 128-row tiles, the LL epilogue's kernel), and what a configuration implies: its shared memory,
 * its notify counts, a launch's split tail. Pure host arithmetic: the CPU tests enumerate its
 * choices (tests/cpu/test_gemm_configs.c). The kernel's side of each field:
 * kernels/gemm/config.cuh.
 */
#include "gemm.h"

#include <string.h>

#include "../ops.h"
#include "common.h"

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
/* The split tail (WEFT_GEMM_TAIL): at most 4 splits a tile; the partials' round trip (write,
 * counter, the last split's reads: 8-9 us on H100) costs about 11 k-blocks of a 256-column tile,
 * in k-blocks x columns (H100, 2026-11-25: 128- and 256-column tiles, k = 4096, dev/gemm/README.md) */
#define GEMM_TAIL_SPLITS 4
#define GEMM_TAIL_COST (11 * 256)
/* what the width choice charges the split tail instead (weft_gemm_config_choose) */
#define GEMM_TAIL_CHOICE_COST (18 * 256)
/* the largest m the transposed product (swap_ab) takes: measured faster than 128-row tiles up to
 * 416 rows, and up to 53% slower at 576-1000 (H200, dev/gemm/README.md) */
#define GEMM_SWAP_MAX_M 512

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

/* The large-m tile widths: stages and staging boxes for each, and the per-width cost of the wave
 * model (weft_gemm_config_choose): 1 + 0.04 (256 / width - 1), 1.05 for 128 (fitted, with the
 * model, to an H100 sweep; dev/gemm/README.md). Widths between the multiples of 64 fit a tile row
 * to n (8192x1376: 8 tiles of 176 columns cover 1408, 6 of 256 1536); their last staging box
 * overlaps the one before it (kernels/gemm/config.cuh, WEFT_GEMM_BOX_COL). [k, n] B takes the
 * multiples of 64 (cost_kn; 0: not), where 192 columns cost no more than 256 (H200, two runs of the
 * 21 large shapes of weft-bench gemm with [k, n] B on 256, 192 and 128, each width in the same run:
 * 192 ahead by 1-4% on seven, 8192x7392x8192 -2.7% / -1.3%, at most 2.5% behind on the others;
 * bench/results/2026-11-27-gemm-h200.md, "[K, N] B: tile widths and the cuBLAS workspace"). */
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
 * tiles in the same call, dev/gemm/README.md): its column tiles must pad m by at least a
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
 * is left after the stream (the split-K reduction). The H100 sweeps (dev/gemm/README.md) found the
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
    /* Over long k with fast memory, where 128x128 tiles fill under half the SMs but twice them fit:
     * 128x128 in 2 clustered splits (the split rule below gives 2) rather than 64x128 tiles, whose
     * two row halves each stream the same B tile (H200, same runs, 2026-11-26,
     * bench/results/2026-11-27-gemm-h200.md, "64 < m <= 128 over long k": [k, n] B 128x5120x13312
     * 49.9 -> 41.9 us, 128x8192x14336 71.3-72.1 -> 65.5, 128x8192x28672 133-134 -> 122,
     * 80x8192x13312 -12%; [n, k] B up to 19% faster, 128x8192x11008 within 1.5%; at k = 8192-10240
     * within 1.5% either way, 7168 +3%, 3584 +9%). Not on the H100 (25 GB/s an SM), where 64x128
     * tiles stayed up to 7% ahead on 6 of the 8 shapes with [k, n] B, and within 4% either way with
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
     * (fence, counter, re-read) was 2-4 us of a 10-15 us decode call (dev/gemm/README.md). Clusters
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
    /* Where the GPCs hold fewer such clusters than tiles (H100 and H200: 30 of 4 CTAs, 15 of 8, so
     * 32 tiles in 4 splits or 16 in 8 at n = 2048-4096), the splits would run through the workspace
     * at launch: half as many in clusters instead, except 64-column tiles over long splits, where
     * twice the CTAs stream B faster than the workspace's round trip costs, from 24 k-blocks a
     * split with fast memory and 40 with slow (graphs, cold, same runs, 2026-11-26,
     * bench/results/2026-11-27-gemm-h200.md, "The GEMM chooser sees the GPU's cluster capacity":
     * half as many clustered against the workspace's splits, 64x64 and 128x64 tiles, on the H200 at
     * 16 k-blocks a split 3-7% faster, at 24 1-3% slower, at 32-40 7-14% slower; on the H100 at
     * 16-32 1% slower to 15% faster, at 40 4% faster to 5% slower; 64x128 tiles of [k, n] B at
     * 16-40 k-blocks 2-25% faster on both, at 56 4% faster to 1% slower; [k, n] 1x2048x8192 15.4 ->
     * 11.9 us on the H200, 18.7 -> 14.5 on the H100). */
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
     * runs, same call, dev/gemm/README.md): this choice was the fastest width or within 1.5% of it
     * on each, the 256/192/128 choice before it up to 8.7% from it. There the narrow widths lost
     * 4-23% more with unaligned rows (8192x8192x3696: 176 columns +23%, 208 +13%; 8192x8192x3584:
     * 176 +1.4%), and a tail's estimate against another width's whole tiles was optimistic by about
     * 7 k-blocks of a 256-column tile. An odd count of tile rows leaves the last cluster's second
     * tile empty, a waste that the clusters' B multicast does not repay: unclustered tiles there
     * (H200, same runs, 2026-11-26, bench/results/2026-11-27-gemm-h200.md, "An odd count of 128-row
     * tile rows": m = 384 0.77-0.86x -> 0.97-1.03x cuBLAS; the best unclustered width ahead of the
     * best clustered one by 5-15% at m = 640-1664, 5% at 4224 and 6272, 1-2% at 8320; H100: see
     * there). */
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
    /* Two tile rows (129-256 rows, not transposed) over few columns and at most 128 k-blocks: where
     * 128 x 64 tiles fill 3/4 to all of the SMs (128-column ones half at most), those, unclustered
     * and unsplit, rather than 2x1 clusters of 128-column tiles with a split tail (cold, two runs
     * of each build alternating, 2026-11-27, bench/results/2026-11-27-gemm-h200.md, "Two tile rows
     * over few columns: M = 256" and "The rule's k-block bound": n = 3584 and 4096 at k = 2752-8192
     * with either B, H200 0-26% faster, H100 12-34%; 256x4096x2752 [k, n] on the H200 17.6 -> 13.8
     * us against cuBLAS's 14.4; at 144 k-blocks -6% to +1% on the H200, at 160-176 up to 7% slower,
     * at 224 6-15%; at n = 2752, 86 tiles, +3%) */
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
   * within 0.5% of them at k a multiple of 64: dev/gemm/README.md) */
  if (c->bn != 128 || (c->bm == 64 && (p->m <= 64 || c->splitk)) ||
      !fills_one_wave((p->n + 63) / 64, sms))
    return 0;
  tiles_128x64(c);
  config_fit(p, c);
  return 1;
}

void weft_gemm_config_grouped(const weft_gemm_problem_t *p, int group_rows, int gated,
                              weft_gemm_config_t *c) {
  memset(c, 0, sizeof *c);
  c->bm = group_rows % 128 == 0 ? 128 : 64;
  c->cluster = 1, c->group = 8, c->k_splits = 1;
  /* the width whose tiles pad n least, each width's padded columns weighted by its cost (the
   * widths the dense heuristic uses, gemm_widths; [k, n] B takes those with a cost_kn) */
  double best = 0;
  for (int i = 0; i < GEMM_WIDTHS; i++) {
    const struct gemm_width *w = &gemm_widths[i];
    double cost = p->b_kmajor ? w->cost : w->cost_kn;
    if (cost == 0 || (c->bm == 64 && w->bn / 2 % 16)) continue; /* 64-row tiles: BN/2 a WG */
    int half = (c->bm == 128 ? w->bn : w->bn / 2) / 2;
    if (gated && (half * out_size(p->out) < 128 || (!p->b_kmajor && half % 64))) continue;
    double padded = (double)((p->n + w->bn - 1) / w->bn) * w->bn * cost;
    if (best == 0 || padded < best) {
      best = padded;
      c->bn = w->bn, c->stages = w->stages, c->epi_bufs = w->epi;
    }
  }
  /* (config_fit counts a warpgroup's boxes from all of its columns: the gated epilogue stores
   * half, and EPI_BUFS must divide those) */
  config_fit(p, c);
  if (gated) {
    int boxes = ((c->bm == 128 ? c->bn : c->bn / 2) / 2 * out_size(p->out) + 127) / 128;
    while (boxes % c->epi_bufs) c->epi_bufs--;
  }
}

int weft_gemm_config_ll(const weft_gemm_problem_t *p, weft_gemm_config_t *c) {
  if (!ll_rows(p) || c->swap_ab) return 0;
  if (c->splitk) return 1;
  if (c->cluster != 1 || tail_split(c)) return 0;
  c->splitk = 1, c->k_splits = 1, c->splitk_cluster = 0, c->tail_splits = 0;
  return 1;
}
