/*
 * test_alltoall_plan.c — the arithmetic of kernels/alltoall.h, which kernels/alltoall.cu runs as
 * it is here: for world sizes 1 to WEFT_MAX_LOCAL_RANKS, random chunk sizes sent and received
 * (zeros, tiny, around the slice sizes, skewed, huge), block budgets and LL thresholds (none,
 * AUTO's, all: the slices of LL pairs follow both of their chunks), every block maps to exactly
 * one (pair, slice), every pair has 1 to WEFT_A2A_MAX_SLICES slices and the grid stays within the budget
 * (or one block per pair); the pairs' peers are a permutation ending with the rank itself; the
 * slices of a chunk tile it exactly, start on WEFT_A2A_SLICE_ALIGN multiples, and add
 * WEFT_A2A_UNITS to the done count in all, each at least one; the plan fits a kernel's
 * parameter space beside the other arguments; and the 16-byte copy of chunks misaligned
 * against their destination (weft_a2a_shift_plan) stores aligned and reads inside the chunk.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "weft.h"
#include "kernels/alltoall.h"
#include "support.h"

static unsigned long long rng = 0x243F6A8885A308D3ull;
static unsigned long long next(void) {
  rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
  return rng;
}

/* A chunk size of the kinds that matter: 0, a few bytes, around slice and alignment edges,
 * many slices, beyond WEFT_A2A_MAX_SLICES slices, huge. */
static weft_u64 draw_bytes(void) {
  switch (next() % 7) {
  case 0: return 0;
  case 1: return 1 + next() % 64;
  case 2: return WEFT_A2A_SLICE_ALIGN * (1 + next() % 4) + next() % 3 - 1;
  case 3: return WEFT_A2A_SLICE_BYTES * (1 + next() % 4) + next() % 3 - 1;
  case 4: return next() % (WEFT_A2A_SLICE_BYTES * WEFT_A2A_MAX_SLICES * 2);
  case 5: return next() % (1ull << 40);
  default: return next() % (64ull << 20);
  }
}

static void check_slices(weft_u64 n, int slices) {
  weft_u64 end = 0, units = 0;
  for (int s = 0; s < slices; s++) {
    weft_u64 lo, hi, u = weft_a2a_units(s, slices);
    weft_a2a_slice(n, s, slices, &lo, &hi);
    EXPECT(lo == end, "n %llu slices %d: slice %d starts at %llu, the last ended at %llu",
           (unsigned long long)n, slices, s, (unsigned long long)lo, (unsigned long long)end);
    EXPECT(lo <= hi && hi <= n, "n %llu slices %d: slice %d is [%llu, %llu)", (unsigned long long)n,
           slices, s, (unsigned long long)lo, (unsigned long long)hi);
    EXPECT(lo == n || lo % WEFT_A2A_SLICE_ALIGN == 0, "n %llu slices %d: slice %d starts at %llu",
           (unsigned long long)n, slices, s, (unsigned long long)lo);
    EXPECT(u >= 1, "slices %d: slice %d adds no unit", slices, s);
    end = hi;
    units += u;
  }
  EXPECT(end == n, "n %llu slices %d: the slices end at %llu", (unsigned long long)n, slices,
         (unsigned long long)end);
  EXPECT(units == WEFT_A2A_UNITS, "slices %d add %llu units", slices, (unsigned long long)units);
}

/* Slices of b bytes at per bytes each, 1 to WEFT_A2A_MAX_SLICES. */
static weft_u64 slices_for(weft_u64 b, weft_u64 per) {
  weft_u64 w = b / per + (b % per != 0);
  return w < 1 ? 1 : w > WEFT_A2A_MAX_SLICES ? WEFT_A2A_MAX_SLICES : w;
}

/* ll_below: 0 (every chunk stored), the AUTO threshold, or everything LL. */
static void check_plan(int world, int me, int budget, weft_u64 ll_below) {
  weft_a2a_plan_t plan;
  memset(&plan, 0xA5, sizeof plan);
  for (int p = 0; p < world; p++) plan.send_bytes[p] = draw_bytes(), plan.recv_bytes[p] = draw_bytes();
  unsigned grid = weft_a2a_plan_blocks(&plan, me, world, budget, WEFT_A2A_SLICE_BYTES, ll_below);
  int bound = budget > world ? budget : world;
  EXPECT(grid >= (unsigned)world && grid <= (unsigned)bound, "world %d budget %d: grid %u", world,
         budget, grid);
  EXPECT(grid == plan.first_block[world], "grid %u, first_block[world] %u", grid,
         plan.first_block[world]);
  int seen_peer[WEFT_MAX_LOCAL_RANKS] = {0};
  weft_u64 want[WEFT_MAX_LOCAL_RANKS], wanted = 0; /* slices by size alone */
  for (int k = 0; k < world; k++) { /* the stores' or the LL lines' slices, both ways for LL */
    int p = weft_a2a_peer(k, me, world);
    weft_u64 b = plan.send_bytes[p], r = plan.recv_bytes[p];
    int ll_out = p != me && b < ll_below, ll_in = p != me && r < ll_below;
    want[k] = slices_for(b, ll_out ? WEFT_A2A_LL_SLICE_BYTES : WEFT_A2A_SLICE_BYTES);
    if (ll_in && slices_for(r, WEFT_A2A_LL_SLICE_BYTES) > want[k]) want[k] = slices_for(r, WEFT_A2A_LL_SLICE_BYTES);
    wanted += want[k];
  }
  for (int k = 0; k < world; k++) {
    int n = plan.first_block[k + 1] - plan.first_block[k];
    EXPECT(n >= 1 && n <= WEFT_A2A_MAX_SLICES, "world %d: pair %d has %d slices", world, k, n);
    int p = weft_a2a_peer(k, me, world);
    EXPECT(p >= 0 && p < world && !seen_peer[p], "world %d me %d: pair %d goes to %d", world, me, k, p);
    if (p >= 0 && p < world) seen_peer[p] = 1;
    /* fewer slices than the size asks for only when the budget forced it */
    weft_u64 b = plan.send_bytes[p];
    EXPECT((weft_u64)n <= want[k], "pair %d: %d slices for %llu bytes", k, n, (unsigned long long)b);
    if (wanted <= (weft_u64)bound)
      EXPECT((weft_u64)n == want[k], "pair %d: %d slices for %llu bytes within the budget", k, n,
             (unsigned long long)b);
    check_slices(b, n);
    check_slices(plan.recv_bytes[p], n); /* an LL pair's blocks unpack the received chunk too */
  }
  EXPECT(weft_a2a_peer(world - 1, me, world) == me, "world %d: the own chunk is not last", world);
  /* every block finds its (pair, slice), and every (pair, slice) has one block */
  for (unsigned b = 0; b < grid; b++) {
    int k = -1, s = -1, slices = -1;
    weft_a2a_block(&plan, world, b, &k, &s, &slices);
    EXPECT(k >= 0 && k < world && s >= 0 && s < slices && plan.first_block[k] + (unsigned)s == b &&
               slices == plan.first_block[k + 1] - plan.first_block[k],
           "world %d: block %u -> pair %d slice %d of %d", world, b, k, s, slices);
  }
}

/* weft_a2a_shift_plan for a copy of n bytes from address src to dst (misaligned differently):
 * the vectors' stores aligned, their source vectors aligned and inside [src, src + n), head,
 * vectors and tail covering [0, n) in order, head and tail under 32 bytes. */
static void check_shift(weft_u64 dst, weft_u64 src, weft_u64 n) {
  weft_u64 head, nv;
  unsigned r;
  weft_a2a_shift_plan(dst, src, n, &head, &r, &nv);
  weft_u64 tail = n - head - 16 * nv;
  EXPECT(head <= n && head + 16 * nv <= n, "shift dst %llu src %llu n %llu: head %llu, %llu vectors",
         (unsigned long long)dst, (unsigned long long)src, (unsigned long long)n, (unsigned long long)head,
         (unsigned long long)nv);
  EXPECT(head < 32, "shift n %llu: a head of %llu bytes", (unsigned long long)n, (unsigned long long)head);
  if (!nv) {
    EXPECT(n < 64, "shift dst %llu src %llu n %llu: no vectors", (unsigned long long)dst,
           (unsigned long long)src, (unsigned long long)n);
    return;
  }
  weft_u64 base = src + head - r; /* the first vector's first source vector */
  EXPECT(r >= 1 && r <= 15 && (src + head) % 16 == r, "shift: r %u at src %llu + head %llu", r,
         (unsigned long long)src, (unsigned long long)head);
  EXPECT((dst + head) % 16 == 0, "shift: stores at dst %llu + %llu unaligned", (unsigned long long)dst,
         (unsigned long long)head);
  EXPECT(base % 16 == 0 && base >= src && base + 16 * (nv + 1) <= src + n,
         "shift dst %llu src %llu n %llu: source vectors [%llu, %llu) outside the chunk",
         (unsigned long long)dst, (unsigned long long)src, (unsigned long long)n,
         (unsigned long long)base, (unsigned long long)(base + 16 * (nv + 1)));
  EXPECT(tail < 32, "shift n %llu: a tail of %llu bytes", (unsigned long long)n, (unsigned long long)tail);
}

int main(void) {
  test_fail_cap = 20;
  /* kernel parameters: the plan beside send, recv, inbox, ll, ll_slot, ll_below, elem and v,
   * within 4 KiB */
  EXPECT(sizeof(weft_a2a_plan_t) + 8 * 8 <= 4096, "the plan has %zu bytes", sizeof(weft_a2a_plan_t));
  EXPECT(WEFT_A2A_MAX_SLICES <= WEFT_A2A_UNITS, "more slices than units");
  EXPECT(WEFT_A2A_SLICE_ALIGN % 8 == 0, "LL slices must start on whole lines");
  EXPECT((unsigned long long)WEFT_MAX_LOCAL_RANKS * WEFT_A2A_MAX_SLICES <= 65535,
         "first_block (16 bits) cannot hold the largest grid");
  for (int slices = 1; slices <= WEFT_A2A_MAX_SLICES; slices++) {
    check_slices(0, slices);
    check_slices(1, slices);
    for (int i = 0; i < 200; i++) check_slices(draw_bytes(), slices);
  }
  for (int world = 1; world <= WEFT_MAX_LOCAL_RANKS; world++)
    for (int i = 0; i < 40; i++) {
      int me = (int)(next() % (unsigned)world);
      int budgets[] = {1, world, 132, 264, 2048, (int)(1 + next() % 400)};
      weft_u64 ll_below[] = {0, WEFT_ALLTOALL_LL_MAX_BYTES + 1ull, ~0ull};
      check_plan(world, me, budgets[i % 6], ll_below[i / 6 % 3]);
    }
  for (weft_u64 d = 0; d < 64; d++) /* every pair of offsets that differ mod 16, sizes 0-300 */
    for (weft_u64 a = 0; a < 64; a++)
      if ((d ^ a) & 15)
        for (weft_u64 n = 0; n <= 300; n++) check_shift(4096 + d, 1048576 + a, n);
  for (int i = 0; i < 100000; i++) {
    weft_u64 d = next() % (1ull << 40), a = next() % (1ull << 40);
    if ((d ^ a) & 15) check_shift(d, a, next() % (64ull << 20));
  }
  printf("%d checks, %d failed\n", test_checks, test_failures);
  return test_failures ? 1 : 0;
}
