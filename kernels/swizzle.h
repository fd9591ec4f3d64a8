/*
 * kernels/swizzle.h — distributed tile and chunk orders for overlapped AllGather / ReduceScatter
 * ops, shared by host C (tables, tests) and device code (a persistent GEMM computes its order on
 * the fly). No system headers: it compiles under NVRTC as it is.
 *
 * The setting: a matrix of M = world * m_per_rank rows is split into per-rank shards (AllGather:
 * rank q's shard is the input rows [q * m_per_rank, +m_per_rank); ReduceScatter: the output
 * segment that rank q receives). A GEMM covers it with tile-rows of bm rows (the last one cut at
 * M). Every *_row / *_tile function maps a position p in [0, count) to a tile-row (or tile), and
 * each is a permutation (tests/cpu/test_swizzle.c checks that, and each order's property below,
 * against brute force over rows).
 *
 * Why the orders (Triton-distributed, §3.7; DITRON, §3.2 and Appendix B):
 *  - AllGather + GEMM ("gather mode"): the GEMM consumes rows as they arrive, so rank r first
 *    computes the tile-rows that lie entirely in its own shard (no wait at all), then the tiles
 *    of each shard in arrival order. A tile that straddles shards waits for the last of them to
 *    arrive, so it is placed with that shard ("cross-rank tiles are postponed"). With arrival
 *    r, r+1, r+2, ... (dir +1) this is a rotation of the tile-rows starting at the first tile
 *    that starts in shard r; the straddler (r-1, r) comes last.
 *  - GEMM + ReduceScatter ("scatter mode"): the output segment of rank r+1 is produced first and
 *    pushed while the GEMM goes on, then r+2, ..., the rank's own segment last (its "send" is a
 *    local copy, nothing to hide). A tile that straddles two segments is produced with the first
 *    of them to be sent ("cross-rank tiles are prioritised"), so that every segment is complete
 *    at the end of its step; the straddler (r, r+1) comes first. With dir +1 this is a rotation
 *    starting at the tile that holds the first row of segment r+1.
 *    dir -1 (arrival / sends r-1, r-2, ...) gives the mirrored orders; the RS order of rank r
 *    with dir -1 is the AG order of rank r with dir +1 reversed, and vice versa.
 *  - Inter-node (Appendix B): nodes of local_world = world / nnodes ranks; the tile-rows are
 *    first split by node (a tile straddling two nodes goes with the later node in the visiting
 *    order for AllGather, the earlier for ReduceScatter), the node segments are visited in
 *    order — AG: own node, node+1, ...; RS: node+1, node+2, ..., own node last, so that the
 *    inter-node transfer of a finished node stage overlaps the next stage — and inside each node
 *    segment the tiles are rotated to start at the shard of the same local rank (AG: the shard
 *    that the cross-node peer of the same local rank delivers first) or of local rank + 1 (RS).
 *    Three departures from the paper's code, each where its rotation would visit a tile before
 *    one that is ready earlier (the test finds such cases with the paper's rule): local rank 0
 *    in AG starts at the segment's first tile (a straddler from the previous node, whose other
 *    rows are already there), the RS target wraps local rank + 1 to 0 at the last local rank
 *    (the node-boundary straddler is then produced last, with the segment it feeds last), and
 *    an offset past the segment's end restarts at its start instead of being taken modulo.
 *  - Chunk orders: which shard a copy-engine / SM sender moves at step s, matching the tile
 *    orders (Triton-distributed, Algorithms 1-3 and 5, with the swizzled loop order).
 *
 * Rows are long long; tile-rows and ranks are int. Requirements: world >= 1, m_per_rank >= 1,
 * bm >= 1, 0 <= rank < world, nnodes >= 1 dividing world, dir is +1 or -1 (any value < 0 means
 * -1).
 */
#ifndef WEFT_SWIZZLE_H
#define WEFT_SWIZZLE_H

#include "kernels/gemm/order.h"

#if defined(__CUDACC__) || defined(__CUDACC_RTC__)
#define WEFT_SWIZZLE_HD static __host__ __device__ __forceinline__
#else
#define WEFT_SWIZZLE_HD static inline
#endif

/* floor and ceil of rows / bm for rows >= 0; a mod that is never negative. */
WEFT_SWIZZLE_HD int weft_swizzle__fl(long long rows, int bm) { return (int)(rows / bm); }
WEFT_SWIZZLE_HD int weft_swizzle__cl(long long rows, int bm) { return (int)((rows + bm - 1) / bm); }
WEFT_SWIZZLE_HD int weft_swizzle__mod(int a, int n) {
  a %= n;
  return a < 0 ? a + n : a;
}

/* Tile-rows covering world * m_per_rank rows. */
WEFT_SWIZZLE_HD int weft_swizzle_tiles_m(int world, long long m_per_rank, int bm) {
  return weft_swizzle__cl((long long)world * m_per_rank, bm);
}

/* The ranks whose rows tile-row tm spans, *first .. *last. AG: the source shards the tile waits
 * for; RS: the destination segments the tile feeds. */
WEFT_SWIZZLE_HD void weft_swizzle_row_ranks(int tm, int world, long long m_per_rank, int bm,
                                            int *first, int *last) {
  long long m = (long long)world * m_per_rank, r0 = (long long)tm * bm, r1 = r0 + bm;
  if (r1 > m) r1 = m;
  *first = (int)(r0 / m_per_rank);
  *last = (int)((r1 - 1) / m_per_rank);
}

/* The tile-rows that touch shard q, [*t0, *t1). AG: the tiles that wait for shard q; RS: the
 * tiles that segment q waits for (its sender counts them to know the segment is complete). */
WEFT_SWIZZLE_HD void weft_swizzle_rank_rows(int q, long long m_per_rank, int bm, int *t0, int *t1) {
  *t0 = weft_swizzle__fl((long long)q * m_per_rank, bm);
  *t1 = weft_swizzle__cl((long long)(q + 1) * m_per_rank, bm);
}

/* ---- intra-node tile-row orders ---- */

/* AllGather + GEMM, rank's consumer order for shards arriving rank, rank+dir, rank+2*dir, ...:
 * position p -> tile-row. The first tiles need only the rank's own rows; every tile sits with the
 * last-arriving shard it needs. */
WEFT_SWIZZLE_HD int weft_swizzle_ag_row(int p, int rank, int world, long long m_per_rank, int bm,
                                        int dir) {
  int tiles = weft_swizzle_tiles_m(world, m_per_rank, bm);
  if (dir >= 0) return (weft_swizzle__cl((long long)rank * m_per_rank, bm) + p) % tiles;
  int f = weft_swizzle__fl((long long)((rank + 1) % world) * m_per_rank, bm);
  return weft_swizzle__mod(f - 1 - p, tiles);
}

/* GEMM + ReduceScatter, rank's producer order for segments sent to rank+dir, rank+2*dir, ...,
 * its own last: position p -> tile-row. Every tile sits with the first-sent segment it feeds. */
WEFT_SWIZZLE_HD int weft_swizzle_rs_row(int p, int rank, int world, long long m_per_rank, int bm,
                                        int dir) {
  int tiles = weft_swizzle_tiles_m(world, m_per_rank, bm);
  if (dir >= 0) {
    int f = weft_swizzle__fl((long long)((rank + 1) % world) * m_per_rank, bm);
    return (f + p) % tiles;
  }
  return weft_swizzle__mod(weft_swizzle__cl((long long)rank * m_per_rank, bm) - 1 - p, tiles);
}

/* ---- inter-node tile-row orders (DITRON, Appendix B) ---- */

/* Tile-rows lying entirely inside the cyclic window of len nodes starting at node s. */
WEFT_SWIZZLE_HD int weft_swizzle__inside(int s, int len, int nnodes, long long m_node, int tiles,
                                         int bm) {
  if (len <= 0) return 0;
  if (len >= nnodes) return tiles;
  int lo = weft_swizzle__cl((long long)s * m_node, bm);
  if (s + len < nnodes) {
    int hi = weft_swizzle__fl((long long)(s + len) * m_node, bm);
    return hi > lo ? hi - lo : 0;
  }
  return tiles - lo +
         (s + len > nnodes ? weft_swizzle__fl((long long)(s + len - nnodes) * m_node, bm) : 0);
}

/* Shared by the AG and RS node orders: the node-level order is a rotation of the tile-rows
 * starting at `start`; its i-th node segment holds positions [seg(i), seg(i+1)). Position p is
 * placed inside its segment, rotated so that the segment starts at tile `target` of the node
 * visited (clamped to the segment). */
WEFT_SWIZZLE_HD int weft_swizzle__nodes_row(int p, int rank, int world, int nnodes,
                                            long long m_per_rank, int bm, int scatter) {
  int lw = world / nnodes, node = rank / lw, lr = rank % lw;
  long long m_node = (long long)lw * m_per_rank;
  int tiles = weft_swizzle_tiles_m(world, m_per_rank, bm);
  int start = scatter ? weft_swizzle__fl((long long)((node + 1) % nnodes) * m_node, bm)
                      : weft_swizzle__cl((long long)node * m_node, bm) % tiles;
  int i = 0, lo = 0, hi = tiles;
  for (; i < nnodes; i++, lo = hi) {
    hi = scatter ? tiles - weft_swizzle__inside((node + 2 + i) % nnodes, nnodes - 1 - i, nnodes,
                                                m_node, tiles, bm)
                 : weft_swizzle__inside(node, i + 1, nnodes, m_node, tiles, bm);
    if (p < hi) break;
  }
  int n = (node + i + scatter) % nnodes, size = hi - lo;
  int first = (start + lo) % tiles, target;
  if (scatter)
    target = weft_swizzle__fl((long long)n * m_node + (long long)((lr + 1) % lw) * m_per_rank, bm);
  else
    target =
        lr == 0 ? first : weft_swizzle__cl((long long)n * m_node + (long long)lr * m_per_rank, bm);
  int off = target - first;
  if (off < 0) off = 0;
  if (off >= size) off = 0;
  return (first + (p - lo + off) % size) % tiles;
}

/* AllGather + GEMM across nnodes nodes: own node's tiles first (own shard first inside it), then
 * node+1, node+2, ...; inside node n the tiles of local rank lr's shard first. */
WEFT_SWIZZLE_HD int weft_swizzle_ag_nodes_row(int p, int rank, int world, int nnodes,
                                              long long m_per_rank, int bm) {
  return weft_swizzle__nodes_row(p, rank, world, nnodes, m_per_rank, bm, 0);
}

/* GEMM + ReduceScatter across nnodes nodes: node+1's segments first, own node last; inside node
 * n the segment of local rank lr+1 first, lr's last. */
WEFT_SWIZZLE_HD int weft_swizzle_rs_nodes_row(int p, int rank, int world, int nnodes,
                                              long long m_per_rank, int bm) {
  return weft_swizzle__nodes_row(p, rank, world, nnodes, m_per_rank, bm, 1);
}

/* ---- one descriptor for a kernel, and 2-D tile orders ---- */

#define WEFT_SWIZZLE_AG 0       /* weft_swizzle_ag_row */
#define WEFT_SWIZZLE_RS 1       /* weft_swizzle_rs_row */
#define WEFT_SWIZZLE_AG_NODES 2 /* weft_swizzle_ag_nodes_row */
#define WEFT_SWIZZLE_RS_NODES 3 /* weft_swizzle_rs_nodes_row */

typedef struct weft_swizzle {
  int kind; /* WEFT_SWIZZLE_* */
  int rank; /* global rank */
  int world;
  int nnodes; /* *_NODES kinds */
  int dir;    /* intra-node kinds: +1 or -1 */
  int bm;     /* rows per tile-row */
  long long m_per_rank;
} weft_swizzle_t;

/* The tile-row at row position pm for descriptor s. */
WEFT_SWIZZLE_HD int weft_swizzle_row(int pm, const weft_swizzle_t *s) {
  switch (s->kind) {
  case WEFT_SWIZZLE_RS:
    return weft_swizzle_rs_row(pm, s->rank, s->world, s->m_per_rank, s->bm, s->dir);
  case WEFT_SWIZZLE_AG_NODES:
    return weft_swizzle_ag_nodes_row(pm, s->rank, s->world, s->nnodes, s->m_per_rank, s->bm);
  case WEFT_SWIZZLE_RS_NODES:
    return weft_swizzle_rs_nodes_row(pm, s->rank, s->world, s->nnodes, s->m_per_rank, s->bm);
  default: return weft_swizzle_ag_row(pm, s->rank, s->world, s->m_per_rank, s->bm, s->dir);
  }
}

/* Position p in [0, tiles_m * tiles_n) -> tile (tm, tn): the grouped raster of gemm_order.h over
 * row positions, row positions mapped through the swizzle. group 1 keeps the swizzle's order of
 * tile-rows strictly; a larger group (L2 reuse of B) may interleave the last rows of one step
 * with the first of the next inside one group, which the per-tile wait keeps correct. */
WEFT_SWIZZLE_HD void weft_swizzle_tile(int p, int tiles_n, int group, const weft_swizzle_t *s,
                                       int *tm, int *tn) {
  int pm;
  weft_gemm_order_grouped(p, weft_swizzle_tiles_m(s->world, s->m_per_rank, s->bm), tiles_n, group,
                          &pm, tn);
  *tm = weft_swizzle_row(pm, s);
}

/* Fills table[0 .. tiles_m * tiles_n) with row-major tile indices (tm * tiles_n + tn) in the
 * order of weft_swizzle_tile (host-side tables for kernels built with a table order). */
WEFT_SWIZZLE_HD int weft_swizzle_fill(int tiles_n, int group, const weft_swizzle_t *s, int *table) {
  int n = weft_swizzle_tiles_m(s->world, s->m_per_rank, s->bm) * tiles_n;
  for (int p = 0; p < n; p++) {
    int tm, tn;
    weft_swizzle_tile(p, tiles_n, group, s, &tm, &tn);
    table[p] = tm * tiles_n + tn;
  }
  return n;
}

/* ---- chunk orders: which shard moves at step s, s in [0, world) ---- */

/* AG consumer / pull order: the shard rank uses (pulls) at step s; step 0 is its own. */
WEFT_SWIZZLE_HD int weft_swizzle_ag_chunk(int s, int rank, int world, int dir) {
  return weft_swizzle__mod(rank + (dir < 0 ? -s : s), world);
}

/* AG push: the peer that rank pushes its own shard to at step s, so that every receiver gets
 * shards in its weft_swizzle_ag_chunk order and, at each step, every rank sends to a different
 * peer (one peer link per sender per step). Step 0 is rank itself (a local copy or nothing). */
WEFT_SWIZZLE_HD int weft_swizzle_ag_push_peer(int s, int rank, int world, int dir) {
  return weft_swizzle__mod(rank - (dir < 0 ? -s : s), world);
}

/* RS producer / push order: the segment (= destination rank) rank produces and pushes at step s:
 * rank+dir first, its own last. */
WEFT_SWIZZLE_HD int weft_swizzle_rs_chunk(int s, int rank, int world, int dir) {
  return weft_swizzle__mod(rank + (dir < 0 ? -(s + 1) : s + 1), world);
}

/* RS reduction order: the rank whose partial of rank's segment arrives at step s (its own last). */
WEFT_SWIZZLE_HD int weft_swizzle_rs_reduce_src(int s, int rank, int world, int dir) {
  return weft_swizzle__mod(rank - (dir < 0 ? -(s + 1) : s + 1), world);
}

/* Inter-node AG: the shard (global rank) rank receives and consumes at step s: node stage
 * s / local_world (own node first), inside it local ranks from rank's own local rank on (the
 * same-local-rank shard comes over the network, the others from local peers that forward it). */
WEFT_SWIZZLE_HD int weft_swizzle_ag_nodes_chunk(int s, int rank, int world, int nnodes) {
  int lw = world / nnodes, i = s / lw, j = s % lw;
  return ((rank / lw + i) % nnodes) * lw + (rank % lw + j) % lw;
}

/* Inter-node RS (Triton-distributed, §3.5, Algorithm 5, swizzled): the segment (global rank) rank
 * produces at step s: node stage s / local_world starting at node+1 (own node last), inside it
 * local rank lr+1 first, lr last. The chunk goes to local rank (segment % local_world) of rank's
 * own node, which reduces the stage and sends it to the segment's owner across nodes. */
WEFT_SWIZZLE_HD int weft_swizzle_rs_nodes_chunk(int s, int rank, int world, int nnodes) {
  int lw = world / nnodes, i = s / lw, j = s % lw;
  return ((rank / lw + 1 + i) % nnodes) * lw + (rank % lw + 1 + j) % lw;
}

#endif
