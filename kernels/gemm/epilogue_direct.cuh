/*
 * kernels/gemm/epilogue_direct.cuh — a part of weft_gemm's body (kernels/gemm/gemm.cu), not a
 * header to include elsewhere: a consumer warpgroup's epilogue in the direct-store kernel
 * (WEFT_GEMM_SPLITK), which writes C from registers, with no staging box, one accumulator column
 * group at a time (WEFT_GEMM_OUT_GROUP: C's elements, kernels/gemm/store.cuh, or with
 * WEFT_GEMM_LL its LL lines, kernels/gemm/ll.cuh). An unsplit tile (k_splits 1) goes straight
 * to C. The splits of a tile reduce in a cluster (WEFT_GEMM_CLUSTER_K: each CTA sends the column
 * groups it does not own to their owner's shared memory by st.async and sums those it owns) or
 * through the fp32 workspace (each split stores its partial and arrives on the tile's counter;
 * the last sums them all, in split order). With WEFT_GEMM_HOOK_NOTIFY, +1 on the sub-tile's
 * counter once its stores are done.
 *
 * Included after the mainloop (kernels/gemm/mainloop_mma.cuh) in the consumer warpgroup's loop
 * over work items. Uses the kernel's parameters, w, cta_rank, tiles_m, tiles_n, sC, red_full,
 * red_empty, flag, and the warpgroup's tid, cw, wtid, warp, lane, row_off, col_off, d and
 * red_round.
 */

/* a cluster's tile wholly past M (odd tile-row count) has no partial and no counter */
if (w.m0 < M) {
#if WEFT_GEMM_LL
  const weft_gemm_ll_t lld =
      weft_gemm_ll_dst(c, ll_epoch, ll_slot, peer_stride, ll_rank, ll_world);
#endif
  const int row_a = w.m0 + row_off + 16 * warp + lane / 4;
  const int col_a = w.n0 + col_off + 2 * (lane & 3);
#if WEFT_GEMM_CLUSTER_K > 1
  /* Cluster reduction (see WEFT_GEMM_CLUSTER_K). Received partials at the owner: float4
   * [sender slot][owned group j][cw][wtid], the slots of the peers in rank order. */
  const int S = WEFT_GEMM_CLUSTER_K, r = (int)cta_rank;
  /* what this CTA sent for the last tile must have been read before it sends again */
  if (red_round > 0) weft_gemm_mbar_wait_cluster(red_empty, (red_round - 1) & 1);
  if (wtid == 0 && cw == 0) /* the bytes this CTA's groups will receive */
    weft_gemm_mbar_expect_tx(red_full, (u32)((S - 1) * ((WEFT_GEMM_NV - r + S - 1) / S) * 256 * 16));
#pragma unroll
  for (int v = 0; v < WEFT_GEMM_NV; v++) {
    const int o = v % S;
    if (o == r) continue;
    const int slot = r < o ? r : r - 1;
    weft_gemm_st_async_v4(sC + (((slot * WEFT_GEMM_RED_J + v / S) * 2 + cw) * 128 + wtid) * 16,
                          (u32)o, red_full, d[4 * v], d[4 * v + 1], d[4 * v + 2], d[4 * v + 3]);
  }
  weft_gemm_mbar_wait_cluster(red_full, red_round & 1);
#pragma unroll
  for (int v = 0; v < WEFT_GEMM_NV; v++) {
    if (v % S != r) continue;
    float a0 = 0.f, a1 = 0.f, a2 = 0.f, a3 = 0.f;
#pragma unroll
    for (int sp = 0; sp < S; sp++) {
      float4 x;
      if (sp == r) {
        x.x = d[4 * v], x.y = d[4 * v + 1], x.z = d[4 * v + 2], x.w = d[4 * v + 3];
      } else {
        const u32 at = sC + ((((sp < r ? sp : sp - 1) * WEFT_GEMM_RED_J + v / S) * 2 + cw) * 128 + wtid) * 16;
        asm volatile("ld.shared.v4.f32 {%0, %1, %2, %3}, [%4];"
                     : "=f"(x.x), "=f"(x.y), "=f"(x.z), "=f"(x.w)
                     : "r"(at)
                     : "memory");
      }
      a0 += x.x, a1 += x.y, a2 += x.z, a3 += x.w;
    }
    WEFT_GEMM_OUT_GROUP(row_a, col_a + 8 * v, a0, a1, a2, a3);
  }
  /* this warpgroup has read its part of what the peers sent: tell each of them */
  weft_gemm_named_sync(2 + cw, 128);
  if (wtid == 0)
    for (int sp = 0; sp < S; sp++)
      if (sp != r) weft_gemm_mbar_arrive_cluster(red_empty, (u32)sp);
  red_round++;
  (void)splitk_ws;
  (void)splitk_counters;
  (void)flag;
  (void)tm_c;
  (void)notify_counters;
  (void)notify_rows_per_counter;
#else
  const int nv = WEFT_GEMM_NV;
  /* k_splits == 1: nothing to reduce, C straight from the accumulators (the small tiles'
   * epilogue: no staging box, no workspace) */
  int last = k_splits == 1;
  if (last) {
#pragma unroll
    for (int v = 0; v < nv; v++)
      WEFT_GEMM_OUT_GROUP(row_a, col_a + 8 * v, d[4 * v], d[4 * v + 1], d[4 * v + 2],
                          d[4 * v + 3]);
  } else {
    /* A partial tile goes to the workspace in the accumulator's own layout: thread wtid of
     * warpgroup cw stores its WG_N/2 floats as WG_N/8 float4s at
     * [split][tile][cw][v][wtid], so the stores and the last CTA's loads are all 16-byte and
     * coalesced, with no row/column arithmetic and no bounds until C is written. */
    const u64 tiles = (u64)tiles_m * tiles_n;
    const u64 split_stride = tiles * 2 * nv * 128; /* float4s per split */
    float4 *ws = (float4 *)splitk_ws + ((u64)w.tile * 2 + cw) * nv * 128 + wtid;
    last = weft_gemm_partial_arrive(d, ws + w.split * split_stride, splitk_counters + w.tile,
                                    k_splits, flag, tid);
    if (last) {
      __threadfence();
      /* The last CTA sums the splits in split order (its own read back too, so that the
       * accumulators are free), so the result does not depend on which CTA came last. The
       * sum is latency-bound: VC float4s per thread per split, the next split's loads
       * issued before the current one is added (double-buffered). */
#define WEFT_GEMM_VC (nv < 8 ? nv : nv > 16 ? 4 : 8) /* within 168 registers */
#pragma unroll
      for (int v0 = 0; v0 < nv; v0 += WEFT_GEMM_VC) {
        float a[4 * WEFT_GEMM_VC];
        float4 x[WEFT_GEMM_VC], y[WEFT_GEMM_VC];
#pragma unroll
        for (int i = 0; i < 4 * WEFT_GEMM_VC; i++) a[i] = 0.f;
        const float4 *q = ws + v0 * 128;
#pragma unroll
        for (int i = 0; i < WEFT_GEMM_VC; i++)
          if (v0 + i < nv) x[i] = weft_gemm_ld_cg_v4(q + i * 128);
#pragma unroll 1
        for (int sp = 0; sp < k_splits; sp++) {
          if (sp + 1 < k_splits) {
            q += split_stride;
#pragma unroll
            for (int i = 0; i < WEFT_GEMM_VC; i++)
              if (v0 + i < nv) y[i] = weft_gemm_ld_cg_v4(q + i * 128);
          }
#pragma unroll
          for (int i = 0; i < WEFT_GEMM_VC; i++) {
            a[4 * i] += x[i].x;
            a[4 * i + 1] += x[i].y;
            a[4 * i + 2] += x[i].z;
            a[4 * i + 3] += x[i].w;
            x[i] = y[i];
          }
        }
        /* float4 v holds fragment column group j = v (nv need not be a multiple of VC) */
#pragma unroll
        for (int i = 0; i < WEFT_GEMM_VC; i++)
          if (v0 + i < nv)
            WEFT_GEMM_OUT_GROUP(row_a, col_a + 8 * (v0 + i), a[4 * i], a[4 * i + 1],
                                a[4 * i + 2], a[4 * i + 3]);
      }
#undef WEFT_GEMM_VC
    }
  }
  if (last) {
#if WEFT_GEMM_HOOK_NOTIFY
    /* the same contract as the TMA-store path: +1 per stored 64-row sub-tile, released
     * after every thread of the warpgroup wrote its part */
    __threadfence();
    weft_gemm_named_sync(2 + cw, 128);
    if (wtid == 0 && w.m0 + row_off < M && w.n0 + col_off < N)
      weft_gemm_notify(notify_counters + (w.m0 + row_off) / notify_rows_per_counter, 1);
#endif
  }
  (void)tm_c;
#if !WEFT_GEMM_HOOK_NOTIFY
  (void)notify_counters;
  (void)notify_rows_per_counter;
#endif
#endif /* CLUSTER_K */
}
