/*
 * test_moe_plan.c — the arithmetic of an MoE routing plan (kernels/moe.h) and its sizes
 * (weft_moe_routing_size): for random plan sizes and routings of the kinds that matter (uniform,
 * skewed, every entry to one expert, most experts empty, one entry an expert), the rows every
 * expert's padding takes fit weft_moe_max_rows and its tiles weft_moe_max_tiles; the bound is
 * reached (one entry for each of the experts, and counts one more than a multiple of the tile);
 * the workspace holds every array at 256-byte alignment; and bad sizes are refused with a message.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/moe.h"
#include "support.h"
#include "weft.h"

static unsigned long long rng = 0x9E3779B97F4A7C15ull;
static unsigned long long next(void) {
  rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
  return rng;
}

/* Counts of `entries` entries over `experts` experts, of routing kind `kind`. */
static void route(int kind, long long entries, int experts, long long *counts) {
  memset(counts, 0, sizeof *counts * (size_t)experts);
  for (long long i = 0; i < entries; i++) {
    int e;
    switch (kind) {
    case 0: e = (int)(next() % (unsigned)experts); break;                      /* uniform */
    case 1: e = (int)((next() % (unsigned)experts) * (next() % 1000) / 1000); break; /* skewed */
    case 2: e = experts - 1; break;                                              /* one expert */
    case 3: e = (int)(next() % (unsigned)(experts < 3 ? experts : 3)); break;   /* most empty */
    default: e = (int)(i % experts); break;                                      /* round robin */
    }
    counts[e]++;
  }
}

int main(void) {
  long long *counts = malloc(sizeof *counts * WEFT_MOE_MAX_EXPERTS);
  if (!counts) return 1;
  const int tiles[] = {16, 64, 128, 256};
  int plans = 0;
  for (int round = 0; round < 4000; round++) {
    int tile = tiles[next() % 4];
    int experts = 1 + (int)(next() % (round % 5 == 0 ? WEFT_MOE_MAX_EXPERTS : 300));
    int topk = 1 + (int)(next() % (experts < 8 ? experts : 8));
    long long tokens = (long long)(next() % (round % 7 == 0 ? 20000 : 700));
    long long entries = tokens * topk;
    int kind = (int)(next() % 5);
    route(kind, entries, experts, counts);
    long long rows = 0, sum = 0;
    for (int e = 0; e < experts; e++) {
      long long pad = weft_moe_padded(counts[e], tile);
      EXPECT(pad >= counts[e] && pad < counts[e] + tile && pad % tile == 0,
             "expert %d: %lld entries padded to %lld rows at tile %d", e, counts[e], pad, tile);
      rows += pad, sum += counts[e];
    }
    long long max_rows = weft_moe_max_rows(tokens, topk, experts, tile);
    EXPECT(sum == entries, "the routing lost entries");
    EXPECT(rows <= max_rows, "tokens %lld topk %d experts %d tile %d kind %d: %lld rows > bound %lld",
           tokens, topk, experts, tile, kind, rows, max_rows);
    EXPECT(rows / tile <= weft_moe_max_tiles(tokens, topk, experts, tile),
           "tiles %lld over the bound %lld", rows / tile,
           weft_moe_max_tiles(tokens, topk, experts, tile));
    plans++;
  }
  /* the bound is reached: every expert one entry, or each count one more than a multiple */
  for (int tile = 16; tile <= 256; tile *= 2)
    for (int experts = 1; experts <= 64; experts += 7) {
      EXPECT(weft_moe_max_rows(experts, 1, experts, tile) == (long long)experts * tile,
             "one entry for each of %d experts at tile %d: %lld rows, not %lld", experts, tile,
             weft_moe_max_rows(experts, 1, experts, tile), (long long)experts * tile);
      long long tokens = (long long)experts * (2 * tile + 1);
      EXPECT(weft_moe_max_rows(tokens, 1, experts, tile) == (long long)experts * 3 * tile,
             "%lld entries, %d experts of 2 tiles + 1 each, tile %d: bound %lld, rows %lld",
             tokens, experts, tile, weft_moe_max_rows(tokens, 1, experts, tile),
             (long long)experts * 3 * tile);
    }

  /* the workspace: every array, each rounded up to 256 bytes */
  for (int round = 0; round < 2000; round++) {
    int tile = tiles[next() % 4], experts = 1 + (int)(next() % WEFT_MOE_MAX_EXPERTS);
    int topk = 1 + (int)(next() % (experts < 16 ? experts : 16));
    int tokens = (int)(next() % 50000);
    size_t bytes = 0;
    long long max_rows = -1;
    EXPECT_STATUS("weft_moe_routing_size", weft_moe_routing_size(tokens, topk, experts, tile,
                                                                 &bytes, &max_rows),
                  WEFT_STATUS_SUCCESS);
    long long entries = (long long)tokens * topk;
    size_t ints = (size_t)experts * 2 + 1 + (size_t)(weft_moe_chunks(entries) * experts) + 2 +
                  (size_t)(max_rows / tile) + (size_t)max_rows + (size_t)entries;
    EXPECT(max_rows == weft_moe_max_rows(tokens, topk, experts, tile), "max_rows %lld", max_rows);
    EXPECT(bytes >= ints * sizeof(int) && bytes <= ints * sizeof(int) + 8 * 256 && bytes % 256 == 0,
           "%d tokens x %d of %d experts, tile %d: %zu bytes for %zu ints", tokens, topk, experts,
           tile, bytes, ints);
  }

  /* bad sizes: refused, with a message, and nothing written */
  struct {
    const char *what, *text;
    int tokens, topk, experts, tile;
  } bad[] = {
      {"negative tokens", "tokens", -1, 1, 8, 128},
      {"topk 0", "topk", 16, 0, 8, 128},
      {"topk above experts", "topk", 16, 9, 8, 128},
      {"no experts", "experts", 16, 1, 0, 128},
      {"too many experts", "experts", 16, 1, WEFT_MOE_MAX_EXPERTS + 1, 128},
      {"tile 0", "tile_rows", 16, 1, 8, 0},
      {"tile 100", "tile_rows", 16, 1, 8, 100},
      {"tile 512", "tile_rows", 16, 1, 8, 512},
      {"rows past INT_MAX", "rows", 1 << 30, 4, 64, 128},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    size_t bytes = 12345;
    long long rows = 678;
    EXPECT_STATUS(bad[i].what, weft_moe_routing_size(bad[i].tokens, bad[i].topk, bad[i].experts,
                                                     bad[i].tile, &bytes, &rows),
                  WEFT_STATUS_INVALID_ARGUMENT);
    EXPECT(strstr(weft_get_last_error(), bad[i].text), "%s: the message \"%s\" does not name %s",
           bad[i].what, weft_get_last_error(), bad[i].text);
    EXPECT(bytes == 12345 && rows == 678, "%s: the sizes were written", bad[i].what);
  }
  EXPECT_ERROR(weft_moe_routing_size(16, 2, 8, 128, NULL, NULL), WEFT_STATUS_INVALID_ARGUMENT,
               "workspace_bytes is NULL");
  printf("%d random plans, %d checks, %d failed\n", plans, test_checks, test_failures);
  free(counts);
  return test_failures ? 1 : 0;
}
