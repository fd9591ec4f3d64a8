/*
 * kernels/gemm/mainloop_mma.cuh — a part of weft_gemm's body (kernels/gemm/gemm.cu), not a header
 * to include elsewhere: a consumer warpgroup's wgmmas of one work item, the mainloop's consumer
 * side. For each of the item's k-blocks it waits for the stage's full barrier, issues the four
 * m64nNk16 wgmmas of the 64-wide k-block over its 64 rows and WG_N columns into d (the item's
 * first overwrites d) and commits them; once the previous stage's wgmmas are done it hands that
 * stage back (its empty barrier; in a 2x1 cluster both CTAs'). After the last k-block it waits
 * for all of them and hands back the last stage: d holds the item's tile, or its split's partial.
 *
 * Included in the consumer warpgroup's loop over work items, after the item's w is decoded. Uses
 * the shared-memory layout (sA, sB, bar_full, bar_empty), the warpgroup's tid, wtid, row_off,
 * col_off and d, its stage and phase, which it advances, and for WEFT_GEMM_STAMP p, cluster_id
 * and notify_counters.
 */

int prev = -1;
for (int kb = w.kb0; kb < w.kb1; kb++) {
  weft_gemm_mbar_wait(bar_full + 8 * stage, phase);
#if WEFT_GEMM_A_GATHER
  /* A came by cp.async (the generic proxy); the wgmmas read it through the async proxy */
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
#endif
  if (WEFT_GEMM_TRACE && tid == 128 && p == cluster_id && kb == w.kb0) WEFT_GEMM_STAMP(1);
#if WEFT_GEMM_A_KMAJOR
  const u32 a_base = sA + stage * WEFT_GEMM_A_BYTES + row_off * 128;
#else
  const u32 a_base = sA + stage * WEFT_GEMM_A_BYTES + (row_off / 64) * 8192;
#endif
  const u32 b_stage = sB + stage * WEFT_GEMM_B_BYTES;
  weft_gemm_wgmma_fence();
#pragma unroll
  for (int kk = 0; kk < WEFT_GEMM_BK / 16; kk++) {
#if WEFT_GEMM_A_KMAJOR
    u64 da = weft_gemm_desc(a_base + kk * 32, 16, 1024);
#else
    u64 da = weft_gemm_desc(a_base + kk * 2048, 8192, 1024); /* as [K,N] B's */
#endif
#if WEFT_GEMM_B_KMAJOR
    u64 db = weft_gemm_desc(b_stage + col_off * 128 + kk * 32, 16, 1024);
#else
#if WEFT_GEMM_MN_SWAP
    u64 db = weft_gemm_desc(b_stage + (col_off / 64) * 8192 + kk * 2048, 1024, 8192);
#else
    u64 db = weft_gemm_desc(b_stage + (col_off / 64) * 8192 + kk * 2048, 8192, 1024);
#endif
#endif
    weft_gemm_wgmma(d, da, db, (kb > w.kb0 || kk > 0) ? 1 : 0);
  }
  weft_gemm_wgmma_commit();
  if (prev >= 0) {
    /* the previous stage's wgmmas are done: hand its buffers back */
    WEFT_GEMM_WGMMA_WAIT(1);
    if (wtid == 0) {
#if WEFT_GEMM_CLUSTER_M > 1
      for (u32 r = 0; r < WEFT_GEMM_CLUSTER_M; r++)
        weft_gemm_mbar_arrive_cluster(bar_empty + 8 * prev, r);
#else
      weft_gemm_mbar_arrive(bar_empty + 8 * prev);
#endif
    }
  }
  prev = stage;
  if (++stage == WEFT_GEMM_STAGES) {
    stage = 0;
    phase ^= 1;
  }
}
WEFT_GEMM_WGMMA_WAIT(0);
if (tid == 128) WEFT_GEMM_STAMP(2);
if (prev >= 0 && wtid == 0) {
#if WEFT_GEMM_CLUSTER_M > 1
  for (u32 r = 0; r < WEFT_GEMM_CLUSTER_M; r++)
    weft_gemm_mbar_arrive_cluster(bar_empty + 8 * prev, r);
#else
  weft_gemm_mbar_arrive(bar_empty + 8 * prev);
#endif
}
