/*
 * kernels/gemm/mainloop_load.cuh — a part of weft_gemm's body (kernels/gemm/gemm.cu), not a
 * header to include elsewhere: the producer thread's loads of one work item, the mainloop's
 * producer side. It picks A's map and first row for the tile (the caller's own rows with
 * WEFT_GEMM_A_OWN; for a partial last tile row the map of a box of its rows only, tm_a_tail),
 * then for each of the item's k-blocks waits until the next stage of the ring is free (its empty
 * barrier), sets the stage's full barrier to expect the stage's bytes and issues the TMA loads
 * of A's and B's boxes onto it: in a 2x1 cluster each CTA loads half of B and multicasts it to
 * both; [K,N] B and [K,M] A come as boxes of 64 x 64. WEFT_GEMM_GATED's B columns come from
 * both halves of B, each warpgroup block's gate columns then its up columns. WEFT_GEMM_A_GATHER:
 * the whole producer warpgroup gathers A's rows from the tokens by cp.async, after the tile's
 * ranks have arrived (WEFT_GEMM_GROUP_WAIT).
 *
 * Included in the producer thread's loop over work items, after the item's w is decoded. Uses the
 * kernel's M, N, tm_a, tm_a_own, tm_a_tail, a_tail_rows, a_own_row0, tm_b and WEFT_GEMM_IS_OWN, the
 * shared-memory layout (sA, sB, bar_full, bar_empty), cta_rank, with WEFT_GEMM_B_EVICT_FIRST the
 * thread's pol_b, with WEFT_GEMM_GROUPED group_expert and group_rows, and the thread's stage and
 * phase, which it advances.
 */

/* B's loads (see WEFT_GEMM_B_EVICT_FIRST; pol_b is the producer's policy); GROUPED: from the
 * tile row's expert's matrix */
#if WEFT_GEMM_GROUPED
#if WEFT_GEMM_B_EVICT_FIRST
#define WEFT_GEMM_LOAD_B(d, m, c0, c1, b) weft_gemm_tma_load3_hint(d, m, c0, c1, expert, b, pol_b)
#else
#define WEFT_GEMM_LOAD_B(d, m, c0, c1, b) weft_gemm_tma_load3(d, m, c0, c1, expert, b)
#endif
#elif WEFT_GEMM_B_EVICT_FIRST
#define WEFT_GEMM_LOAD_B(d, m, c0, c1, b) weft_gemm_tma_load_hint(d, m, c0, c1, b, pol_b)
#define WEFT_GEMM_LOAD_B_MC(d, m, c0, c1, b, k) weft_gemm_tma_load_mc_hint(d, m, c0, c1, b, k, pol_b)
#else
#define WEFT_GEMM_LOAD_B(d, m, c0, c1, b) weft_gemm_tma_load(d, m, c0, c1, b)
#define WEFT_GEMM_LOAD_B_MC(d, m, c0, c1, b, k) weft_gemm_tma_load_mc(d, m, c0, c1, b, k)
#endif

/* A_OWN: the tile's rows from the caller's own rows. A partial last tile row loads only
 * the rows that exist (whole swizzle atoms; the stage's other rows keep stale bytes,
 * whose output rows are never stored): the box's out-of-bounds rows held the 128-column
 * tiles back (H200: 160x8192x14336 134 us against 86 for 256 rows) */
#if !WEFT_GEMM_A_GATHER
const int a_tail = a_tail_rows && w.m0 + WEFT_GEMM_BM > M;
const weft_gemm_tmap_t *map_a =
    WEFT_GEMM_IS_OWN(w.m0) ? &tm_a_own : a_tail ? &tm_a_tail : &tm_a;
const int row_a = WEFT_GEMM_IS_OWN(w.m0) ? w.m0 - a_own_row0 : w.m0;
const u32 stage_tx = a_tail ? (u32)a_tail_rows * (WEFT_GEMM_BK * 2) + WEFT_GEMM_B_BYTES
                            : WEFT_GEMM_STAGE_BYTES;
#endif
#if WEFT_GEMM_GROUPED
const int expert = group_expert[w.m0 / group_rows];
#endif
#if WEFT_GEMM_GROUP_WAIT
/* the ranks whose tokens the tile holds, from its first row's to its last entry row's (a tile of
 * padding only waits for none); the warpgroup loads once thread 0 has seen them all */
if (tid == 0) {
  int r0 = w.m0, r1 = w.m0 + WEFT_GEMM_BM - 1;
  while (r1 >= r0 && row_entry[r1] < 0) r1--;
  const int per = wait_rows_per_signal * topk; /* a rank's entries */
  for (int s = r1 >= r0 ? row_entry[r0] / per : 0; r1 >= r0 && s <= row_entry[r1] / per; s++) {
    u64 seen = 0;
    const unsigned st = weft_gemm_wait_signal(wait_signals + s, wait_expected, timeout_ns, &seen, 1);
    if (st) weft_gemm_report(error, st, w.tile, s, s, wait_expected, seen);
    if (st == WEFT_DEVICE_ERROR_TIMEOUT) asm volatile("trap;");
  }
}
weft_gemm_named_sync(1, 128);
#endif
#if WEFT_GEMM_A_GATHER
/* this thread's 16-byte piece ga_ch of the tile's rows ga_row + 16 i, and their tokens (-1: a
 * padding row, zeros) */
const int ga_ch = tid % 8, ga_row = tid / 8;
int ga_token[WEFT_GEMM_BM / 16];
#pragma unroll
for (int i = 0; i < WEFT_GEMM_BM / 16; i++) {
  const int e = row_entry[w.m0 + ga_row + 16 * i];
  ga_token[i] = e >= 0 ? e / topk : -1;
}
#endif
for (int kb = w.kb0; kb < w.kb1; kb++) {
  const u32 full = bar_full + 8 * stage;
  weft_gemm_mbar_wait(bar_empty + 8 * stage, phase ^ 1);
  const int k0 = kb * WEFT_GEMM_BK;
#if WEFT_GEMM_A_GATHER
  /* A: every producer thread its pieces, then its arrival once they have landed; B below by
   * thread 0, whose expect_tx counts B's bytes only */
  if (tid == 0) weft_gemm_mbar_expect_tx(full, WEFT_GEMM_B_BYTES);
  {
    const int col = k0 + ga_ch * 8; /* K % 8 == 0: a piece lies wholly inside K or past it */
#pragma unroll
    for (int i = 0; i < WEFT_GEMM_BM / 16; i++) {
      const int row = ga_row + 16 * i, ok = ga_token[i] >= 0 && col < K;
      const char *src = (const char *)gather_a +
                        (ok ? ((long long)ga_token[i] * gather_lda + col) * 2 : 0);
      weft_gemm_cp_async16(sA + stage * WEFT_GEMM_A_BYTES + row * 128 + ((ga_ch ^ (row & 7)) << 4),
                           src, ok ? 16 : 0);
    }
    weft_gemm_cp_async_arrive(full);
  }
  if (tid == 0) {
#elif WEFT_GEMM_CLUSTER_M > 1
  /* a cluster's second tile may lie wholly past M (odd tile-row count): it loads no A
   * (its results are not stored) but still multicasts its half of B to its peer */
  if (w.m0 < M) {
    weft_gemm_mbar_expect_tx(full, stage_tx);
    weft_gemm_tma_load(sA + stage * WEFT_GEMM_A_BYTES, map_a, k0, row_a, full);
  } else {
    weft_gemm_mbar_expect_tx(full, WEFT_GEMM_B_BYTES);
  }
#elif WEFT_GEMM_A_KMAJOR
  weft_gemm_mbar_expect_tx(full, stage_tx);
  weft_gemm_tma_load(sA + stage * WEFT_GEMM_A_BYTES, map_a, k0, row_a, full);
#else
  /* [K,M] A: one box of 64 (M) x 64 (K) per consumer warpgroup's rows */
  weft_gemm_mbar_expect_tx(full, stage_tx);
  weft_gemm_tma_load(sA + stage * WEFT_GEMM_A_BYTES, map_a, row_a, k0, full);
  weft_gemm_tma_load(sA + stage * WEFT_GEMM_A_BYTES + 8192, map_a, row_a + 64, k0, full);
#endif
  const u32 b_dst = sB + stage * WEFT_GEMM_B_BYTES;
#if WEFT_GEMM_GATED
  /* the tile's B columns: per warpgroup block, its output columns' gate columns (from the first
   * half of B's N) then their up columns (from the second): chunks of WG_N/2 (gated.h) */
  const int half = WEFT_GEMM_WG_N / 2;
#define WEFT_GEMM_GATED_SRC(col) weft_gemm_gated_source((col), half, w.n0, N)
#endif
#if WEFT_GEMM_B_KMAJOR && WEFT_GEMM_GATED
  /* [N,K] B: one box of WG_N/2 rows a chunk (128 bytes a row) */
#pragma unroll
  for (int ch = 0; ch < WEFT_GEMM_BN / half; ch++)
    WEFT_GEMM_LOAD_B(b_dst + ch * half * 128, &tm_b, k0, WEFT_GEMM_GATED_SRC(ch * half), full);
#elif WEFT_GEMM_B_KMAJOR
#if WEFT_GEMM_CLUSTER_M > 1
  /* each CTA loads BN/2 rows of B and multicasts them to both CTAs */
  WEFT_GEMM_LOAD_B_MC(b_dst + cta_rank * (WEFT_GEMM_B_BYTES / 2), &tm_b, k0,
                      w.n0 + (int)cta_rank * (WEFT_GEMM_BN / 2), full, 3);
#else
  WEFT_GEMM_LOAD_B(b_dst, &tm_b, k0, w.n0, full);
#endif
#else
  /* [K,N] B: boxes of 64 (N) x 64 (K), 8 KiB each, one per 64 columns; in 2x1 clusters
   * each CTA loads every other box and multicasts it to both (an odd count, BN = 192,
   * gives CTA 0 one more: each CTA's barrier still receives the whole tile) */
#pragma unroll
  for (int jj = 0; jj < WEFT_GEMM_BN / 64; jj++) {
#if WEFT_GEMM_CLUSTER_M > 1
    if (jj % WEFT_GEMM_CLUSTER_M == (int)cta_rank)
      WEFT_GEMM_LOAD_B_MC(b_dst + jj * 8192, &tm_b, w.n0 + jj * 64, k0, full, 3);
#elif WEFT_GEMM_GATED
    WEFT_GEMM_LOAD_B(b_dst + jj * 8192, &tm_b, WEFT_GEMM_GATED_SRC(jj * 64), k0, full);
#else
    WEFT_GEMM_LOAD_B(b_dst + jj * 8192, &tm_b, w.n0 + jj * 64, k0, full);
#endif
  }
#endif
#if WEFT_GEMM_A_GATHER
  } /* thread 0's B */
#endif
  if (++stage == WEFT_GEMM_STAGES) {
    stage = 0;
    phase ^= 1;
  }
}
#undef WEFT_GEMM_GATED_SRC
