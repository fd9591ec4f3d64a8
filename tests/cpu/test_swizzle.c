/*
 * test_swizzle.c — kernels/swizzle.h compiled as host C, checked against brute force over rows.
 *
 * For every grid (world 1..32, nnodes 1/2/4, m_per_rank from 1 row to several tiles, 997 among
 * them, tiles of 64/128/256 rows) and every rank:
 *  - the needs/feeds range of each tile-row and the tile range of each shard equal the ranks
 *    found by walking the tile's rows;
 *  - every order is a permutation of the tile-rows;
 *  - AG orders: the step at which a tile becomes usable (the latest arrival among the shards its
 *    rows come from) never decreases along the order, and the first tiles are exactly those
 *    whose rows lie in the rank's own shard;
 *  - RS orders: the step of a tile (the earliest send among the segments it feeds) never
 *    decreases, and the first tile feeds rank+dir (inter-node: node+1's local rank+1);
 *  - inter-node orders: the (node step, local step) key never decreases, with nnodes 1 they equal
 *    the intra-node dir +1 orders, and where no tile spans a whole node they equal a separate
 *    implementation of Appendix B's construction (per-node tile ranges cut by its straddle rules);
 *  - perfect tiling: the shards met along each tile order are the chunk order;
 *  - chunk orders: permutations; push and pull / send and reduce orders agree between ranks;
 *  - 2-D orders and tables: permutations, row-major over the swizzled rows with group 1;
 *  - a few hand-computed positions of Appendix B's non-perfect case (997 rows, 256-row tiles).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "support.h"
#include "kernels/swizzle.h"

#define MAXT 4096

/* The grid under test and its brute force: the shards each tile-row's rows come from. */
static int W, NN, LW, BM, T;
static long long MR, M;
static int bf_first[MAXT], bf_last[MAXT];

static int md(int a, int n) { return ((a % n) + n) % n; }

static int setup(int world, int nnodes, long long mr, int bm) {
  W = world, NN = nnodes, LW = world / nnodes, BM = bm, MR = mr, M = world * mr, T = 0;
  for (long long row = 0; row < M; row++) {
    int t = (int)(row / bm), q = (int)(row / mr);
    if (t >= MAXT) return -1;
    if (t == T) bf_first[T++] = q;
    bf_last[t] = q;
  }
  return 0;
}

/* Arrival step of the last shard tile t needs (AG, ranks arriving r, r+dir, ...). */
static int ag_key(int t, int r, int dir) {
  int k = 0;
  for (int q = bf_first[t]; q <= bf_last[t]; q++)
    if (md(dir * (q - r), W) > k) k = md(dir * (q - r), W);
  return k;
}

/* Send step of the first segment tile t feeds (RS, segments sent r+dir, r+2dir, ..., r). */
static int rs_key(int t, int r, int dir) {
  int k = W;
  for (int q = bf_first[t]; q <= bf_last[t]; q++)
    if (md(dir * (q - r) - 1, W) < k) k = md(dir * (q - r) - 1, W);
  return k;
}

/* Inter-node AG: the latest node among those tile t touches (own node first), then inside that
 * node the latest local rank (own local rank first). */
static int ag_nodes_key(int t, int r, int dir) {
  int node = r / LW, lr = r % LW, ns = -1, nstar = 0, ls = 0;
  (void)dir;
  for (int q = bf_first[t]; q <= bf_last[t]; q++)
    if (md(q / LW - node, NN) > ns) ns = md(q / LW - node, NN), nstar = q / LW;
  for (int q = bf_first[t]; q <= bf_last[t]; q++)
    if (q / LW == nstar && md(q % LW - lr, LW) > ls) ls = md(q % LW - lr, LW);
  return ns * LW + ls;
}

/* Inter-node RS: the earliest node among those tile t feeds (node+1 first, own last), then
 * inside it the earliest local rank (lr+1 first, lr last). */
static int rs_nodes_key(int t, int r, int dir) {
  int node = r / LW, lr = r % LW, ns = NN, nstar = 0, ls = LW;
  (void)dir;
  for (int q = bf_first[t]; q <= bf_last[t]; q++)
    if (md(q / LW - node - 1, NN) < ns) ns = md(q / LW - node - 1, NN), nstar = q / LW;
  for (int q = bf_first[t]; q <= bf_last[t]; q++)
    if (q / LW == nstar && md(q % LW - lr - 1, LW) < ls) ls = md(q % LW - lr - 1, LW);
  return ns * LW + ls;
}

static int is_perm(const int *seq, int n, int range) {
  static unsigned char seen[MAXT * 8];
  if (range < 0 || range > (int)sizeof seen) return 0;
  memset(seen, 0, (size_t)range);
  for (int p = 0; p < n; p++) {
    if (seq[p] < 0 || seq[p] >= range || seen[seq[p]]) return 0;
    seen[seq[p]] = 1;
  }
  return n == range;
}

/* Permutation, and key non-decreasing along the order. */
static void check_order(const char *what, const int *seq, int (*key)(int, int, int), int r,
                        int dir) {
  if (!is_perm(seq, T, T)) {
    EXPECT(0, "%s rank %d dir %d: not a permutation of %d tile-rows", what, r, dir, T);
    return;
  }
  for (int p = 1; p < T; p++)
    if (key(seq[p], r, dir) < key(seq[p - 1], r, dir)) {
      EXPECT(0, "%s rank %d dir %d: position %d (tile %d, step %d) after tile %d (step %d)", what,
             r, dir, p, seq[p], key(seq[p], r, dir), seq[p - 1], key(seq[p - 1], r, dir));
      return;
    }
}

/* The first tiles are exactly the tiles that lie in the rank's own shard (via the needs range). */
static void check_local_first(const char *what, const int *seq, int r) {
  int own = 0;
  for (int t = 0; t < T; t++) own += bf_first[t] == r && bf_last[t] == r;
  for (int p = 0; p < own; p++) {
    int a, b;
    weft_swizzle_row_ranks(seq[p], W, MR, BM, &a, &b);
    EXPECT(a == r && b == r, "%s rank %d: position %d (tile %d) needs ranks %d..%d", what, r, p,
           seq[p], a, b);
  }
}

/* Perfect tiling: the shards met along the order, in order, are the chunk order. */
static void check_chunks_match(const char *what, const int *seq, const int *chunks, int r) {
  int s = 0;
  for (int p = 0; p < T; p++) {
    if (p > 0 && bf_first[seq[p]] == bf_first[seq[p - 1]]) continue;
    EXPECT(s < W && bf_first[seq[p]] == chunks[s],
           "%s rank %d: shard #%d is %d, chunk order says %d", what, r, s, bf_first[seq[p]],
           s < W ? chunks[s] : -1);
    s++;
  }
  EXPECT(s == W, "%s rank %d: %d shard runs", what, r, s);
}

/* Appendix B's construction, written out separately: each visited node's tile range with the
 * straddling tiles cut by its rules (AG: a node-boundary tile goes with the later-visited node,
 * the own node keeps none; RS: with the earlier-visited node, the own node's end one goes to
 * node+1), sizes summed in visiting order (positions) and in node order (tiles), and a rotation
 * inside the segment to the same-local-rank shard (AG, first tile starting in it) or the local
 * rank+1 shard (RS, the tile holding its first row). With this file's two deviations: AG local
 * rank 0 starts at the segment's start, RS local rank lw-1 targets local rank 0; an offset that
 * runs past the segment restarts at its start. Valid while no tile spans a whole node. */
static int ref_nodes_row(int p, int r, int scatter) {
  int node = r / LW, lr = r % LW, size[64] = {0}, by_node[64] = {0}, pos = 0, i, n;
  long long mn = (long long)LW * MR;
  for (i = 0; i < NN; i++) {
    n = (node + i + scatter) % NN;
    long long a = n * mn, b = (n + 1) * mn;
    int ts = (int)(a / BM), te = (int)((b - 1) / BM);
    int cut_start = a != 0 && (a - 1) / BM == ts, cut_end = b != M && b / BM == te;
    if (scatter) {
      ts += i != 0 && cut_start;
      te -= i == NN - 1 && cut_end;
    } else {
      ts += i == 0 && cut_start;
      te -= i != NN - 1 && cut_end;
    }
    size[i] = by_node[n] = te - ts + 1;
  }
  for (i = 0; i < NN - 1 && p >= pos + size[i]; i++) pos += size[i];
  n = (node + i + scatter) % NN;
  int tile0 = 0;
  for (int k = 0; k < n; k++) tile0 += by_node[k];
  long long m_start = n * mn + (long long)(scatter ? (lr + 1) % LW : lr) * MR;
  int target = scatter ? (int)(m_start / BM) : (int)((m_start + BM - 1) / BM);
  int off = target - tile0;
  if (off < 0 || (!scatter && lr == 0) || off >= size[i]) off = 0;
  return tile0 + (p - pos + off) % size[i];
}

static void check_grid(int world, int nnodes, long long mr, int bm) {
  static int seq[MAXT], seq2[MAXT], chunks[64], table[MAXT * 8];
  snprintf(test_context, sizeof test_context, "world %d nnodes %d m_per_rank %lld bm %d", world,
           nnodes, mr, bm);
  if (setup(world, nnodes, mr, bm)) {
    EXPECT(0, "grid too large for the test");
    return;
  }
  EXPECT(weft_swizzle_tiles_m(W, MR, BM) == T, "tiles_m %d, rows give %d",
         weft_swizzle_tiles_m(W, MR, BM), T);
  for (int t = 0; t < T; t++) {
    int a, b;
    weft_swizzle_row_ranks(t, W, MR, BM, &a, &b);
    EXPECT(a == bf_first[t] && b == bf_last[t], "row_ranks(%d) = %d..%d, rows give %d..%d", t, a, b,
           bf_first[t], bf_last[t]);
  }
  for (int q = 0; q < W; q++) {
    int t0, t1, lo = -1, hi = -1;
    weft_swizzle_rank_rows(q, MR, BM, &t0, &t1);
    for (int t = 0; t < T; t++)
      if (bf_first[t] <= q && q <= bf_last[t]) {
        if (lo < 0) lo = t;
        hi = t + 1;
      }
    EXPECT(t0 == lo && t1 == hi, "rank_rows(%d) = [%d, %d), rows give [%d, %d)", q, t0, t1, lo, hi);
  }
  int perfect = MR % BM == 0, no_wide = (long long)LW * MR >= BM;
  for (int r = 0; r < W; r++) {
    for (int dir = -1; dir <= 1; dir += 2) {
      for (int p = 0; p < T; p++) seq[p] = weft_swizzle_ag_row(p, r, W, MR, BM, dir);
      check_order("ag", seq, ag_key, r, dir);
      check_local_first("ag", seq, r);
      for (int s = 0; s < W; s++) chunks[s] = weft_swizzle_ag_chunk(s, r, W, dir);
      if (perfect) check_chunks_match("ag", seq, chunks, r);
      /* duality: RS with -dir is AG with dir read backwards */
      for (int p = 0; p < T; p++) seq2[p] = weft_swizzle_rs_row(T - 1 - p, r, W, MR, BM, -dir);
      EXPECT(!memcmp(seq, seq2, sizeof(int) * (size_t)T),
             "rank %d dir %d: rs(-dir) is not ag reversed", r, dir);

      for (int p = 0; p < T; p++) seq[p] = weft_swizzle_rs_row(p, r, W, MR, BM, dir);
      check_order("rs", seq, rs_key, r, dir);
      if (W > 1) {
        int a, b, q = md(r + dir, W);
        weft_swizzle_row_ranks(seq[0], W, MR, BM, &a, &b);
        EXPECT(a <= q && q <= b, "rs rank %d dir %d: first tile %d feeds %d..%d, not %d", r, dir,
               seq[0], a, b, q);
      }
      for (int s = 0; s < W; s++) chunks[s] = weft_swizzle_rs_chunk(s, r, W, dir);
      if (perfect) check_chunks_match("rs", seq, chunks, r);
    }

    for (int p = 0; p < T; p++) seq[p] = weft_swizzle_ag_nodes_row(p, r, W, NN, MR, BM);
    check_order("ag_nodes", seq, ag_nodes_key, r, 1);
    check_local_first("ag_nodes", seq, r);
    for (int s = 0; s < W; s++) chunks[s] = weft_swizzle_ag_nodes_chunk(s, r, W, NN);
    if (perfect) check_chunks_match("ag_nodes", seq, chunks, r);
    for (int p = 0; p < T; p++) {
      if (NN == 1)
        EXPECT(seq[p] == weft_swizzle_ag_row(p, r, W, MR, BM, 1), "ag_nodes != ag at %d", p);
      if (no_wide)
        EXPECT(seq[p] == ref_nodes_row(p, r, 0),
               "ag_nodes rank %d position %d: %d, Appendix B gives %d", r, p, seq[p],
               ref_nodes_row(p, r, 0));
    }

    for (int p = 0; p < T; p++) seq[p] = weft_swizzle_rs_nodes_row(p, r, W, NN, MR, BM);
    check_order("rs_nodes", seq, rs_nodes_key, r, 1);
    if (W > 1) {
      int a, b, q = ((r / LW + 1) % NN) * LW + (r % LW + 1) % LW;
      weft_swizzle_row_ranks(seq[0], W, MR, BM, &a, &b);
      EXPECT(a <= q && q <= b, "rs_nodes rank %d: first tile %d feeds %d..%d, not %d", r, seq[0], a,
             b, q);
    }
    for (int s = 0; s < W; s++) chunks[s] = weft_swizzle_rs_nodes_chunk(s, r, W, NN);
    if (perfect) check_chunks_match("rs_nodes", seq, chunks, r);
    for (int p = 0; p < T; p++) {
      if (NN == 1)
        EXPECT(seq[p] == weft_swizzle_rs_row(p, r, W, MR, BM, 1), "rs_nodes != rs at %d", p);
      if (no_wide)
        EXPECT(seq[p] == ref_nodes_row(p, r, 1),
               "rs_nodes rank %d position %d: %d, Appendix B gives %d", r, p, seq[p],
               ref_nodes_row(p, r, 1));
    }

    /* 2-D orders over a few widths and groups (ranks 0, 1 and the last keep this quick). */
    if (r > 1 && r != W - 1) continue;
    for (int kind = 0; kind < 4; kind++)
      for (int tn = 1; tn <= 7; tn += 3)
        for (int g = 1; g <= 4; g += 3) {
          weft_swizzle_t sw = {kind, r, W, NN, kind == WEFT_SWIZZLE_AG ? -1 : 1, BM, MR};
          int n = weft_swizzle_fill(tn, g, &sw, table);
          EXPECT(n == T * tn && is_perm(table, n, T * tn),
                 "fill kind %d rank %d tiles_n %d group %d: not a permutation", kind, r, tn, g);
          for (int p = 0; g == 1 && p < n; p++)
            if (table[p] != weft_swizzle_row(p / tn, &sw) * tn + p % tn) {
              EXPECT(0, "fill kind %d rank %d tiles_n %d: position %d is not row-major", kind, r,
                     tn, p);
              break;
            }
        }
  }
}

/* Chunk orders alone: permutations over steps, and senders agree with receivers. */
static void check_chunks(int world, int nnodes) {
  snprintf(test_context, sizeof test_context, "chunks world %d nnodes %d", world, nnodes);
  int seq[64], dst[64];
  for (int dir = -1; dir <= 1; dir += 2)
    for (int r = 0; r < world; r++) {
      for (int s = 0; s < world; s++) seq[s] = weft_swizzle_ag_chunk(s, r, world, dir);
      EXPECT(is_perm(seq, world, world) && seq[0] == r, "ag_chunk rank %d dir %d", r, dir);
      for (int s = 0; s < world; s++) seq[s] = weft_swizzle_rs_chunk(s, r, world, dir);
      EXPECT(is_perm(seq, world, world) && seq[world - 1] == r, "rs_chunk rank %d dir %d", r, dir);
      for (int s = 0; s < world; s++) seq[s] = weft_swizzle_ag_nodes_chunk(s, r, world, nnodes);
      EXPECT(is_perm(seq, world, world) && seq[0] == r, "ag_nodes_chunk rank %d", r);
      for (int s = 0; s < world; s++) seq[s] = weft_swizzle_rs_nodes_chunk(s, r, world, nnodes);
      EXPECT(is_perm(seq, world, world) && seq[world - 1] == r, "rs_nodes_chunk rank %d", r);
      /* node stages: own node first (AG) / last (RS), one node per stage */
      int lw = world / nnodes;
      for (int s = 0; s < world; s++) {
        EXPECT(weft_swizzle_ag_nodes_chunk(s, r, world, nnodes) / lw == (r / lw + s / lw) % nnodes,
               "ag_nodes_chunk stage");
        EXPECT(weft_swizzle_rs_nodes_chunk(s, r, world, nnodes) / lw ==
                   (r / lw + 1 + s / lw) % nnodes,
               "rs_nodes_chunk stage");
      }
    }
  for (int dir = -1; dir <= 1; dir += 2)
    for (int s = 0; s < world; s++) {
      for (int q = 0; q < world; q++) dst[q] = weft_swizzle_ag_push_peer(s, q, world, dir);
      EXPECT(is_perm(dst, world, world),
             "ag_push_peer step %d dir %d: two senders share a receiver", s, dir);
      for (int q = 0; q < world; q++)
        EXPECT(weft_swizzle_ag_chunk(s, dst[q], world, dir) == q,
               "ag push step %d: %d -> %d, receiver expects %d", s, q, dst[q],
               weft_swizzle_ag_chunk(s, dst[q], world, dir));
      for (int q = 0; q < world; q++) dst[q] = weft_swizzle_rs_chunk(s, q, world, dir);
      EXPECT(is_perm(dst, world, world), "rs_chunk step %d dir %d: two senders share a receiver", s,
             dir);
      for (int q = 0; q < world; q++)
        EXPECT(weft_swizzle_rs_reduce_src(s, dst[q], world, dir) == q,
               "rs step %d: %d -> %d, reducer expects %d", s, q, dst[q],
               weft_swizzle_rs_reduce_src(s, dst[q], world, dir));
    }
}

/* Appendix B's non-perfect case by hand: 997 rows per rank, 256-row tiles. */
static void check_by_hand(void) {
  snprintf(test_context, sizeof test_context, "by hand, 997 rows, bm 256");
  /* 8 ranks: 7976 rows, 32 tile-rows; shard 1 starts at row 997 inside tile 3 (768..1023). */
  EXPECT(weft_swizzle_tiles_m(8, 997, 256) == 32, "tiles_m");
  EXPECT(weft_swizzle_ag_row(0, 1, 8, 997, 256, 1) == 4, "ag rank 1 starts at tile 4");
  EXPECT(weft_swizzle_ag_row(31, 1, 8, 997, 256, 1) == 3, "ag rank 1 ends with straddler 3");
  EXPECT(weft_swizzle_rs_row(0, 0, 8, 997, 256, 1) == 3, "rs rank 0 starts with straddler 3");
  EXPECT(weft_swizzle_rs_row(31, 0, 8, 997, 256, 1) == 2, "rs rank 0 ends at tile 2");
  /* 16 ranks on 2 nodes: rank 0 first produces for rank 9, whose rows start at 8973 (tile 35). */
  EXPECT(weft_swizzle_rs_nodes_row(0, 0, 16, 2, 997, 256) == 35, "rs_nodes rank 0 starts at 35");
  /* node 1 (rows 7976..15951) is produced first: tiles 31 (straddler, 7936..8191) to 62. */
  for (int p = 0; p < 32; p++) {
    int t = weft_swizzle_rs_nodes_row(p, 0, 16, 2, 997, 256);
    EXPECT(t >= 31 && t <= 62, "rs_nodes rank 0 position %d: tile %d not in node 1", p, t);
  }
  /* 32 ranks on 4 nodes: rank 5 gathers its own rows 4985..5981 first: tiles 20..22. */
  EXPECT(weft_swizzle_ag_nodes_row(0, 5, 32, 4, 997, 256) == 20, "ag_nodes rank 5 starts at 20");
  EXPECT(weft_swizzle_ag_nodes_row(2, 5, 32, 4, 997, 256) == 22, "ag_nodes rank 5 third is 22");
}

int main(void) {
  test_fail_cap = 30;
  const int worlds[] = {1, 2, 3, 4, 8, 16, 32}, nodes[] = {1, 2, 4}, bms[] = {64, 128, 256};
  const long long mrs[] = {1, 3, 37, 50, 64, 100, 128, 255, 256, 257, 997, 1000, 1024, 2048};
  int grids = 0;
  for (int w = 0; w < 7; w++)
    for (int n = 0; n < 3; n++) {
      if (worlds[w] % nodes[n]) continue;
      check_chunks(worlds[w], nodes[n]);
      for (int b = 0; b < 3; b++)
        for (int m = 0; m < (int)(sizeof mrs / sizeof mrs[0]); m++, grids++)
          check_grid(worlds[w], nodes[n], mrs[m], bms[b]);
    }
  check_by_hand();
  printf("%s (%d grids, %d failures)\n", test_failures ? "FAILED" : "ok", grids, test_failures);
  return test_failures ? 1 : 0;
}
