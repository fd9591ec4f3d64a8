/*
 * test_moe_route.c — weft_moe_route and weft_moe_gather on one GPU against the host's reading of
 * the same routing: for uniform, skewed, all-to-one-expert, mostly-empty and one-entry-each
 * routings, token counts that are no multiple of the tile, tile heights 16 to 256 and up to 4096
 * experts: every expert's count and padded offset, the tile table (and -1 past it), every row's
 * entry (each expert's rows hold exactly its entries, in entry order; padding and the rows past
 * the end -1), entry_row the inverse of row_entry, and every gathered row bit for bit (zeros in
 * padding, the rows past the end untouched), and AllGather + MoE's tile order (every tile once,
 * stably sorted by its tokens' ranks' arrival, for 2 to 4 ranks, each the receiver); the workspace and the output poisoned before each call. Then an
 * expert id out of range (the plan empty, that entry -1, WEFT_STATUS_INVALID_ARGUMENT once, the
 * communicator usable), and the routing and gather captured in a CUDA graph, replayed on new ids.
 */
// weft-test: ranks=1 timeout=300
#include "gpu_test.h"
#include "ops/grouped.h" /* weft_moe_arrival_order */

#define POISON 0x7f7f7f7f

typedef struct moe_case {
  int tokens, topk, experts, tile, kind, hidden;
} moe_case_t;

static const char *kinds[] = {"uniform", "skewed", "one expert", "three experts", "round robin"};

static void draw_ids(const moe_case_t *c, unsigned long long *seed, int *ids) {
  for (int t = 0; t < c->tokens; t++)
    for (int j = 0; j < c->topk; j++) {
      unsigned long long r = test_rand(seed);
      int e;
      switch (c->kind) {
      case 0: e = (int)(r % (unsigned)c->experts); break;
      case 1: e = (int)((r % (unsigned)c->experts) * (test_rand(seed) % 1000) / 1000); break;
      case 2: e = c->experts - 1; break;
      case 3: e = (int)(r % (unsigned)(c->experts < 3 ? c->experts : 3)); break;
      default: e = (t * c->topk + j) % c->experts; break;
      }
      /* a token's slots choose distinct experts, as a router's top-k does (topk <= experts) */
      for (int q = 0; q < j; q++)
        if (ids[t * c->topk + q] == e) e = (e + 1) % c->experts, q = -1;
      ids[t * c->topk + j] = e;
    }
}

/* One case through the routing and the gather (graph: both captured, replayed twice on two
 * routings); returns the failures. */
static int run_case(weft_comm_t *comm, const moe_case_t *c, unsigned long long *seed, int graph) {
  snprintf(test_context, sizeof test_context, "%d tokens x top-%d of %d experts, tile %d, %s%s",
           c->tokens, c->topk, c->experts, c->tile, kinds[c->kind], graph ? ", graph" : "");
  int before = test_failures;
  long long entries = (long long)c->tokens * c->topk, max_rows;
  size_t ws_bytes;
  OK(weft_moe_routing_size(c->tokens, c->topk, c->experts, c->tile, &ws_bytes, &max_rows));
  size_t row_bytes = (size_t)c->hidden * 2, x_bytes = (size_t)c->tokens * row_bytes;
  size_t out_bytes = (size_t)max_rows * row_bytes;
  CUdeviceptr d_ids, d_ws, d_x, d_out;
  CU(cuMemAlloc(&d_ids, entries ? (size_t)entries * 4 : 4));
  CU(cuMemAlloc(&d_ws, ws_bytes));
  CU(cuMemAlloc(&d_x, x_bytes ? x_bytes : 16));
  CU(cuMemAlloc(&d_out, out_bytes ? out_bytes : 16));
  int *ids = malloc((size_t)(entries ? entries : 1) * sizeof(int));
  unsigned short *x = malloc(x_bytes ? x_bytes : 16), *out = malloc(out_bytes ? out_bytes : 16);
  int *counts = malloc(sizeof(int) * (size_t)c->experts), *offsets = malloc(sizeof(int) * (size_t)(c->experts + 1));
  int *row_entry = malloc(sizeof(int) * (size_t)(max_rows ? max_rows : 1));
  int *entry_row = malloc(sizeof(int) * (size_t)(entries ? entries : 1));
  long long max_tiles = max_rows / c->tile;
  int *tile_expert = malloc(sizeof(int) * (size_t)(max_tiles ? max_tiles : 1));
  long long *want = calloc((size_t)c->experts, sizeof *want);
  int *seen = malloc((size_t)(entries ? entries : 1) * sizeof(int));
  if (!ids || !x || !out || !counts || !offsets || !row_entry || !entry_row || !tile_expert ||
      !want || !seen) {
    fprintf(stderr, "host allocation failed\n");
    exit(1);
  }
  CUstream s;
  CU(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
  weft_moe_routing_t r;
  CUgraphExec exec = NULL;
  int replays = graph ? 2 : 1;
  for (int rep = 0; rep < replays; rep++) {
    draw_ids(c, seed, ids);
    for (size_t i = 0; i < x_bytes / 2; i++) x[i] = (unsigned short)test_rand(seed);
    /* on s, so that the routing reads them after they land */
    if (entries) CU(cuMemcpyHtoDAsync(d_ids, ids, (size_t)entries * 4, s));
    if (x_bytes) CU(cuMemcpyHtoDAsync(d_x, x, x_bytes, s));
    CU(cuMemsetD32Async(d_ws, POISON, ws_bytes / 4, s));
    CU(cuMemsetD32Async(d_out, POISON, out_bytes ? out_bytes / 4 : 4, s));
    if (!graph) {
      OK(weft_moe_route(comm, (const int32_t *)(uintptr_t)d_ids, c->tokens, c->topk, c->experts,
                        c->tile, (void *)(uintptr_t)d_ws, ws_bytes, &r, (weft_stream_t)s));
      OK(weft_moe_gather(comm, &r, (const void *)(uintptr_t)d_x, c->hidden, WEFT_DTYPE_BF16,
                         (void *)(uintptr_t)d_out, (weft_stream_t)s));
    } else if (!exec) { /* captured once; the replays read the ids and x copied in above */
      CUgraph g;
      CU(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
      OK(weft_moe_route(comm, (const int32_t *)(uintptr_t)d_ids, c->tokens, c->topk, c->experts,
                        c->tile, (void *)(uintptr_t)d_ws, ws_bytes, &r, (weft_stream_t)s));
      OK(weft_moe_gather(comm, &r, (const void *)(uintptr_t)d_x, c->hidden, WEFT_DTYPE_BF16,
                         (void *)(uintptr_t)d_out, (weft_stream_t)s));
      CU(cuStreamEndCapture(s, &g));
      CU(cuGraphInstantiate(&exec, g, 0));
      CU(cuGraphDestroy(g));
    }
    if (exec) CU(cuGraphLaunch(exec, s));
    OK(weft_stream_synchronize(comm, (weft_stream_t)s));
    CU(cuMemcpyDtoH(counts, (CUdeviceptr)(uintptr_t)r.counts, sizeof(int) * (size_t)c->experts));
    CU(cuMemcpyDtoH(offsets, (CUdeviceptr)(uintptr_t)r.offsets, sizeof(int) * (size_t)(c->experts + 1)));
    if (max_rows) CU(cuMemcpyDtoH(row_entry, (CUdeviceptr)(uintptr_t)r.row_entry, sizeof(int) * (size_t)max_rows));
    if (entries) CU(cuMemcpyDtoH(entry_row, (CUdeviceptr)(uintptr_t)r.entry_row, sizeof(int) * (size_t)entries));
    if (max_tiles) CU(cuMemcpyDtoH(tile_expert, (CUdeviceptr)(uintptr_t)r.tile_expert, sizeof(int) * (size_t)max_tiles));
    int tiles;
    CU(cuMemcpyDtoH(&tiles, (CUdeviceptr)(uintptr_t)r.tiles, sizeof tiles));
    if (out_bytes) CU(cuMemcpyDtoH(out, d_out, out_bytes));

    memset(want, 0, sizeof *want * (size_t)c->experts);
    for (long long i = 0; i < entries; i++) want[ids[i]]++;
    long long row = 0;
    for (int e = 0; e < c->experts; e++) {
      EXPECT(counts[e] == want[e], "expert %d: count %d, want %lld", e, counts[e], want[e]);
      EXPECT(offsets[e] == row, "expert %d: offset %d, want %lld", e, offsets[e], row);
      row += (want[e] + c->tile - 1) / c->tile * c->tile;
    }
    EXPECT(offsets[c->experts] == row, "rows in use %d, want %lld", offsets[c->experts], row);
    EXPECT(row <= max_rows, "rows in use %lld beyond the bound %lld", row, max_rows);
    EXPECT(tiles == row / c->tile, "tiles %d, want %lld", tiles, row / c->tile);
    for (long long t = 0; t < max_tiles; t++) {
      int e = -1;
      for (int q = 0; q < c->experts && t < row / c->tile; q++)
        if (t * c->tile >= offsets[q] && t * c->tile < offsets[q + 1]) e = q;
      if (!EXPECT(tile_expert[t] == e, "tile row %lld: expert %d, want %d", t, tile_expert[t], e))
        break;
    }
    /* each expert's rows hold exactly its entries, once each; the rest -1 */
    memset(seen, 0, (size_t)(entries ? entries : 1) * sizeof(int));
    for (int e = 0, bad = 0; e < c->experts && !bad; e++)
      for (long long q = offsets[e]; q < offsets[e + 1] && !bad; q++) {
        int en = row_entry[q];
        if (q < offsets[e] + want[e])
          bad = !EXPECT(en >= 0 && en < entries && ids[en] == e && !seen[en]++ && entry_row[en] == q,
                        "expert %d row %lld holds entry %d (its expert %d, row %d)", e, q, en,
                        en >= 0 && en < entries ? ids[en] : -2, en >= 0 && en < entries ? entry_row[en] : -2) ||
                !EXPECT(q == offsets[e] || row_entry[q - 1] < en,
                        "expert %d row %lld holds entry %d after entry %d (not in entry order)", e,
                        q, en, row_entry[q - 1]);
        else
          bad = !EXPECT(en == -1, "padding row %lld of expert %d holds %d", q, e, en);
      }
    for (long long q = row; q < max_rows; q++)
      if (!EXPECT(row_entry[q] == -1, "row %lld past the end holds %d", q, row_entry[q])) break;
    for (long long i = 0; i < entries; i++)
      if (!EXPECT(seen[i] == 1, "entry %lld placed %d times", i, seen[i])) break;
    /* the gather: rows in use bit for bit, padding zeros, the rest as poisoned */
    long long wrong = 0, first = -1;
    for (long long q = 0; q < max_rows; q++) {
      int en = row_entry[q];
      for (int h = 0; h < c->hidden; h++) {
        unsigned short got = out[q * c->hidden + h];
        unsigned short exp = q >= row ? 0x7f7f : en < 0 ? 0 : x[(long long)(en / c->topk) * c->hidden + h];
        if (got != exp && !wrong++) first = q * c->hidden + h;
      }
    }
    EXPECT(!wrong, "gather: %lld of %lld elements wrong, the first at %lld", wrong,
           max_rows * c->hidden, first);
    /* AllGather + MoE's tile order, as if these tokens were world ranks' (each rank's entries
     * per_rank of them, every rank in turn the receiver): the tiles of bm rows in use, sorted
     * stably by the arrival step of the last of their ranks */
    for (int bm = 64; bm <= 128 && c->tile % bm == 0 && entries; bm *= 2)
      for (int world = 2; world <= 4; world++)
        for (int me = 0; me < world; me++) {
          long long per = (entries + world - 1) / world, n = (long long)tiles * c->tile / bm;
          CUdeviceptr d_ord;
          CU(cuMemAlloc(&d_ord, (size_t)(2 * (max_rows / bm) + 1) * sizeof(int)));
          int *kd = (int *)(uintptr_t)d_ord, *od = kd + max_rows / bm;
          OK(weft_moe_arrival_order(comm, &r, bm, per, me, world, kd, od, (weft_stream_t)s));
          OK(weft_stream_synchronize(comm, (weft_stream_t)s));
          int *ord = malloc((size_t)(n ? n : 1) * sizeof(int)), *key = malloc((size_t)(n ? n : 1) * sizeof(int));
          unsigned char *hit = calloc((size_t)(n ? n : 1), 1);
          if (!ord || !key || !hit) exit(1);
          if (n) CU(cuMemcpyDtoH(ord, (CUdeviceptr)(uintptr_t)od, (size_t)n * sizeof(int)));
          int bad = 0;
          for (long long t = 0; t < n; t++) { /* each tile's key, from the host's plan */
            long long r0 = t * bm, r1 = r0 + bm - 1;
            while (r1 >= r0 && row_entry[r1] < 0) r1--;
            int k = 0;
            for (long long q = r1 >= r0 ? row_entry[r0] / per : 0; r1 >= r0 && q <= row_entry[r1] / per; q++) {
              int step = (int)((q - me + world) % world);
              k = step > k ? step : k;
            }
            key[t] = k;
          }
          for (long long i = 0; i < n && !bad; i++) {
            int t = ord[i];
            bad = t < 0 || t >= n || hit[t]++ ||
                  (i && (key[ord[i - 1]] > key[t] || (key[ord[i - 1]] == key[t] && ord[i - 1] > t)));
            if (bad)
              EXPECT(0, "tile order (bm %d, rank %d of %d): position %lld holds tile %d (key %d), "
                     "after tile %d (key %d)", bm, me, world, i, t, t >= 0 && t < n ? key[t] : -1,
                     i ? ord[i - 1] : -1, i && ord[i - 1] >= 0 && ord[i - 1] < n ? key[ord[i - 1]] : -1);
          }
          free(ord), free(key), free(hit);
          CU(cuMemFree(d_ord));
        }
  }
  if (exec) CU(cuGraphExecDestroy(exec));
  CU(cuStreamDestroy(s));
  CU(cuMemFree(d_ids));
  CU(cuMemFree(d_ws));
  CU(cuMemFree(d_x));
  CU(cuMemFree(d_out));
  free(ids), free(x), free(out), free(counts), free(offsets), free(row_entry), free(entry_row);
  free(tile_expert), free(want), free(seen);
  printf("%s %s\n", test_failures == before ? "ok  " : "FAIL", test_context);
  test_context[0] = 0;
  return test_failures - before;
}

/* An id outside [0, experts): the plan is empty, that entry -1, the status said once. */
static void invalid_id(weft_comm_t *comm) {
  int tokens = 300, topk = 2, experts = 8, tile = 128;
  size_t ws;
  long long max_rows;
  OK(weft_moe_routing_size(tokens, topk, experts, tile, &ws, &max_rows));
  int ids[600];
  for (int i = 0; i < 600; i++) ids[i] = i % experts;
  ids[417] = experts + 3;
  CUdeviceptr d_ids, d_ws;
  CU(cuMemAlloc(&d_ids, sizeof ids));
  CU(cuMemAlloc(&d_ws, ws));
  CU(cuMemcpyHtoD(d_ids, ids, sizeof ids));
  weft_moe_routing_t r;
  OK(weft_moe_route(comm, (const int32_t *)(uintptr_t)d_ids, tokens, topk, experts, tile,
                    (void *)(uintptr_t)d_ws, ws, &r, NULL));
  EXPECT_ERROR(weft_stream_synchronize(comm, NULL), WEFT_STATUS_INVALID_ARGUMENT, "entry 417");
  int tiles, row;
  CU(cuMemcpyDtoH(&tiles, (CUdeviceptr)(uintptr_t)r.tiles, sizeof tiles));
  CU(cuMemcpyDtoH(&row, (CUdeviceptr)(uintptr_t)(r.entry_row + 417), sizeof row));
  EXPECT(tiles == 0, "after an invalid id the plan has %d tile rows, not 0", tiles);
  EXPECT(row == -1, "the invalid entry went to row %d", row);
  EXPECT_STATUS("synchronize again: said once", weft_stream_synchronize(comm, NULL),
                WEFT_STATUS_SUCCESS);
  for (int i = 0; i < 600; i++) ids[i] = (i * 7) % experts;
  CU(cuMemcpyHtoD(d_ids, ids, sizeof ids));
  OK(weft_moe_route(comm, (const int32_t *)(uintptr_t)d_ids, tokens, topk, experts, tile,
                    (void *)(uintptr_t)d_ws, ws, &r, NULL));
  OK(weft_stream_synchronize(comm, NULL));
  CU(cuMemcpyDtoH(&tiles, (CUdeviceptr)(uintptr_t)r.tiles, sizeof tiles));
  EXPECT(tiles == experts * 1, "the next call: %d tile rows, want %d", tiles, experts);
  CU(cuMemFree(d_ids));
  CU(cuMemFree(d_ws));
}

int main(void) {
  weft_comm_t *comm = test_init();
  unsigned long long seed = test_seed(comm);
  const int tiles[] = {16, 64, 128, 256};
  moe_case_t fixed[] = {
      {0, 2, 8, 128, 0, 64},     {1, 1, 1, 16, 0, 8},        {257, 2, 8, 128, 0, 4096},
      {1000, 8, 256, 128, 1, 1024}, {999, 4, 64, 64, 2, 256}, {513, 6, 160, 128, 3, 512},
      {4096, 1, 4096, 16, 4, 64}, {2048, 8, 128, 256, 0, 2048},
  };
  for (size_t i = 0; i < sizeof fixed / sizeof fixed[0]; i++) run_case(comm, &fixed[i], &seed, 0);
  for (int i = 0; i < 24; i++) {
    moe_case_t c;
    c.experts = 1 + (int)(test_rand(&seed) % (i % 6 == 0 ? 4096 : 300));
    c.topk = 1 + (int)(test_rand(&seed) % (c.experts < 8 ? c.experts : 8));
    c.tokens = (int)(test_rand(&seed) % (i % 5 == 0 ? 16384 : 1500));
    c.tile = tiles[test_rand(&seed) % 4];
    c.kind = (int)(test_rand(&seed) % 5);
    c.hidden = 8 * (1 + (int)(test_rand(&seed) % 96));
    run_case(comm, &c, &seed, i % 4 == 3);
  }
  invalid_id(comm);
  OK(weft_comm_destroy(comm));
  printf("%d checks, %d failed\n%s\n", test_checks, test_failures, test_failures ? "FAILED" : "ok");
  return test_failures ? 1 : 0;
}
