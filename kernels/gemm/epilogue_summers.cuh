/*
 * kernels/gemm/epilogue_summers.cuh — a part of weft_gemm's body (kernels/gemm/gemm.cu), not a
 * header to include elsewhere: GEMM + AllReduce's summers (WEFT_GEMM_AR_SUMMERS), lanes 1-31 of
 * each storer's warp. For each own sub-tile that their storer hands them, stored as this rank's
 * partial into this rank's C, they wait for the peers' copies of its chunk, then sum the world's
 * partials in rank order and store the sums into every rank's C (kernels/gemm/allreduce.cuh,
 * weft_gemm_ar_sum). A row of -1 ends them.
 *
 * Included in the producer warpgroup's branch of weft_gemm, after the storers. Uses the kernel's
 * parameters, tid, aux and WEFT_GEMM_AR_CHUNKS.
 */

/* AR_OWN's summers: lanes 1-31 of storer cw's warp (tid 33.., 65..; otherwise idle) sum the
 * own sub-tiles that it stored (weft_gemm_ar_sum), after the peers' copies of their chunk
 * landed. Off the consumers' path: the storer only waits for them to take a sub-tile before
 * it hands over the next, a tile later. */
if ((tid > 32 && tid < 64) || (tid > 64 && tid < 96)) {
  const int cw = tid / 32 - 1, lane = (tid & 31) - 1; /* 0..30 */
  const u32 sum_full = aux + 64 + 16 * cw, sum_free = sum_full + 8, sum_box = aux + 96 + 8 * cw;
  int seen = 0; /* the segment's chunks seen landed from every peer */
  for (u32 seq = 0;; seq++) {
    weft_gemm_mbar_wait(sum_full, seq & 1); /* .acquire.cta */
    const int row = (int)weft_gemm_ld_shared_u32(sum_box);
    const int col0 = (int)weft_gemm_ld_shared_u32(sum_box + 4);
    __syncwarp(0xfffffffeu); /* all have read the words before they are handed back */
    if (lane == 0) weft_gemm_mbar_arrive(sum_free);
    if (row < 0) break;
    /* the peers' partials of the sub-tile's chunk, once copied (the flags count chunks
     * landed, in order: a wait per new chunk) */
    const int need = WEFT_GEMM_AR_CHUNKS(row);
    if (need > seen) {
      if (lane == 0) weft_gemm_ar_wait(ar_flags, ll_rank, ll_world, need, timeout_ns, error, row);
      __syncwarp(0xfffffffeu); /* lane 0 acquired: the copies are visible */
      seen = need;
    }
    asm volatile("fence.proxy.async.global;" ::: "memory"); /* the storer's TMA store */
    weft_gemm_ar_sum(ar_c, peer_stride, ldc, ar_staging, ar_slot, ll_rank, ll_world, row,
                     row - ar_row0, col0, M, N, lane, 31);
  }
}
