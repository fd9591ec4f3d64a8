/*
 * kernels/gemm/epilogue_storers.cuh — a part of weft_gemm's body (kernels/gemm/gemm.cu), not a
 * header to include elsewhere: the storers of the TMA-store kernel with the notify hook
 * (WEFT_GEMM_STORERS), threads 32 and 64 of the producer warpgroup, one for each consumer
 * warpgroup. A storer issues the TMA stores of the boxes its consumer warpgroup staged
 * (kernels/gemm/epilogue_tma.cuh): into C, into the slot of every rank whose segment the
 * sub-tile touches (WEFT_GEMM_SCATTER), or GEMM + AllReduce's into every rank's C or into the
 * owner's staging (WEFT_GEMM_AR_OWN, WEFT_GEMM_AR_COLS); then, for each stored sub-tile, it waits
 * for the stores to complete, fences, hands an own sub-tile to its summers
 * (WEFT_GEMM_AR_SUMMERS: kernels/gemm/epilogue_summers.cuh) and releases the notify counters.
 *
 * A release at gpu or sys scope is a memory barrier that waits for the issuing warp's
 * outstanding writes; the completion wait before it (cp.async.bulk.wait_group 0: DEPBAR + an L1
 * invalidate, CCTL.IVALL) and the proxy fence (FENCE.VIEW.ASYNC.G) are long too. Made by a
 * consumer warpgroup once per tile, any of them stalls the warpgroup's next wgmmas (wgmma is
 * warpgroup-wide: one waiting thread holds all 128): +1 to +11% on H100 where tiles have few
 * k-blocks. A bulk async-group belongs to the thread that committed it (only that thread can
 * wait for it), so with the notify hook the TMA stores themselves are handed off: a storer
 * thread of the producer warpgroup per consumer warpgroup (tid 32 + 32 * cw: warps 1 and 2,
 * otherwise idle) issues them, waits for their reads of the staging boxes (handing the boxes
 * back), then for their completion, fences (fence.proxy.async.global) and releases the counter.
 * The consumer warpgroup only fills the boxes: each thread's stmatrix, fence.proxy.async.shared::
 * cta, then an arrive (.release.cta) on the warpgroup's `full` barrier (128 arrivals); the
 * storer waits on it (.acquire.cta) before its store reads the boxes (the pattern of the named
 * barrier before the TMA store, across warpgroups), and arrives on `free` after
 * cp.async.bulk.wait_group.read 0, which the consumer waits for before it writes the boxes again.
 * Hand-off barriers of consumer warpgroup cw: full at aux + 16 * cw, free at aux + 16 * cw + 8;
 * one phase of each per store round. Where a tile has two sub-tiles, storer 0 hands its
 * completed one to storer 1 (pair at aux + 32, pair_free at aux + 40; 48 of the 96 bytes of that
 * room), which releases both behind one memory barrier: a sys-scope release per sub-tile cost
 * about 1% more on 128-column tiles (H100). Not with SCATTER: each owner's counter on its own.
 *
 * Included in the producer warpgroup's branch of weft_gemm, after the waiter. Uses the kernel's
 * parameters, tid, sC, aux, tail_skip, cluster_id, num_clusters, num_work, first_tail, cta_rank,
 * tiles_n, ar_seg_tiles, WEFT_GEMM_AR_IS_OWN and WEFT_GEMM_AR_OWNER.
 */

/* the storers (see the file comment): the TMA stores of consumer warpgroup cw's tiles, then
 * per tile the completion wait, the proxy fence and the release. The same tiles, rounds and
 * `store` condition as the consumer's epilogue. */
if (tid == 32 || tid == 64) {
  const int cw = tid / 32 - 1;
  const int row_off = WEFT_GEMM_BM == 128 ? cw * 64 : 0;
  const int col_off = WEFT_GEMM_BM == 128 ? 0 : cw * WEFT_GEMM_WG_N;
  const u32 stg = sC + cw * (WEFT_GEMM_EPI_BUFS * 8192);
  const u32 st_full = aux + 16 * cw, st_free = st_full + 8;
  u32 st_seq = 0;
#if !WEFT_GEMM_SCATTER
  u32 pair_seq = 0; /* tiles with two sub-tiles: the pair / pair_free phase */
#endif
#if WEFT_GEMM_SUMMERS
  const u32 sum_full = aux + 64 + 16 * cw, sum_free = sum_full + 8, sum_box = aux + 96 + 8 * cw;
  u32 sum_seq = 0;
#endif
  for (int p = cluster_id; p < num_work; p += num_clusters) {
    weft_gemm_work_t w = weft_gemm_decode(p, M, N, K, order_table, order_rotate_m, k_splits,
                                          first_tail, cta_rank);
    if (!(w.m0 + row_off < M && w.n0 + col_off < N)) continue;
    const int row = w.m0 + row_off;
#if !WEFT_GEMM_SCATTER
    /* whether warpgroup 1 stores this tile too (storer 1 stores only then) */
    const int both = w.m0 + (WEFT_GEMM_BM == 128 ? 64 : 0) < M &&
                     w.n0 + (WEFT_GEMM_BM == 128 ? 0 : WEFT_GEMM_WG_N) < N;
#endif
#if WEFT_GEMM_SCATTER
    /* the segments (owners) the sub-tile's rows fall in */
    const int q0 = row / notify_rows_per_counter;
    const int q1 = (row + 63 < M ? row + 63 : M - 1) / notify_rows_per_counter;
#endif
    int skipped = 0;
#pragma unroll 1
    for (int round = 0; round < WEFT_GEMM_EPI_BOXES / WEFT_GEMM_EPI_BUFS; round++, st_seq++) {
      weft_gemm_mbar_wait(st_full, st_seq & 1); /* .acquire.cta */
#if WEFT_GEMM_TAIL
      /* a split of a tail tile that another CTA completes: one skip round, no stores, no
       * notify (the word is reset before the boxes are handed back: the consumer writes it
       * again only after its next wait for them) */
      if (round == 0 && weft_gemm_ld_shared_u32(tail_skip + 4 * cw)) {
        weft_gemm_st_shared_u32(tail_skip + 4 * cw, 0);
        weft_gemm_mbar_arrive(st_free);
        st_seq++;
        skipped = 1;
        break;
      }
#endif
#pragma unroll
      for (int bi = 0; bi < WEFT_GEMM_EPI_BUFS; bi++) {
        const int col = w.n0 + col_off + WEFT_GEMM_BOX_COL(round * WEFT_GEMM_EPI_BUFS + bi);
#if WEFT_GEMM_SCATTER
        for (int q = q0; q <= q1; q++)
          weft_gemm_tma_store3(&tm_c, stg + bi * 8192, col,
                               row - (q * notify_rows_per_counter & ~63), q);
#elif WEFT_GEMM_AR_OWN
        if (WEFT_GEMM_AR_IS_OWN(row, w.n0) && !WEFT_GEMM_AR_LATE(p)) /* for the summers */
          weft_gemm_tma_store3(&tm_c_all, stg + bi * 8192, col, row, ll_rank);
        else if (WEFT_GEMM_AR_IS_OWN(row, w.n0)) /* the sums, into every rank's C */
          for (int i = 1, q = ll_rank; i <= ll_world; i++) { /* the next rank first */
            q = weft_gemm_next_rank(q, ll_world);
            weft_gemm_tma_store3(&tm_c_all, stg + bi * 8192, col, row, q);
          }
        else
#if WEFT_GEMM_AR_COLS
        { /* into the owner's staging (slot ll_rank), at its segment's columns */
          const int q = WEFT_GEMM_AR_OWNER(w.n0);
          weft_gemm_tma_store3(&tm_c, stg + bi * 8192, col - q * ar_seg_tiles * WEFT_GEMM_BN,
                               row, q);
        }
#else
          weft_gemm_tma_store(&tm_c, stg + bi * 8192, col, row);
#endif
#else
        weft_gemm_tma_store(&tm_c, stg + bi * 8192, col, row);
#endif
      }
      weft_gemm_bulk_commit();
      weft_gemm_bulk_wait_read0();
      weft_gemm_mbar_arrive(st_free); /* the boxes may be written again */
    }
    if (skipped) continue;
    /* the stored sub-tile must be complete in global memory before the release */
    weft_gemm_bulk_wait0();
    asm volatile("fence.proxy.async.global;" ::: "memory");
#if WEFT_GEMM_SUMMERS
    if (WEFT_GEMM_AR_IS_OWN(row, w.n0) && !WEFT_GEMM_AR_LATE(p)) { /* to the summers, once they
                                                               took the previous one */
      if (sum_seq > 0) weft_gemm_mbar_wait(sum_free, (sum_seq - 1) & 1);
      weft_gemm_st_shared_u32(sum_box, (u32)row);
      weft_gemm_st_shared_u32(sum_box + 4, (u32)(w.n0 + col_off));
      weft_gemm_mbar_arrive(sum_full); /* .release.cta: the words, the completed store */
      sum_seq++;
    }
#endif
#if WEFT_GEMM_SCATTER
    for (int q = q0; q <= q1; q++)
      weft_gemm_notify((u64 *)((char *)notify_counters + q * peer_stride), 1);
#else
    /* One memory barrier per tile: where it has two sub-tiles, storer 0 hands its (complete,
     * fenced) one to storer 1 (.release.cta / .acquire.cta), which releases both. (Not with
     * SCATTER: the producer's 40 registers do not hold the two sub-tiles' owner ranges.) A
     * split tail's tile that another CTA completes is skipped by both storers alike (the
     * CTA's one `last` flag), so the pair's phases stay in step. */
    if (cw == 0 && both) {
      if (pair_seq > 0) weft_gemm_mbar_wait(aux + 40, (pair_seq - 1) & 1); /* pair_free */
      weft_gemm_mbar_arrive(aux + 32);
      pair_seq++;
      continue;
    }
#if WEFT_GEMM_AR_COLS
    if (cw == 1) weft_gemm_mbar_wait(aux + 32, pair_seq & 1);
    weft_gemm_ar_cols_release(notify_counters, ar_flags, peer_stride, w.n0 / WEFT_GEMM_BN,
                              tiles_n, WEFT_GEMM_AR_OWNER(w.n0), ll_rank, ll_world,
                              (u64)(1 + cw));
    if (cw == 1) {
      weft_gemm_mbar_arrive(aux + 40);
      pair_seq++;
    }
    continue;
#endif
    u64 *mine = notify_counters + row / notify_rows_per_counter;
    if (cw == 0) {
      weft_gemm_notify(mine, 1);
      continue;
    }
    weft_gemm_mbar_wait(aux + 32, pair_seq & 1);
    u64 *other = notify_counters + w.m0 / notify_rows_per_counter; /* storer 0's rows */
    if (other == mine) {
      weft_gemm_notify(mine, 2);
    } else {
      weft_gemm_notify_fence();
      weft_gemm_notify_relaxed(other, 1);
      weft_gemm_notify_relaxed(mine, 1);
    }
    weft_gemm_mbar_arrive(aux + 40);
    pair_seq++;
#endif
  }
#if WEFT_GEMM_SUMMERS
  /* the summers' end: a row of -1 */
  if (sum_seq > 0) weft_gemm_mbar_wait(sum_free, (sum_seq - 1) & 1);
  weft_gemm_st_shared_u32(sum_box, 0xffffffffu);
  weft_gemm_mbar_arrive(sum_full);
#endif
}
