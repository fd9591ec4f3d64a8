/*
 * kernels/gemm/config.cuh — the -D contract of weft's GEMM (kernels/gemm/gemm.cu): every
 * WEFT_GEMM_* define the kernel reads, what it means, the values it takes and who sets it; its
 * default where the command line does not give it; the combinations the kernel refuses (#error,
 * so that a configuration that would fault on the GPU does not compile); and the sizes derived
 * from them. The launcher (src/ops/gemm/specialisation.c, weft_gemm_options) and every other
 * part of the GEMM refer here.
 *
 * Expects nothing before it (its defines come from the command line). Every header of
 * kernels/gemm/ that reads a define includes it.
 *
 * Defines (all optional; default in brackets; the kernel parameters they name by number are in
 * kernels/gemm/gemm.cu):
 *   WEFT_GEMM_BM         [128] tile rows: 128 (2 consumer WGs x 64 rows) or 64 (the 2 consumer
 *                        WGs split the tile's N: 64 x BN/2 each; small M)
 *   WEFT_GEMM_BN         [256] tile cols. Per-WG width WG_N = BN (BM=128) or BN/2 (BM=64) must
 *                        be a multiple of 16 from 32 to 256 (32 only with SPLITK; BM=64: the B
 *                        box is BN rows and TMA boxes stop at 256, so BN <= 256). A WG_N that is
 *                        no multiple of the 128-byte staging box ends with a box overlapping the
 *                        one before it (WEFT_GEMM_BOX_COL). N-major B ([K,N]) needs BN a
 *                        multiple of 64 * CLUSTER_M.
 *   WEFT_GEMM_A_ROWS     [BM] rows of A loaded per stage. Decode (M <= 32) with BM=64 and no
 *                        cluster: 8, 16 or 32, so that the ring holds B rather than A's zero
 *                        rows. The 64-row wgmma still reads 64 rows from the stage's A start,
 *                        i.e. the next stages' rows (or B's bytes) as its rows A_ROWS..63:
 *                        valid only with M <= A_ROWS (those output rows are never stored).
 *   WEFT_GEMM_STAGES     [4] smem ring depth (2..16; see the smem formula below)
 *   WEFT_GEMM_DTYPE_IN   [0] 0 = bf16, 1 = fp16 (A and B the same)
 *   WEFT_GEMM_OUT        [0] 0 = bf16, 1 = fp16, 2 = fp32
 *   WEFT_GEMM_B_KMAJOR   [1] 1: B is [N,K] row-major (K contiguous, "weights", C = A B^T);
 *                        0: B is [K,N] row-major (N contiguous, C = A B)
 *   WEFT_GEMM_CLUSTER_M  [1] 1 or 2: 2x1 cluster along M (two M tiles, one N tile), each CTA
 *                        loading half of B and multicasting it to both
 *   WEFT_GEMM_GROUP      [8] grouped-raster group size, in tile-rows of CLUSTER_M*BM rows
 *   WEFT_GEMM_EPI_BUFS   [2] staging boxes per consumer WG (8 KiB each); a WG's output of
 *                        64 x WG_N is written as ceil(WG_N*outsize/128) boxes, EPI_BUFS at a time
 *   WEFT_GEMM_ORDER_TABLE [0] 1: tile order from order_table[] (see params)
 *   WEFT_GEMM_HOOK_WAIT  [0] 1: per-tile wait on wait_signals[] before the tile's first load
 *   WEFT_GEMM_A_OWN      [0] 1 (with HOOK_WAIT): a CTA's tile whose BM rows lie wholly in
 *                        [a_own_row0, a_own_row0 + a_own_rows) loads them from tm_a_own (row
 *                        r of A is its row r - a_own_row0) and waits on no signal: AG+GEMM
 *                        reads the rank's own rows where the caller has them, so that no copy
 *                        into the gathered buffer precedes the GEMM
 *   WEFT_GEMM_HOOK_NOTIFY [0] 1: per-tile notify on notify_counters[] after the tile's store
 *                        (with the TMA-store epilogue a storer thread of the producer
 *                        warpgroup issues the stores and releases each counter as soon as its
 *                        sub-tile's stores completed, off the consumers' path: WEFT_GEMM_STORERS;
 *                        with SPLITK the notify follows the last split's writes)
 *   WEFT_GEMM_NOTIFY_SYS [0] 1: the notify is red.release.sys (a peer GPU or the host reads the
 *                        counter), 0: red.release.gpu (only this GPU reads it)
 *   WEFT_GEMM_SCATTER    [0] 1 (with HOOK_NOTIFY, NOTIFY_SYS, no SPLITK): the fused-scatter
 *                        epilogue of GEMM + ReduceScatter. C's rows are segments of
 *                        seg = notify_rows_per_counter rows, segment q owned by rank q; tm_c is
 *                        3-D {N, slot rows, ranks} whose rank stride is peer_stride (param 20).
 *                        Rank q's copy (its slot) holds the 64-row blocks of C that touch its
 *                        segment, from block floor(q * seg / 64) on: a sub-tile at row r is
 *                        stored whole at slot row r - 64 * floor(q * seg / 64) of every rank q
 *                        whose segment it touches, so segment q starts at slot row
 *                        (q * seg) % 64 and the rows around it (a neighbour's) are not to be
 *                        read. Slot rows: at least 64 * (ceil(seg / 64) + 1). (Whole boxes at
 *                        64-row-aligned slot rows: a box starting at a negative row to clip a
 *                        sub-tile to its segment raised an illegal-instruction error on H100.)
 *                        After the stores complete, +1 (release.sys) on the counter at
 *                        notify_counters + q * peer_stride bytes: each owner's own counter.
 *   WEFT_GEMM_AR_OWN     [0] 1 (with HOOK_NOTIFY, NOTIFY_SYS and 16-bit OUT (fp32 spilled); no
 *                        SCATTER, no SPLITK): the own segment of GEMM + AllReduce's copy-engine
 *                        form, reduced in the epilogue. A tile whose rows lie in [ar_row0,
 *                        ar_row0 + ar_rows) (params 33, 34: the rank's segment, whole cluster
 *                        tiles) in the segment's chunk c of ar_chunk_rows rows (param 35) waits
 *                        until every peer's arrival flag ar_flags[p] (param 32, this rank's,
 *                        p != ll_rank) is at least c + 1 (peer p's partial of chunks 0..c copied
 *                        into slot p of ar_staging, param 30: p * ar_slot bytes (param 31) in,
 *                        rows from ar_row0, row stride N, C's dtype), adds the peers'
 *                        partials to its fp32 accumulators in rank order, and its storer stores
 *                        the sums into every rank's C through tm_c_all (param 29); the other
 *                        tiles store their partial through tm_c. The segment's sums and pushes
 *                        so run under the mainloops of its later tiles instead of after the
 *                        GEMM. The waits cannot cycle: every rank computes the other segments
 *                        (which wait for nothing) before its own, so every copy they feed is
 *                        made.
 *   WEFT_GEMM_AR_SUMMERS [0] 1 (with AR_OWN): the own tiles but those of the grid's last round
 *                        store their partial into the own C instead (tm_c_all at this rank),
 *                        and lanes 1-31 of their storer's warp (the "summers") wait for the
 *                        chunk, sum the world partials in rank order and store the sums into
 *                        every rank's C (ar_c, param 36), off the consumers' path: for tiles
 *                        longer than the summers' ~90 us a sub-tile (gemm_rs.c chooses by k).
 *   WEFT_GEMM_AR_COLS    [0] 1 (with AR_OWN; BM=128, CLUSTER_M 1, one tile row: M <= 128; no
 *                        SUMMERS, TAIL or ORDER_TABLE): GEMM + AllReduce's two-shot epilogue for
 *                        small M, the whole AllReduce inside the GEMM. The segments are tile
 *                        columns: rank q owns columns [q * S, (q + 1) * S) of the tiles_n, S =
 *                        ceil(tiles_n / ll_world). The order runs over the tile columns from
 *                        column order_rotate_m on (the rank's own segment last). A tile of
 *                        another rank's segment stores its partial through tm_c (3-D {S * BN,
 *                        M, ranks}, rank stride peer_stride, based at rank 0's copy of this
 *                        rank's staging slot: coordinates (column - q * S * BN, row, q)) and
 *                        adds its sub-tile count (release.sys) to owner q's arrival word of the
 *                        tile column, notify_counters[tn] + q * peer_stride bytes (rank 0's copy
 *                        of the words). An own tile waits until its word (ar_flags[tn], this
 *                        rank's) counts every peer's sub-tiles, adds the peers' partials (slot p
 *                        of ar_staging at p * ar_slot: 128 rows of S * BN elements, C's dtype)
 *                        to its fp32 accumulators in rank order, and its storer stores the sums
 *                        into every rank's C (tm_c_all), zeroes the word and adds 1 (release.sys)
 *                        to every rank's done word ar_flags[tiles_n]. CTA 0's producer thread
 *                        waits for the done word to count tiles_n (every column's sums in this
 *                        rank's C), then zeroes it: the call ends with C complete, and every
 *                        word is 0 again for the next call. No wait can cycle: every tile waited
 *                        for is another rank's non-own tile, which waits for nothing and comes
 *                        before its CTA's own tiles. ar_row0, ar_rows, ar_chunk_rows unused
 *   WEFT_GEMM_GROUPED    [0] 1 (TMA-store epilogue: no SPLITK, TAIL, CLUSTER_M 2, hook, LL,
 *                        AR_OWN or ORDER_TABLE): the grouped GEMM of an MoE layer over a routing
 *                        plan (kernels/moe.h). A's rows are the plan's (every expert's rows
 *                        contiguous, padded to group_rows, a multiple of BM); tile row t's rows
 *                        [t * BM, +BM) multiply expert group_expert[t * BM / group_rows]'s B
 *                        (params 39-41), and tm_b is 3-D: {K, N, experts} ([N,K] B) or {N, K,
 *                        experts} ([K,N] B), so that every expert's edges read zeros. M (param 4)
 *                        is the plan's largest row count; the kernel computes the rows in use,
 *                        *group_tiles * group_rows, read at its start: the launch is not
 *                        programmatic (the plan comes from the stream's previous kernels)
 *   WEFT_GEMM_GATED      [0] 1 (GROUPED, no COMBINE): the gated activation of an MoE layer's first
 *                        GEMM in the epilogue. B's N (param 5) rows or columns are two halves,
 *                        gate then up, of N/2 each; C is [M, N/2] (tm_c's dims {N/2, M}), C[r, c]
 *                        = silu(A B_gate)[r, c] * (A B_up)[r, c], from the fp32 accumulators. A
 *                        tile still spans BN of B's columns: each warpgroup's WG_N are its WG_N/2
 *                        output columns' gate and then up columns, loaded from both halves (so
 *                        one thread holds both), and it stores WG_N/2 columns. [N,K] B's box is
 *                        {64, WG_N/2} rows (two loads a warpgroup block); [K,N] B needs WG_N/2 a
 *                        multiple of 64 (whole boxes); the output must still fill a box
 *                        (WG_N/2 >= 128 bytes of C)
 *   WEFT_GEMM_COMBINE    [0] 1 (GROUPED, no GATED): the top-k combine of an MoE layer's last GEMM
 *                        in the epilogue: row r of the tile, holding entry e = row_entry[r]
 *                        (param 42; -1: padding, skipped), is scaled by its routing weight
 *                        combine_weights[e] (param 43, of type WEFT_GEMM_COMBINE_W: 0 bf16, 1
 *                        fp16, 2 fp32) and added into row e / topk (param 44) of the token-order
 *                        output at c (param 3, row stride ldc, param 19): the staging boxes are
 *                        read back 16 bytes a thread and added with vector reductions
 *                        (red.global.add .v4), whose order over a token's k rows is not fixed.
 *                        tm_c is unused; N % 8 == 0, ldc % 8 == 0 (16-byte rows of C)
 *   WEFT_GEMM_A_GATHER   [0] 1 (GROUPED): A's rows gathered from the tokens in the load (no
 *                        plan-ordered copy of A in memory): row r of a tile is token row_entry[r]
 *                        / topk (params 42, 44) of gather_a (param 45, row stride gather_lda
 *                        elements, param 46), zeros in padding rows (entry -1). The producer
 *                        warpgroup's 128 threads load A with cp.async, 16 bytes each, 8
 *                        consecutive threads a row's 128 bytes, into the 128B-swizzled layout
 *                        TMA would have made, and arrive on the stage's full barrier when their
 *                        copies land (cp.async.mbarrier.arrive.noinc: the barrier counts 1 + 128
 *                        arrivals); thread 0 also loads B by TMA. The consumers fence the
 *                        generic proxy's writes before their wgmmas read them. tm_a is unused
 *   WEFT_GEMM_GROUP_WAIT [0] 1 (A_GATHER): AllGather + MoE's wait. Before a tile's loads,
 *                        producer thread 0 waits until wait_signals[s] >= wait_expected (params
 *                        9, 11) for every rank s whose tokens the tile's rows hold (token t is
 *                        rank t / wait_rows_per_signal's, param 10; the plan holds each expert's
 *                        entries in token order, so they are the ranks from its first row's to
 *                        its last entry row's), then the warpgroup goes on together (named
 *                        barrier 1). A timed-out wait reports "ag_moe tile <t>" with the rank as
 *                        signal and traps; an abort reports and goes on (the results void). The
 *                        tile rows run in the order of group_order (param 47): tile row tm of the
 *                        decoded order is group_order[tm], the tiles sorted by their tokens'
 *                        arrival
 *   WEFT_GEMM_SPLITK     [0] 1: split-K with fp32 workspace reduction (CLUSTER_M must be 1)
 *   WEFT_GEMM_LL         [0] 1 (with SPLITK, no hook): the LL epilogue of GEMM + AllReduce's LL
 *                        form. C is not written: each 8 bytes of C (element index row * ldc +
 *                        col, ldc = N, N * outsize a multiple of 8) go as one 16-byte LL line
 *                        {data, flag, data, flag} (kernels/reduce.cu's weft_red_ll layout) into
 *                        slot ll_rank of every rank's LL area, flagged with e = *ll_epoch + 1:
 *                        line l at c + ((e & 1) * ll_world + ll_rank) * ll_slot + 16 l, rank q's
 *                        copy (q - ll_rank) * peer_stride bytes from it (params 3, 20, 22-25).
 *                        weft_red_ll (no push) then sums the slots. 16-bit C: lanes 2i and 2i+1
 *                        swap halves so that each holds 4 consecutive elements of one row.
 *   WEFT_GEMM_C_T        [0] 1 (with SPLITK, no LL): the kernel's product is C transposed: its
 *                        M runs along C's columns and its N along C's rows, so fragment element
 *                        (row, col) is stored at C[col * ldc + row]. weft_gemm_launch swaps A and
 *                        B for it (swap_ab: the weights as A, [n, k] or, with A_KMAJOR=0,
 *                        [k, n]; the activations [m, k] as [N,K] B), so that a tile's width,
 *                        which comes in steps of 16, covers m where a 128-row tile would pad it
 *                        (128 < m <= 512)
 *   WEFT_GEMM_A_KMAJOR   [1] 1: A is [M,K] row-major; 0 (with C_T, BM=128, no cluster): A is
 *                        [K,M] row-major (M contiguous), the transposed product's A when the
 *                        caller's B is [K,N]: two boxes of 64 (M) x 64 (K) a stage, read by
 *                        wgmma transposed, as [K,N] B is
 *   WEFT_GEMM_CLUSTER_K  [1] with SPLITK: 2..8 = k_splits: the splits of a tile are the CTAs of
 *                        one cluster {CLUSTER_K, 1, 1} and reduce through distributed shared
 *                        memory instead of the workspace: CTA r owns the accumulator column
 *                        groups v with v % CLUSTER_K == r, receives the peers' partials of
 *                        them by st.async into its smem, sums them in split order (the same
 *                        order, so the same bits, as the workspace reduction) and stores them.
 *                        No workspace, no counters, no grid-wide fence on the tail. Needs
 *                        CLUSTER_M = 1, CLUSTER_K <= WG_N / 8, no HOOK_NOTIFY.
 *   WEFT_GEMM_TAIL       [0] 1 (TMA-store epilogue, no SPLITK): the last tail_tiles (param 21)
 *                        cluster tiles of the order are split along K into k_splits (param 17)
 *                        work items each, so that the grid's last, partly filled wave runs a
 *                        1/k_splits share of them on k_splits times the SMs (the data-parallel
 *                        + split tail form of stream-K). Each split's CTA writes its partial to
 *                        the workspace and adds 1 to the tile's counter; the last to arrive sums
 *                        the partials in split order (deterministic), then stores and notifies
 *                        as an unsplit tile does. The others store nothing (with the storers a
 *                        skip round tells theirs so). Counters and workspace slots are per tail
 *                        tile: slot = tail position * CLUSTER_M + CTA rank.
 *   WEFT_GEMM_B_EVICT_FIRST [0] 1: B's loads carry an L2 evict_first policy. For a grid of one
 *                        cluster tile row, which reads every byte of B once: the streamed B
 *                        then leaves L2 to A, which every tile reads (decode shapes m = 1-128,
 *                        same-call A/Bs: H200 1-4% faster, H100 -3% to +1%)
 *   WEFT_GEMM_PRODUCER_REGS [40], WEFT_GEMM_CONSUMER_REGS [232]: setmaxnreg targets (48 and 224
 *                        with TAIL and a hook)
 *
 * Who sets them: weft_gemm_options (src/ops/gemm/specialisation.c), one specialisation per
 * problem, configuration and hooks of a call (src/ops/gemm/gemm.h), from
 *   the configuration (weft_gemm_config_t: src/ops/gemm/config.c chooses it, or the caller):
 *     BM bm, BN bn, A_ROWS a_rows (bm where 0), STAGES stages, CLUSTER_M cluster, EPI_BUFS
 *     epi_bufs, GROUP group, SPLITK splitk, CLUSTER_K k_splits (where splitk, splitk_cluster
 *     and k_splits > 1), TAIL (where tail_splits > 1, without splitk), C_T swap_ab;
 *   the problem the kernel runs (weft_gemm_problem_t; with swap_ab the swapped one): DTYPE_IN in,
 *     OUT out, B_KMAJOR b_kmajor, A_KMAJOR (0 where a_mn_major), B_EVICT_FIRST (where
 *     m <= bm * cluster: one cluster tile row);
 *   the hooks (weft_gemm_hooks_t), each where its field is set: ORDER_TABLE order_table (no op
 *     sets it; tests/cpu/test_gemm_configs.c compiles it); HOOK_WAIT wait_signals and A_OWN a_own
 *     (AG+GEMM, src/ops/ag_gemm.c); HOOK_NOTIFY notify_counters and NOTIFY_SYS notify_sys
 *     (GEMM+RS, src/ops/gemm_rs.c; GEMM+AR, src/ops/gemm_ar.c); SCATTER scatter_stride
 *     (src/ops/gemm_rs.c); AR_OWN ar_staging (src/ops/gemm_rs.c, src/ops/gemm_ar.c);
 *     AR_SUMMERS ar_summers (src/ops/gemm_rs.c); AR_COLS ar_cols and LL ll_area
 *     (src/ops/gemm_ar.c).
 * Nothing sets PRODUCER_REGS and CONSUMER_REGS (their defaults follow TAIL, the hooks and
 * AR_SUMMERS), nor TRACE and MN_SWAP below (debugging by hand: dev/gemm/gemm_dev.cu).
 */
#ifndef WEFT_KERNELS_GEMM_CONFIG_CUH
#define WEFT_KERNELS_GEMM_CONFIG_CUH

#ifndef WEFT_GEMM_BM
#define WEFT_GEMM_BM 128
#endif
#ifndef WEFT_GEMM_BN
#define WEFT_GEMM_BN 256
#endif
#ifndef WEFT_GEMM_A_ROWS
#define WEFT_GEMM_A_ROWS WEFT_GEMM_BM
#endif
#ifndef WEFT_GEMM_STAGES
#define WEFT_GEMM_STAGES 4
#endif
#ifndef WEFT_GEMM_DTYPE_IN
#define WEFT_GEMM_DTYPE_IN 0
#endif
#ifndef WEFT_GEMM_OUT
#define WEFT_GEMM_OUT 0
#endif
#ifndef WEFT_GEMM_B_KMAJOR
#define WEFT_GEMM_B_KMAJOR 1
#endif
#ifndef WEFT_GEMM_CLUSTER_M
#define WEFT_GEMM_CLUSTER_M 1
#endif
#ifndef WEFT_GEMM_GROUP
#define WEFT_GEMM_GROUP 8
#endif
#ifndef WEFT_GEMM_EPI_BUFS
#define WEFT_GEMM_EPI_BUFS 2
#endif
#ifndef WEFT_GEMM_ORDER_TABLE
#define WEFT_GEMM_ORDER_TABLE 0
#endif
#ifndef WEFT_GEMM_HOOK_WAIT
#define WEFT_GEMM_HOOK_WAIT 0
#endif
#ifndef WEFT_GEMM_HOOK_NOTIFY
#define WEFT_GEMM_HOOK_NOTIFY 0
#endif
#ifndef WEFT_GEMM_A_OWN
#define WEFT_GEMM_A_OWN 0
#endif
#if WEFT_GEMM_A_OWN && !WEFT_GEMM_HOOK_WAIT
#error "WEFT_GEMM_A_OWN needs WEFT_GEMM_HOOK_WAIT"
#endif
#ifndef WEFT_GEMM_NOTIFY_SYS
#define WEFT_GEMM_NOTIFY_SYS 0
#endif
#ifndef WEFT_GEMM_SCATTER
#define WEFT_GEMM_SCATTER 0
#endif
#ifndef WEFT_GEMM_SPLITK
#define WEFT_GEMM_SPLITK 0
#endif
#ifndef WEFT_GEMM_CLUSTER_K
#define WEFT_GEMM_CLUSTER_K 1
#endif
#ifndef WEFT_GEMM_TAIL
#define WEFT_GEMM_TAIL 0
#endif
#ifndef WEFT_GEMM_AR_OWN
#define WEFT_GEMM_AR_OWN 0
#endif
#ifndef WEFT_GEMM_B_EVICT_FIRST
#define WEFT_GEMM_B_EVICT_FIRST 0
#endif
#ifndef WEFT_GEMM_C_T
#define WEFT_GEMM_C_T 0
#endif
#ifndef WEFT_GEMM_A_KMAJOR
#define WEFT_GEMM_A_KMAJOR 1
#endif
#ifndef WEFT_GEMM_GROUPED
#define WEFT_GEMM_GROUPED 0
#endif
#ifndef WEFT_GEMM_GATED
#define WEFT_GEMM_GATED 0
#endif
#ifndef WEFT_GEMM_COMBINE
#define WEFT_GEMM_COMBINE 0
#endif
#ifndef WEFT_GEMM_COMBINE_W
#define WEFT_GEMM_COMBINE_W 0
#endif
#ifndef WEFT_GEMM_A_GATHER
#define WEFT_GEMM_A_GATHER 0
#endif
#ifndef WEFT_GEMM_GROUP_WAIT
#define WEFT_GEMM_GROUP_WAIT 0
#endif
#ifndef WEFT_GEMM_AR_SUMMERS
#define WEFT_GEMM_AR_SUMMERS 0
#endif
#ifndef WEFT_GEMM_AR_COLS
#define WEFT_GEMM_AR_COLS 0
#endif
#if WEFT_GEMM_AR_COLS && (!WEFT_GEMM_AR_OWN || WEFT_GEMM_AR_SUMMERS || WEFT_GEMM_BM != 128 || \
                          WEFT_GEMM_CLUSTER_M != 1 || WEFT_GEMM_TAIL || WEFT_GEMM_ORDER_TABLE)
#error "WEFT_GEMM_AR_COLS is AR_OWN's form for one row of unclustered 128-row tiles, without SUMMERS, TAIL or ORDER_TABLE"
#endif
#if WEFT_GEMM_AR_OWN && (WEFT_GEMM_SPLITK || WEFT_GEMM_SCATTER || !WEFT_GEMM_HOOK_NOTIFY || \
                         !WEFT_GEMM_NOTIFY_SYS || WEFT_GEMM_OUT == 2)
#error "WEFT_GEMM_AR_OWN is an epilogue of the TMA-store kernel with .sys notifies and 16-bit C, without SCATTER"
#endif
/* (literals: the setmaxnreg text.) The split tail's decode beside a hook in 40 producer
 * registers: the fused scatter's storers spilled on 208-column tiles, and the wait cost 1% more
 * than with 48 (H100, gemm_dev: 8192x1792x4096 on 224 columns 179.6 us against 177.7, plain
 * 177.8; dev/gemm/README.md) */
#if WEFT_GEMM_TAIL && WEFT_GEMM_HOOK_WAIT || WEFT_GEMM_TAIL && WEFT_GEMM_HOOK_NOTIFY || \
    WEFT_GEMM_AR_OWN && WEFT_GEMM_AR_SUMMERS
#ifndef WEFT_GEMM_PRODUCER_REGS
#define WEFT_GEMM_PRODUCER_REGS 48
#endif
#ifndef WEFT_GEMM_CONSUMER_REGS
#define WEFT_GEMM_CONSUMER_REGS 224
#endif
#endif
#ifndef WEFT_GEMM_PRODUCER_REGS
#define WEFT_GEMM_PRODUCER_REGS 40
#endif
#ifndef WEFT_GEMM_CONSUMER_REGS
#define WEFT_GEMM_CONSUMER_REGS 232
#endif
/* Debug only (dev/gemm): %globaltimer stamps per CTA into notify_counters[4 * blockIdx.x + i]
 * (with HOOK_NOTIFY=0): 0 entry, 1 first stage full, 2 last mainloop done, 3 last epilogue done
 * (1-3 seen by consumer warpgroup 0). */
#ifndef WEFT_GEMM_TRACE
#define WEFT_GEMM_TRACE 0
#endif
#if WEFT_GEMM_TRACE
#define WEFT_GEMM_STAMP(i) \
  asm volatile("{.reg .u64 t;\nmov.u64 t, %%globaltimer;\nst.global.u64 [%0], t;}" ::"l"(notify_counters + 4 * blockIdx.x + (i)) : "memory")
#else
#define WEFT_GEMM_STAMP(i) ((void)0)
#endif
/* Debug only: swap LBO/SBO of the N-major B descriptor. */
#ifndef WEFT_GEMM_MN_SWAP
#define WEFT_GEMM_MN_SWAP 0
#endif

#define WEFT_GEMM_BK 64
#define WEFT_GEMM_WG_N (WEFT_GEMM_BM == 128 ? WEFT_GEMM_BN : WEFT_GEMM_BN / 2)
#define WEFT_GEMM_OUT_SIZE (WEFT_GEMM_OUT == 2 ? 4 : 2)
#define WEFT_GEMM_BOX_COLS (128 / WEFT_GEMM_OUT_SIZE)
/* A warpgroup's columns of C (GATED: half its accumulators' columns), and where a column of B's
 * tiles lands in C */
#define WEFT_GEMM_OUT_N (WEFT_GEMM_GATED ? WEFT_GEMM_WG_N / 2 : WEFT_GEMM_WG_N)
#define WEFT_GEMM_OUT_COL(n) ((n) >> WEFT_GEMM_GATED)
#define WEFT_GEMM_EPI_BOXES ((WEFT_GEMM_OUT_N * WEFT_GEMM_OUT_SIZE + 127) / 128)
/* A warpgroup's box `box` starts at this column of its 64 x OUT_N block. Where OUT_N is no
 * multiple of the box, the last box ends at the block's last column and overlaps the one before
 * it: the columns both hold are stored twice, with the same values (a box is never clipped
 * inside C; COMBINE adds only the columns from box * BOX_COLS on). */
#define WEFT_GEMM_BOX_LAST (WEFT_GEMM_OUT_N - WEFT_GEMM_BOX_COLS)
#define WEFT_GEMM_BOX_COL(box)                                                                   \
  ((box) * WEFT_GEMM_BOX_COLS < WEFT_GEMM_BOX_LAST ? (box) * WEFT_GEMM_BOX_COLS : WEFT_GEMM_BOX_LAST)
#define WEFT_GEMM_A_BYTES (WEFT_GEMM_A_ROWS * WEFT_GEMM_BK * 2)
#define WEFT_GEMM_B_BYTES (WEFT_GEMM_BN * WEFT_GEMM_BK * 2)
#define WEFT_GEMM_STAGE_BYTES (WEFT_GEMM_A_BYTES + WEFT_GEMM_B_BYTES)
#define WEFT_GEMM_CLUSTER (WEFT_GEMM_CLUSTER_M * WEFT_GEMM_CLUSTER_K)
/* cluster split-K: float4 column groups per consumer thread, and those a CTA owns at most */
#define WEFT_GEMM_NV (WEFT_GEMM_WG_N / 8)
#define WEFT_GEMM_RED_J ((WEFT_GEMM_NV + WEFT_GEMM_CLUSTER_K - 1) / WEFT_GEMM_CLUSTER_K)
#if WEFT_GEMM_SPLITK
#define WEFT_GEMM_EPI_BYTES ((WEFT_GEMM_CLUSTER_K - 1) * WEFT_GEMM_RED_J * 4096)
#else
#define WEFT_GEMM_EPI_BYTES (2 * WEFT_GEMM_EPI_BUFS * 8192)
#endif

#if WEFT_GEMM_BM != 128 && WEFT_GEMM_BM != 64
#error "WEFT_GEMM_BM must be 64 or 128"
#endif
#if WEFT_GEMM_WG_N % 16 || WEFT_GEMM_WG_N < 32 || WEFT_GEMM_WG_N > 256
#error "per-warpgroup N (BN, or BN/2 when BM=64) must be a multiple of 16 from 32 to 256"
#endif
#if WEFT_GEMM_WG_N == 32 && !(WEFT_GEMM_SPLITK && WEFT_GEMM_B_KMAJOR)
/* 32 columns are half a 128-byte staging box (TMA epilogue) and half a 64-column swizzle
 * block of [K,N] B: only the direct-store kernel with [N,K] B takes them */
#error "a per-warpgroup N of 32 needs WEFT_GEMM_SPLITK=1 and [N,K] B"
#endif
#if WEFT_GEMM_A_ROWS != WEFT_GEMM_BM && \
    (WEFT_GEMM_BM != 64 || WEFT_GEMM_CLUSTER_M != 1 || WEFT_GEMM_A_ROWS % 8 || WEFT_GEMM_A_ROWS > 64)
#error "WEFT_GEMM_A_ROWS below BM needs BM=64, no cluster, and a multiple of 8 (a swizzle atom)"
#endif
#if WEFT_GEMM_CLUSTER_M != 1 && WEFT_GEMM_CLUSTER_M != 2
#error "WEFT_GEMM_CLUSTER_M must be 1 or 2"
#endif
#if WEFT_GEMM_CLUSTER_K > 1 && (!WEFT_GEMM_SPLITK || WEFT_GEMM_CLUSTER_M != 1 || WEFT_GEMM_HOOK_NOTIFY || \
                                WEFT_GEMM_CLUSTER_K > 8 || WEFT_GEMM_CLUSTER_K > WEFT_GEMM_NV)
#error "WEFT_GEMM_CLUSTER_K > 1 needs SPLITK, CLUSTER_M = 1, no HOOK_NOTIFY and at most min(8, WG_N / 8)"
#endif
#if WEFT_GEMM_SCATTER && (!WEFT_GEMM_HOOK_NOTIFY || !WEFT_GEMM_NOTIFY_SYS || WEFT_GEMM_SPLITK)
#error "WEFT_GEMM_SCATTER needs HOOK_NOTIFY, NOTIFY_SYS and the TMA-store epilogue (no SPLITK)"
#endif
#ifndef WEFT_GEMM_LL
#define WEFT_GEMM_LL 0
#endif
#if WEFT_GEMM_LL && (!WEFT_GEMM_SPLITK || WEFT_GEMM_HOOK_NOTIFY || WEFT_GEMM_HOOK_WAIT)
#error "WEFT_GEMM_LL is an epilogue of the direct-store kernel (SPLITK) without hooks"
#endif
#if WEFT_GEMM_GROUPED &&                                                                  \
    (WEFT_GEMM_SPLITK || WEFT_GEMM_TAIL || WEFT_GEMM_CLUSTER_M != 1 || WEFT_GEMM_HOOK_WAIT ||  \
     WEFT_GEMM_HOOK_NOTIFY || WEFT_GEMM_LL || WEFT_GEMM_AR_OWN || WEFT_GEMM_ORDER_TABLE ||     \
     WEFT_GEMM_C_T || !WEFT_GEMM_A_KMAJOR || WEFT_GEMM_A_ROWS != WEFT_GEMM_BM)
#error "WEFT_GEMM_GROUPED is the unclustered TMA-store kernel without hooks, split, LL or AllReduce"
#endif
#if (WEFT_GEMM_GATED || WEFT_GEMM_COMBINE) && (!WEFT_GEMM_GROUPED || WEFT_GEMM_GATED && WEFT_GEMM_COMBINE)
#error "WEFT_GEMM_GATED and WEFT_GEMM_COMBINE are epilogues of the grouped kernel, one at a time"
#endif
#if WEFT_GEMM_A_GATHER && !WEFT_GEMM_GROUPED
#error "WEFT_GEMM_A_GATHER is a load of the grouped kernel"
#endif
#if WEFT_GEMM_GROUP_WAIT && !WEFT_GEMM_A_GATHER
#error "WEFT_GEMM_GROUP_WAIT is the wait of the grouped kernel's gathered loads"
#endif
#if WEFT_GEMM_GATED && !WEFT_GEMM_B_KMAJOR && (WEFT_GEMM_WG_N / 2) % 64
#error "WEFT_GEMM_GATED with [K,N] B needs WG_N / 2 a multiple of 64 (whole boxes of B)"
#endif
#if WEFT_GEMM_C_T && (!WEFT_GEMM_SPLITK || WEFT_GEMM_LL)
#error "WEFT_GEMM_C_T is a store of the direct-store kernel (SPLITK), without LL"
#endif
#if !WEFT_GEMM_A_KMAJOR && (!WEFT_GEMM_C_T || WEFT_GEMM_BM != 128 || WEFT_GEMM_A_ROWS != 128 || \
                            WEFT_GEMM_CLUSTER_M != 1 || WEFT_GEMM_HOOK_WAIT)
#error "[K,M] A (WEFT_GEMM_A_KMAJOR=0) is the transposed product's: C_T, BM=128, no cluster, no wait"
#endif
#if WEFT_GEMM_TAIL && WEFT_GEMM_SPLITK
#error "WEFT_GEMM_TAIL splits the TMA-store kernel's last wave; SPLITK splits every tile"
#endif
#if WEFT_GEMM_CLUSTER_M == 2 && WEFT_GEMM_BM == 64 && WEFT_GEMM_BN / 2 > 128
#error "2x1 clusters with BM=64 take BN up to 256"
#endif
#if !WEFT_GEMM_B_KMAJOR && (WEFT_GEMM_BN % 64)
#error "N-major B needs BN a multiple of 64"
#endif
#if !WEFT_GEMM_SPLITK && (WEFT_GEMM_EPI_BOXES % WEFT_GEMM_EPI_BUFS)
#error "WEFT_GEMM_EPI_BUFS must divide the number of output boxes per warpgroup"
#endif
/* (a narrower warpgroup tile put its one box at a negative column: an illegal instruction on
 * H200, BM=64 BN=96) */
#if !WEFT_GEMM_SPLITK && WEFT_GEMM_OUT_N < WEFT_GEMM_BOX_COLS
#error "a TMA-store warpgroup tile must be one output box wide at least (16-bit C: 64 columns)"
#endif

/* The notify hook's TMA stores issued by storer threads of the producer warpgroup
 * (kernels/gemm/epilogue_storers.cuh says why), and GEMM + AllReduce's summers in the storers'
 * warps (kernels/gemm/epilogue_summers.cuh). */
#define WEFT_GEMM_STORERS (WEFT_GEMM_HOOK_NOTIFY && !WEFT_GEMM_SPLITK)
#define WEFT_GEMM_SUMMERS (WEFT_GEMM_AR_OWN && WEFT_GEMM_AR_SUMMERS)

#endif
