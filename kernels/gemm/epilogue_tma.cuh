/*
 * kernels/gemm/epilogue_tma.cuh — a part of weft_gemm's body (kernels/gemm/gemm.cu), not a
 * header to include elsewhere: a consumer warpgroup's epilogue in the TMA-store kernel (no
 * WEFT_GEMM_SPLITK). A split of a tail tile (WEFT_GEMM_TAIL) stores its partial and arrives on
 * the tile's counter, and only the last split goes on, with the sum of all. An own tile of GEMM +
 * AllReduce (WEFT_GEMM_AR_OWN: the rank's segment of rows; with WEFT_GEMM_AR_COLS its tile
 * columns) adds the peers' partials once they have landed (kernels/gemm/allreduce.cuh). Then the
 * warpgroup's 64 x WG_N block goes, EPI_BUFS boxes of 64 rows x 128 bytes a round, into
 * 128-byte-swizzled staging boxes (stmatrix for 16-bit C, st.shared.v2 for fp32) and from there
 * by TMA stores to C: thread 0 of the warpgroup issues them or, with the notify hook, the
 * warpgroup hands each round to its storer (kernels/gemm/epilogue_storers.cuh). The grouped
 * kernel's epilogues: WEFT_GEMM_GATED first turns the gate and up accumulators into the
 * activation, and WEFT_GEMM_COMBINE scales each row by its routing weight and, in place of the
 * TMA stores, adds the staged rows into their tokens' rows.
 *
 * Included after the mainloop (kernels/gemm/mainloop_mma.cuh) in the consumer warpgroup's loop
 * over work items. Uses the kernel's parameters, p, w, sC, tail_flag, tail_skip, ar_seg_tiles,
 * ar_subtiles, WEFT_GEMM_AR_IS_OWN and WEFT_GEMM_AR_CHUNKS, and the warpgroup's tid, cw, wtid,
 * warp, lane, row_off, col_off, d, ar_seen, st_full, st_free and st_seq.
 */

{
  (void)c;
  (void)ldc;
  int last = 1;
#if WEFT_GEMM_TAIL
  /* A split of a tail tile (see WEFT_GEMM_TAIL). The partial goes to the workspace in the
   * accumulators' layout, float4 [slot][split][cw][v][wtid] (16-byte, coalesced), then the
   * counter; the last split to arrive reads every partial back in split order into the
   * accumulators (so the sum does not depend on which came last) and stores the tile. */
  if (w.splits > 1 && w.m0 < M) {
    const int nv = WEFT_GEMM_NV;
    const u64 split_stride = 2 * nv * 128; /* float4s */
    float4 *ws = (float4 *)splitk_ws + (u64)w.slot * w.splits * split_stride +
                 (u64)cw * nv * 128 + wtid;
    last = weft_gemm_partial_arrive(d, ws + w.split * split_stride, splitk_counters + w.slot,
                                    w.splits, tail_flag, tid);
    if (last) {
      __threadfence();
      /* d = partial 0 + partial 1 + ... (in place: 8 float4 loads in flight beside the
       * accumulators; a select of the first split's value spilled) */
#pragma unroll 1
      for (int sp = 0; sp < w.splits; sp++) {
        const float4 *q = ws + sp * split_stride;
#pragma unroll
        for (int v0 = 0; v0 < nv; v0 += 8) {
          float4 x[8];
#pragma unroll
          for (int i = 0; i < 8; i++)
            if (v0 + i < nv) x[i] = weft_gemm_ld_cg_v4(q + (v0 + i) * 128);
#pragma unroll
          for (int i = 0; i < 8 && v0 + i < nv; i++) { /* (nv need not be a multiple of 8) */
            float *o = d + 4 * (v0 + i);
            if (sp == 0) o[0] = 0.f, o[1] = 0.f, o[2] = 0.f, o[3] = 0.f;
            o[0] += x[i].x, o[1] += x[i].y, o[2] += x[i].z, o[3] += x[i].w;
          }
        }
      }
    }
  }
#else
  (void)splitk_ws;
  (void)splitk_counters;
#endif
  const u32 stg = sC + cw * (WEFT_GEMM_EPI_BUFS * 8192);
  /* a sub-tile wholly past M or N (cluster peer past M; BM=64's second half past N) is
   * not stored; the condition is uniform over the warpgroup */
  const int exists = w.m0 + row_off < M && w.n0 + col_off < N;
  const int store = exists && last;
#if WEFT_GEMM_AR_OWN
  if (store && WEFT_GEMM_AR_IS_OWN(w.m0, w.n0) && WEFT_GEMM_AR_LATE(p)) {
#if WEFT_GEMM_AR_COLS
    /* every peer's partial of the tile, once stored into this rank's staging */
    if (wtid == 0)
      weft_gemm_ar_wait_word(ar_flags + w.n0 / WEFT_GEMM_BN, (u64)(ll_world - 1) * ar_subtiles,
                             timeout_ns, error, w.tile, -1, w.n0 / WEFT_GEMM_BN);
    weft_gemm_named_sync(2 + cw, 128); /* thread 0 acquired: the partials are visible */
    const int seg0 = ll_rank * ar_seg_tiles * WEFT_GEMM_BN;
    weft_gemm_ar_add(d, ar_staging, ar_slot, ll_rank, ll_world, row_off + 16 * warp + lane / 4,
                     w.n0 + col_off + 2 * (lane & 3) - seg0, ar_seg_tiles * WEFT_GEMM_BN,
                     N - seg0);
#else
    /* the own segment (see WEFT_GEMM_AR_OWN): the peers' partials of the tile's chunk,
     * once copied (the flags count chunks landed, in order: a wait per new chunk) */
    const int need = WEFT_GEMM_AR_CHUNKS(w.m0);
    if (need > ar_seen) {
      if (wtid == 0)
        weft_gemm_ar_wait_peers(ar_flags, ll_rank, ll_world, need, timeout_ns, error, w.tile);
      weft_gemm_named_sync(2 + cw, 128); /* thread 0 acquired: the copies are visible */
      ar_seen = need;
    }
    weft_gemm_ar_add(d, ar_staging, ar_slot, ll_rank, ll_world,
                     w.m0 + row_off + 16 * warp + lane / 4 - ar_row0,
                     w.n0 + col_off + 2 * (lane & 3), N, N);
#endif
  }
#endif
#if WEFT_GEMM_GATED
  /* the gated activation: output column c's gate is the warpgroup's accumulator column c, its up
   * column c + WG_N/2, in this thread's registers NV/2 float4 groups later */
  if (store)
#pragma unroll
    for (int v = 0; v < WEFT_GEMM_NV / 2; v++)
#pragma unroll
      for (int i = 0; i < 4; i++)
        d[4 * v + i] = weft_moe_silu_mul1(d[4 * v + i], d[4 * (v + WEFT_GEMM_NV / 2) + i]);
#endif
#if WEFT_GEMM_COMBINE
  /* the routing weights of this thread's two fragment rows (0 in padding rows), and the output
   * rows of the four staged rows it adds back (-1: padding) */
  int comb_token[4];
  if (store) {
    const int r = w.m0 + row_off + 16 * warp + lane / 4;
    const int e0 = row_entry[r], e1 = row_entry[r + 8];
    const float s0 = e0 >= 0 ? weft_gemm_combine_weight(combine_weights, e0) : 0.f;
    const float s1 = e1 >= 0 ? weft_gemm_combine_weight(combine_weights, e1) : 0.f;
#pragma unroll
    for (int v = 0; v < WEFT_GEMM_NV; v++)
      d[4 * v] *= s0, d[4 * v + 1] *= s0, d[4 * v + 2] *= s1, d[4 * v + 3] *= s1;
#pragma unroll
    for (int q = 0; q < 4; q++) {
      const int e = row_entry[w.m0 + row_off + wtid / 8 + 16 * q];
      comb_token[q] = e >= 0 ? e / topk : -1;
    }
  }
#endif
#if WEFT_GEMM_TAIL && WEFT_GEMM_STORERS
  if (exists && !last) { /* the storer's skip round (see the storers) */
    weft_gemm_mbar_wait(st_free, (st_seq & 1) ^ 1);
    if (wtid == 0) weft_gemm_st_shared_u32(tail_skip + 4 * cw, 1);
    weft_gemm_mbar_arrive(st_full); /* .release.cta: after the word's write (thread 0) */
    st_seq++;
  }
#endif
  if (store)
#pragma unroll
  for (int round = 0; round < WEFT_GEMM_EPI_BOXES / WEFT_GEMM_EPI_BUFS; round++) {
    /* the staging boxes are free once the previous TMA stores have read them */
#if WEFT_GEMM_STORERS
    weft_gemm_mbar_wait(st_free, (st_seq & 1) ^ 1); /* the storer's wait_group.read */
#else
    if (wtid == 0) weft_gemm_bulk_wait_read0();
    weft_gemm_named_sync(2 + cw, 128);
#endif
#pragma unroll
    for (int bi = 0; bi < WEFT_GEMM_EPI_BUFS; bi++) {
      const int box = round * WEFT_GEMM_EPI_BUFS + bi;
      const u32 bbase = stg + bi * 8192;
#if WEFT_GEMM_OUT == 2
      /* fp32: box = 64 rows x 32 cols; 16-byte chunk index (col/4) XOR row%8 */
      const int r_lo = 16 * warp + lane / 4; /* fragment row (h = 0) in the WG block */
#pragma unroll
      for (int jq = 0; jq < 4; jq++) {
        const int j = WEFT_GEMM_BOX_COL(box) / 8 + jq; /* 8-col group in the WG block */
#pragma unroll
        for (int h = 0; h < 2; h++) {
          const int row = r_lo + 8 * h;
          const int colb = 8 * jq + 2 * (lane & 3);
          const u32 addr =
              bbase + row * 128 + ((((colb >> 2) ^ (row & 7))) << 4) + (colb & 3) * 4;
          asm volatile("st.shared.v2.f32 [%0], {%1, %2};" ::"r"(addr),
                       "f"(d[4 * j + 2 * h]), "f"(d[4 * j + 2 * h + 1])
                       : "memory");
        }
      }
#else
      /* 16-bit: box = 64 rows x 64 cols; stmatrix x4 covers 16 rows x 16 cols */
#pragma unroll
      for (int jq = 0; jq < 4; jq++) {
        const int jj = WEFT_GEMM_BOX_COL(box) / 16 + jq; /* 16-col group in the WG block */
        const int mi = lane >> 3;
        const int row = 16 * warp + (mi & 1) * 8 + (lane & 7);
        const int chunk = 2 * jq + (mi >> 1);
        const u32 addr = bbase + row * 128 + ((chunk ^ (row & 7)) << 4);
        u32 r0 = weft_gemm_pack(d[8 * jj + 0], d[8 * jj + 1]);
        u32 r1 = weft_gemm_pack(d[8 * jj + 2], d[8 * jj + 3]);
        u32 r2 = weft_gemm_pack(d[8 * jj + 4], d[8 * jj + 5]);
        u32 r3 = weft_gemm_pack(d[8 * jj + 6], d[8 * jj + 7]);
        asm volatile("stmatrix.sync.aligned.m8n8.x4.shared.b16 [%0], {%1, %2, %3, %4};" ::"r"(
                         addr),
                     "r"(r0), "r"(r1), "r"(r2), "r"(r3)
                     : "memory");
      }
#endif
    }
    /* generic-proxy smem writes -> visible to the TMA store (async proxy) */
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
#if WEFT_GEMM_STORERS
    weft_gemm_mbar_arrive(st_full); /* every thread: the storer issues the stores */
    st_seq++;
#elif WEFT_GEMM_COMBINE
    /* the staged rows added into their tokens' rows: 16 bytes a thread, a row's 128 bytes by 8
     * consecutive threads; an overlapping last box adds only its own columns */
    weft_gemm_named_sync(2 + cw, 128);
#pragma unroll
    for (int bi = 0; bi < WEFT_GEMM_EPI_BUFS; bi++) {
      const int box = round * WEFT_GEMM_EPI_BUFS + bi;
#pragma unroll
      for (int q = 0; q < 4; q++) {
        const int row = wtid / 8 + 16 * q, ch = wtid % 8;
        const int col = WEFT_GEMM_BOX_COL(box) + ch * (16 / WEFT_GEMM_OUT_SIZE);
        const int gcol = w.n0 + col_off + col;
        if (comb_token[q] >= 0 && col >= box * WEFT_GEMM_BOX_COLS && gcol < N)
          weft_gemm_combine_add16(
              (char *)c + ((u64)comb_token[q] * (u64)ldc + (u64)gcol) * WEFT_GEMM_OUT_SIZE,
              stg + bi * 8192 + row * 128 + ((ch ^ (row & 7)) << 4));
      }
    }
#else
    weft_gemm_named_sync(2 + cw, 128);
    if (wtid == 0) {
#pragma unroll
      for (int bi = 0; bi < WEFT_GEMM_EPI_BUFS; bi++) {
        const int box = round * WEFT_GEMM_EPI_BUFS + bi;
        weft_gemm_tma_store(&tm_c, stg + bi * 8192,
                            WEFT_GEMM_OUT_COL(w.n0 + col_off) + WEFT_GEMM_BOX_COL(box),
                            w.m0 + row_off);
      }
      weft_gemm_bulk_commit();
    }
#endif
  }
#if !WEFT_GEMM_HOOK_NOTIFY
  (void)notify_counters;
  (void)notify_rows_per_counter;
#endif
  /* (with the notify hook, the storer releases the sub-tile's counter) */
}
