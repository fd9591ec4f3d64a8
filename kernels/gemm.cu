/*
 * kernels/gemm.cu — weft's Hopper (sm_90a) GEMM: C[M,N] = A[M,K] * op(B), bf16/fp16 inputs, fp32
 * accumulation, bf16/fp16/fp32 output, with the overlap hooks (per-tile wait, per-tile notify,
 * tile-order table, SM budget) compiled in only when asked for. Compiled at run time by NVRTC
 * (--gpu-architecture=sm_90a, -I <weft include dir>); specialisations are chosen by -D defines.
 * C-style CUDA C, no system or CUDA headers: every Hopper feature is inline PTX.
 *
 * Design (the fast.cu ladder, written anew): TMA loads with 128-byte swizzle into a ring of
 * WEFT_GEMM_STAGES stages guarded by full/empty mbarriers; one producer warpgroup (one thread
 * issues TMA, setmaxnreg.dec) and two consumer warpgroups (wgmma m64nWG_Nk16, setmaxnreg.inc);
 * a persistent grid striding over tiles in a grouped (device-computed) or host-table order;
 * optional 2x1 clusters where the two CTAs (consecutive M tiles, same N tile) each load half of
 * the B tile and multicast it to both; epilogue stmatrix (16-bit out) or st.shared.v2 (fp32 out)
 * into 128B-swizzled staging boxes of 64 rows x 128 bytes, then TMA stores. A split-K mode
 * (small M / decode) reduces partial tiles through an fp32 workspace: the last CTA of a tile
 * (per-tile counter) sums the partials in split order (deterministic) and writes C.
 *
 * ------------------------------------------------------------------------------------------
 * LAUNCH CONTRACT (for src/ops/gemm.c)
 * ------------------------------------------------------------------------------------------
 * Entry points (extern "C"):
 *   weft_gemm               the GEMM (one per -D specialisation)
 *   weft_gemm_zero_counters optional helper: zero `n` u32 counters (split-K counters start at 0
 *                           and are reset to 0 by the kernel itself after each use)
 *
 * Defines (all optional; default in brackets):
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
 * Kernel parameters, in order:
 *   0  const weft_gemm_tmap_t tm_a      (__grid_constant__, 128-byte CUtensorMap by value)
 *   1  const weft_gemm_tmap_t tm_b
 *   2  const weft_gemm_tmap_t tm_c      (unused with SPLITK: pass any valid map, e.g. tm_a)
 *   3  void *c                          C base pointer (used by SPLITK only; else may be NULL)
 *   4  int M, 5 int N, 6 int K
 *   7  const int *order_table           ORDER_TABLE: position -> row-major cluster-tile index
 *                                       (ctm * tiles_n + tn, ctm in tile-rows of CLUSTER_M*BM
 *                                       rows, tiles_n = ceil(N/BN)); length ceil(ceil(M/BM)/
 *                                       CLUSTER_M) * tiles_n (weft_gemm_order_*_fill build it)
 *   8  int order_rotate_m               device grouped order: first cluster tile-row (0 = none);
 *                                       AR_COLS: the first tile column
 *   9  const unsigned long long *wait_signals  HOOK_WAIT: signal s covers A rows
 *                                       [s*wait_rows_per_signal, (s+1)*wait_rows_per_signal)
 *  10  int wait_rows_per_signal
 *  11  unsigned long long wait_expected  the wait passes when signal >= expected (epochs)
 *  12  unsigned long long timeout_ns     deadline of each wait (%globaltimer); on expiry the
 *                                       kernel fills *error (param 18) and traps; an abort
 *                                       (the node's word, weft_state.abort_flag) fills it and
 *                                       the kernel runs to its end, its results void
 *  13  unsigned long long *notify_counters  HOOK_NOTIFY: each consumer WG adds 1 after its
 *                                       64-row sub-tile is stored, on counter
 *                                       [sub-tile first row / notify_rows_per_counter]; one
 *                                       full tile adds 2 (BM=128: one per 64-row half; BM=64:
 *                                       one per BN/2-col half). Sub-tiles wholly past M add 0.
 *  14  int notify_rows_per_counter
 *  15  float *splitk_ws                 SPLITK: k_splits * ceil(M/BM)*BM * ceil(N/BN)*BN floats
 *                                       (whole tiles, in the accumulators' layout); TAIL:
 *                                       tail_tiles * CLUSTER_M * k_splits * BM * BN floats
 *  16  unsigned int *splitk_counters    SPLITK: ceil(M/BM) * ceil(N/BN) u32; TAIL: tail_tiles *
 *                                       CLUSTER_M; zero before the first launch (the kernel
 *                                       leaves them zero again)
 *  17  int k_splits                     SPLITK: 2 <= k_splits <= ceil(K/64); TAIL with
 *                                       tail_tiles > 0: the tail's splits, 2..ceil(K/64); 1
 *                                       otherwise
 *  18  weft_device_error_t *error       HOOK_WAIT: the runtime's host-mapped error record
 *                                       (weft/state.h; weft_state.error), or NULL. A timed-out
 *                                       wait writes status TIMEOUT, op "gemm tile <t>",
 *                                       signal_index (index into wait_signals), expected,
 *                                       observed, rank = peer = -1 (first reporter wins)
 *  19  long long ldc                    SPLITK: C's row stride in elements (any, >= N); the TMA
 *                                       store takes its stride from tm_c instead
 *  20  long long peer_stride            SCATTER, LL, AR_OWN: bytes from one rank's copy of a
 *                                       symmetric buffer to the next rank's in this address space
 *  21  int tail_tiles                   TAIL: cluster tiles split at the end of the order (0:
 *                                       none), fewer than the order's cluster tiles
 *  22  const unsigned long long *ll_epoch  LL: this rank's reduction epoch word (the call's
 *                                       flag is one more); c (param 3) is this rank's LL area
 *  23  unsigned long long ll_slot       LL: bytes of one rank's slot of the area
 *  24  int ll_rank, 25 int ll_world     LL, AR_OWN: this rank and the ranks of the node
 *  26  const weft_gemm_tmap_t tm_a_own  A_OWN: the own rows' map (as tm_a, dims {K, a_own_rows});
 *                                       otherwise any valid map (e.g. tm_a)
 *  27  int a_own_row0, 28 int a_own_rows  A_OWN: the rows of A that tm_a_own holds
 *  29  const weft_gemm_tmap_t tm_c_all  AR_OWN: C on every rank, element type of OUT, dims {N, M,
 *                                       ranks}, strides {ldc*outsize, peer_stride}, box
 *                                       {128/outsize, 64, 1}, based at rank 0's C; otherwise
 *                                       any valid map (e.g. tm_a)
 *  30  const char *ar_staging, 31 unsigned long long ar_slot, 32 const unsigned long long
 *      *ar_flags, 33 int ar_row0, 34 int ar_rows, 35 int ar_chunk_rows   AR_OWN (see there)
 *  36  char *ar_c                       AR_SUMMERS: rank 0's C (rank q's at + q * param 20)
 *  37  const weft_gemm_tmap_t tm_a_tail  as tm_a with a box of a_tail_rows rows: the last tile
 *                                       row's loads where M is no multiple of BM
 *  38  int a_tail_rows                  M % BM rounded up to 8 (whole swizzle atoms), if less
 *                                       than BM and A_ROWS = BM; else, and with A_KMAJOR=0 (whose
 *                                       boxes run along M), 0 (tm_a_tail unused)
 *
 * Tensor maps (cuTensorMapEncodeTiled, rank 2, innermost dimension first, 128B swizzle on all,
 * interleave none, L2 promotion 256B (128B where the row stride is no multiple of 256 bytes),
 * OOB fill none (zeros)):
 *   tm_a: dims {K, M}, strides {K*2}, box {64, A_ROWS}; A_KMAJOR=0: dims {M, K}, strides
 *         {M*2}, box {64, 64}
 *   tm_b: B_KMAJOR=1: dims {K, N}, strides {K*2}, box {64, BN/CLUSTER_M}
 *         B_KMAJOR=0: dims {N, K}, strides {N*2}, box {64, 64}
 *   tm_c: element type of OUT, dims {N, M}, strides {N*outsize}, box {128/outsize, 64};
 *         SCATTER: dims {N, slot rows, ranks}, strides {N*outsize, peer_stride}, box
 *         {128/outsize, 64, 1}, based at rank 0's slot
 * (the strides may exceed the dims: row strides lda, ldb, ldc in place of K, N, ...).
 * Requirements: every row stride of a tensor map a multiple of 16 bytes (TMA), so K % 8 == 0
 * and lda, ldb (and ldc for the TMA store) multiples of 8 elements (4 for fp32 C); base
 * pointers 16-byte aligned. M and N any: the direct-store epilogue (SPLITK=1, k_splits = 1 for
 * no split) writes C of any N and any ldc, element by element where pairs would be unaligned.
 *
 * Launch: block 384 threads; grid = number of CTAs (the SM budget; a multiple of the cluster
 * size CLUSTER_M * CLUSTER_K, at most the number of co-resident CTAs = SMs, one CTA per SM);
 * cluster dims {CLUSTER_M * CLUSTER_K, 1, 1};
 * dynamic smem (set CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES to it):
 *   STAGES * (A_ROWS*64*2 + BN*64*2) + EPI + 16 * STAGES + 128 + 1024, where EPI is
 *   2 * EPI_BUFS * 8192 without SPLITK, (CLUSTER_K - 1) * ceil(WG_N / 8 / CLUSTER_K) * 4096
 *   with CLUSTER_K > 1 (the partials received), else 0
 * (16 * STAGES: the ring's barriers; 112: 16 for the split-K flag, 96 for the notify store
 * hand-off barriers (48 used) and TAIL's flag and skip words (12, after them) or, with SPLITK
 * (no store hand-off), the cluster reduction's two barriers and HOOK_WAIT's two hand-off
 * barriers, which without SPLITK take the flag's 16; the 1024 is alignment slack; must be
 * <= 232448).
 * Every cluster strides over work items p = cluster_id, cluster_id + num_clusters, ... with
 * ceil(ceil(M/BM)/CLUSTER_M) * ceil(N/BN) * k_splits work items (no k_splits factor with
 * CLUSTER_K > 1: a cluster's CTAs are the splits of its tile; with TAIL, k_splits items for each
 * of the last tail_tiles cluster tiles, one for each other).
 *
 * Configurations: the launcher's heuristic (src/ops/gemm.c, weft_gemm_config_choose; measured
 * on H100, dev/gemm/NOTES.md) picks them. Large M: BM=128, BN 256 / 192 / 128 by wave
 * quantisation, CLUSTER_M=2, TAIL where the launch splits a last wave under half full. Decode
 * (M <= 128): BM=64 or 128 tiles, SPLITK with k_splits from the SM count (2, 4 or 8 as a
 * cluster reduction), A_ROWS for M <= 32, 8 to 16 stages.
 * Every wait/notify/table/SM-budget variant is the same kernel with the hook defines on.
 * ptxas (CUDA 13.0 NVRTC): 168 registers at entry, no spills, no local memory, no
 * C7508/C7510/C7511/C7515 for every configuration the heuristic picks.
 */
#include "weft/gemm_order.h"
#include "weft/state.h"

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
 * 177.8; dev/gemm/NOTES.md) */
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
#define WEFT_GEMM_EPI_BOXES ((WEFT_GEMM_WG_N * WEFT_GEMM_OUT_SIZE + 127) / 128)
/* A warpgroup's box `box` starts at this column of its 64 x WG_N block. Where WG_N is no multiple
 * of the box, the last box ends at the block's last column and overlaps the one before it: the
 * columns both hold are stored twice, with the same values (a box is never clipped inside C). */
#define WEFT_GEMM_BOX_LAST (WEFT_GEMM_WG_N - WEFT_GEMM_BOX_COLS)
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
#if !WEFT_GEMM_SPLITK && WEFT_GEMM_WG_N < WEFT_GEMM_BOX_COLS
#error "a TMA-store warpgroup tile must be one output box wide at least (16-bit C: 64 columns)"
#endif

#if WEFT_GEMM_DTYPE_IN == 0
#define WEFT_GEMM_WGMMA_TYPES "f32.bf16.bf16"
#else
#define WEFT_GEMM_WGMMA_TYPES "f32.f16.f16"
#endif
#define WEFT_GEMM_TRANS_A (1 - WEFT_GEMM_A_KMAJOR)
#define WEFT_GEMM_TRANS_B (1 - WEFT_GEMM_B_KMAJOR)
#define WEFT_GEMM_STR2(x) #x
#define WEFT_GEMM_STR(x) WEFT_GEMM_STR2(x)

typedef unsigned long long u64;
typedef unsigned int u32;

/* CUtensorMap (no cuda.h under NVRTC): 128 opaque bytes, 64-byte aligned. */
typedef struct __align__(64) weft_gemm_tmap { u64 v[16]; } weft_gemm_tmap_t;

/* ---------------------------------------------------------------------------------------- */
/* PTX wrappers                                                                              */
/* ---------------------------------------------------------------------------------------- */

__device__ __forceinline__ u32 weft_gemm_smem(const void *p) {
  return (u32)__cvta_generic_to_shared(p);
}

__device__ __forceinline__ void weft_gemm_mbar_init(u32 bar, u32 count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(bar), "r"(count) : "memory");
}

__device__ __forceinline__ void weft_gemm_mbar_expect_tx(u32 bar, u32 bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(bar), "r"(bytes)
               : "memory");
}

/* Waits for the phase of parity `parity` of a barrier of this CTA to complete, with the given
 * semantics ("": acquire at CTA scope; ".acquire.cluster": what peer CTAs wrote before their
 * arrivals, too). */
#define WEFT_GEMM_MBAR_WAIT(name, sem)                                                  \
  __device__ __forceinline__ void name(u32 bar, u32 parity) {                             \
    u32 ok;                                                                               \
    do {                                                                                  \
      asm volatile("{\n.reg .pred p;\n"                                                   \
                   "mbarrier.try_wait.parity" sem ".shared::cta.b64 p, [%1], %2;\n"      \
                   "selp.u32 %0, 1, 0, p;\n}\n"                                           \
                   : "=r"(ok)                                                             \
                   : "r"(bar), "r"(parity)                                                \
                   : "memory");                                                           \
    } while (!ok);                                                                        \
  }
WEFT_GEMM_MBAR_WAIT(weft_gemm_mbar_wait, "")
WEFT_GEMM_MBAR_WAIT(weft_gemm_mbar_wait_cluster, ".acquire.cluster")

/* Arrive on the barrier at the same smem offset in CTA `cta` of the cluster (itself included).
 * The default (.release.cta) semantics: the arrival only says that this warpgroup's wgmmas have
 * finished reading the stage (wgmma.wait_group already ordered that). A .release.cluster arrive
 * makes ptxas put MEMBAR.ALL.GPU before it, once per k-block, which halved the 2x1-cluster
 * kernel's speed (H100: 360 against 690 TFLOP/s without clusters, 8192^3). */
__device__ __forceinline__ void weft_gemm_mbar_arrive_cluster(u32 bar, u32 cta) {
  asm volatile("{\n.reg .b32 ra;\n"
               "mapa.shared::cluster.u32 ra, %0, %1;\n"
               "mbarrier.arrive.shared::cluster.b64 _, [ra];\n}\n" ::"r"(bar),
               "r"(cta)
               : "memory");
}

/* 16 bytes into CTA `cta`'s shared memory at the offset of `addr` here, completing 16 bytes of
 * the transaction count of its mbarrier at the offset of `bar` (the data is visible to whoever
 * waits for that barrier's phase: no fence, no release). */
__device__ __forceinline__ void weft_gemm_st_async_v4(u32 addr, u32 cta, u32 bar, float x, float y,
                                                      float z, float w) {
  asm volatile("{\n.reg .b32 ra, rb;\n"
               "mapa.shared::cluster.u32 ra, %0, %1;\n"
               "mapa.shared::cluster.u32 rb, %2, %1;\n"
               "st.async.shared::cluster.mbarrier::complete_tx::bytes.v4.f32 [ra], {%3, %4, %5, %6}, [rb];\n}\n" ::"r"(addr),
               "r"(cta), "r"(bar), "f"(x), "f"(y), "f"(z), "f"(w)
               : "memory");
}

__device__ __forceinline__ u32 weft_gemm_ld_shared_u32(u32 addr) {
  u32 v;
  asm volatile("ld.shared.u32 %0, [%1];" : "=r"(v) : "r"(addr) : "memory");
  return v;
}
__device__ __forceinline__ void weft_gemm_st_shared_u32(u32 addr, u32 v) {
  asm volatile("st.shared.u32 [%0], %1;" ::"r"(addr), "r"(v) : "memory");
}

__device__ __forceinline__ void weft_gemm_mbar_arrive(u32 bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(bar) : "memory");
}

__device__ __forceinline__ void weft_gemm_tma_load(u32 dst, const weft_gemm_tmap_t *map,
                                                         int c0, int c1, u32 bar) {
  asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes"
               " [%0], [%1, {%2, %3}], [%4];" ::"r"(dst),
               "l"((u64)map), "r"(c0), "r"(c1), "r"(bar)
               : "memory");
}

__device__ __forceinline__ void weft_gemm_tma_load_mc(u32 dst, const weft_gemm_tmap_t *map,
                                                            int c0, int c1, u32 bar,
                                                            unsigned short mask) {
  asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes"
               ".multicast::cluster [%0], [%1, {%2, %3}], [%4], %5;" ::"r"(dst),
               "l"((u64)map), "r"(c0), "r"(c1), "r"(bar), "h"(mask)
               : "memory");
}

/* TMA loads with an L2 cache policy (createpolicy): WEFT_GEMM_B_EVICT_FIRST */
__device__ __forceinline__ void weft_gemm_tma_load_hint(u32 dst, const weft_gemm_tmap_t *map,
                                                        int c0, int c1, u32 bar, u64 policy) {
  asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes"
               ".L2::cache_hint [%0], [%1, {%2, %3}], [%4], %5;" ::"r"(dst),
               "l"((u64)map), "r"(c0), "r"(c1), "r"(bar), "l"(policy)
               : "memory");
}

__device__ __forceinline__ void weft_gemm_tma_load_mc_hint(u32 dst, const weft_gemm_tmap_t *map,
                                                           int c0, int c1, u32 bar,
                                                           unsigned short mask, u64 policy) {
  asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes"
               ".multicast::cluster.L2::cache_hint [%0], [%1, {%2, %3}], [%4], %5, %6;" ::"r"(dst),
               "l"((u64)map), "r"(c0), "r"(c1), "r"(bar), "h"(mask), "l"(policy)
               : "memory");
}

/* B's loads (see WEFT_GEMM_B_EVICT_FIRST; pol_b is the producer's policy) */
#if WEFT_GEMM_B_EVICT_FIRST
#define WEFT_GEMM_LOAD_B(d, m, c0, c1, b) weft_gemm_tma_load_hint(d, m, c0, c1, b, pol_b)
#define WEFT_GEMM_LOAD_B_MC(d, m, c0, c1, b, k) weft_gemm_tma_load_mc_hint(d, m, c0, c1, b, k, pol_b)
#else
#define WEFT_GEMM_LOAD_B(d, m, c0, c1, b) weft_gemm_tma_load(d, m, c0, c1, b)
#define WEFT_GEMM_LOAD_B_MC(d, m, c0, c1, b, k) weft_gemm_tma_load_mc(d, m, c0, c1, b, k)
#endif

__device__ __forceinline__ void weft_gemm_tma_store(const weft_gemm_tmap_t *map, u32 src,
                                                          int c0, int c1) {
  asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%0, {%1, %2}], [%3];" ::"l"(
                   (u64)map),
               "r"(c0), "r"(c1), "r"(src)
               : "memory");
}

/* SCATTER: a box into rank c2's slot (tm_c 3-D) */
__device__ __forceinline__ void weft_gemm_tma_store3(const weft_gemm_tmap_t *map, u32 src,
                                                     int c0, int c1, int c2) {
  asm volatile("cp.async.bulk.tensor.3d.global.shared::cta.bulk_group [%0, {%1, %2, %3}], [%4];" ::"l"(
                   (u64)map),
               "r"(c0), "r"(c1), "r"(c2), "r"(src)
               : "memory");
}

__device__ __forceinline__ void weft_gemm_bulk_commit(void) {
  asm volatile("cp.async.bulk.commit_group;" ::: "memory");
}
__device__ __forceinline__ void weft_gemm_bulk_wait_read0(void) {
  asm volatile("cp.async.bulk.wait_group.read 0;" ::: "memory");
}
__device__ __forceinline__ void weft_gemm_bulk_wait0(void) {
  asm volatile("cp.async.bulk.wait_group 0;" ::: "memory");
}

__device__ __forceinline__ void weft_gemm_named_sync(u32 id, u32 threads) {
  asm volatile("bar.sync %0, %1;" ::"r"(id), "r"(threads) : "memory");
}

__device__ __forceinline__ void weft_gemm_wgmma_fence(void) {
  asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
}
__device__ __forceinline__ void weft_gemm_wgmma_commit(void) {
  asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
}
#define WEFT_GEMM_WGMMA_WAIT(n) asm volatile("wgmma.wait_group.sync.aligned " #n ";" ::: "memory")

/* wgmma shared-memory descriptor, 128B swizzle: start >> 4 in bits 0-13, LBO >> 4 in 16-29,
 * SBO >> 4 in 32-45, swizzle mode 1 (128B) in 62-63. */
__device__ __forceinline__ u64 weft_gemm_desc(u32 addr, u32 lbo, u32 sbo) {
  return (u64)((addr & 0x3FFFF) >> 4) | ((u64)(lbo >> 4) << 16) | ((u64)(sbo >> 4) << 32) |
         (1ULL << 62);
}

__device__ __forceinline__ u32 weft_gemm_pack(float lo, float hi) {
  u32 r;
#if WEFT_GEMM_OUT == 1
  asm("cvt.rn.f16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
#else
  asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
#endif
  return r;
}

/* lo, hi into C (row stride ldc) at element `at` and at + 1 (hi only where `second`, at + 1 inside
 * C): one vector store where both are and ldc is even (an even `at` then aligns the pair), else
 * element by element. */
__device__ __forceinline__ void weft_gemm_store2(void *c, u64 ldc, u64 at, int second, float lo,
                                                 float hi) {
  const int pair = second && !(ldc & 1);
#if WEFT_GEMM_OUT == 2
  float *o = (float *)c + at;
  if (pair) {
    asm volatile("st.global.v2.f32 [%0], {%1, %2};" ::"l"(o), "f"(lo), "f"(hi) : "memory");
  } else {
    o[0] = lo;
    if (second) o[1] = hi;
  }
#else
  unsigned short *o = (unsigned short *)c + at;
  const u32 v = weft_gemm_pack(lo, hi);
  if (pair) {
    *(u32 *)o = v;
  } else {
    o[0] = (unsigned short)v;
    if (second) o[1] = (unsigned short)(v >> 16);
  }
#endif
}

#if WEFT_GEMM_C_T
/* weft_gemm_store_group of the transposed product (WEFT_GEMM_C_T): fragment (row, col) is
 * C[col][row]. Rows r and r + 1 of a column lie in lanes l and l ^ 4, so the pair trades halves
 * and each lane stores two consecutive elements of one row of C: the even row's lane C[col][r,
 * r + 1], the odd row's C[col + 1][r, r + 1]. Every lane of the warp must call it (the
 * shuffle). */
__device__ __forceinline__ void weft_gemm_store_group(void *c, int M, int N, u64 ldc, int row,
                                                      int col, float f0, float f1, float f2,
                                                      float f3) {
  const int odd = (threadIdx.x >> 2) & 1; /* row is odd: rows are tile base + 16 w + lane / 4 */
#pragma unroll
  for (int h = 0; h < 2; h++) {
    const float s0 = h ? f2 : f0, s1 = h ? f3 : f1;
    const float got = __shfl_xor_sync(0xffffffffu, odd ? s0 : s1, 4);
    const int r = row + 8 * h - odd, cr = col + odd; /* C[cr][r], C[cr][r + 1] */
    if (cr < N && r < M)
      weft_gemm_store2(c, ldc, (u64)cr * ldc + r, r + 1 < M, odd ? got : s0, odd ? s1 : got);
  }
}
#else
/* The direct (split-K kernel) epilogue's store of one accumulator column group: f0, f1 at
 * (row, col), (row, col + 1) and f2, f3 at row + 8, as the m64nNk16 fragment holds them. col is
 * even, so the pair is one aligned vector store whenever ldc is even and col + 1 < N; otherwise
 * (odd N or row stride: C that TMA cannot store) element by element. */
__device__ __forceinline__ void weft_gemm_store_group(void *c, int M, int N, u64 ldc, int row,
                                                      int col, float f0, float f1, float f2,
                                                      float f3) {
  if (col >= N) return;
#pragma unroll
  for (int h = 0; h < 2; h++)
    if (row + 8 * h < M)
      weft_gemm_store2(c, ldc, (u64)(row + 8 * h) * ldc + col, col + 1 < N, h ? f2 : f0,
                       h ? f3 : f1);
}
#endif

#if WEFT_GEMM_LL
/* Where the LL epilogue's lines go (see WEFT_GEMM_LL): this rank's slot of this call's parity in
 * this rank's area; rank q's copy is (q - rank) * peer_stride bytes away. */
typedef struct weft_gemm_ll {
  unsigned char *slot;
  long long peer_stride;
  u32 flag;
  int rank, world;
} weft_gemm_ll_t;

__device__ __forceinline__ weft_gemm_ll_t weft_gemm_ll_dst(void *area, const u64 *epoch, u64 slot,
                                                          long long peer_stride, int rank,
                                                          int world) {
  const u64 e = *(const volatile u64 *)epoch + 1;
  weft_gemm_ll_t d;
  d.slot = (unsigned char *)area + ((e & 1) * (u64)world + (u64)rank) * slot;
  d.peer_stride = peer_stride, d.flag = (u32)e, d.rank = rank, d.world = world;
  return d;
}

/* Line `line` (8 payload bytes lo | hi << 32) into every rank's copy, this rank's first: the
 * line of weft/ll.cuh's weft_ll_store16, written out here because that header brings in
 * weft/sync.cuh's waits, whose failure report is a call, and a call reachable in this kernel
 * serialises its wgmmas. */
__device__ __forceinline__ void weft_gemm_ll_line(const weft_gemm_ll_t *d, u64 line, u32 lo,
                                                  u32 hi) {
  unsigned char *at = d->slot + line * 16;
  for (int k = 0; k < d->world; k++) {
    const int q = d->rank + k < d->world ? d->rank + k : d->rank + k - d->world;
    unsigned char *to = at + (q - d->rank) * d->peer_stride;
    asm volatile("st.volatile.global.v4.u32 [%0], {%1, %2, %3, %4};" ::"l"(to), "r"(lo),
                 "r"(d->flag), "r"(hi), "r"(d->flag)
                 : "memory");
  }
}

/* weft_gemm_store_group's LL form: the same fragment as LL lines. Every lane of the warp must
 * call it (16-bit C: the halves are swapped between lane pairs first). */
__device__ __forceinline__ void weft_gemm_ll_group(const weft_gemm_ll_t *d, int M, int N, u64 ldc,
                                                   int row, int col, float f0, float f1, float f2,
                                                   float f3) {
#if WEFT_GEMM_OUT == 2
  if (col >= N) return; /* N even: col + 1 < N too */
  if (row < M)
    weft_gemm_ll_line(d, ((u64)row * ldc + col) / 2, __float_as_uint(f0), __float_as_uint(f1));
  if (row + 8 < M)
    weft_gemm_ll_line(d, ((u64)(row + 8) * ldc + col) / 2, __float_as_uint(f2),
                      __float_as_uint(f3));
#else
  /* the even lane holds cols col, col + 1 and the odd one col + 2, col + 3 of rows row and
   * row + 8: the even lane sends the row + 8 half, the odd one the row half */
  const u32 p0 = weft_gemm_pack(f0, f1), p1 = weft_gemm_pack(f2, f3);
  const int odd = threadIdx.x & 1;
  const u32 got = __shfl_xor_sync(0xffffffffu, odd ? p0 : p1, 1);
  const int r = odd ? row + 8 : row, c0 = odd ? col - 2 : col; /* c0 % 4 == 0 */
  if (r < M && c0 < N)
    weft_gemm_ll_line(d, ((u64)r * ldc + c0) / 4, odd ? got : p0, odd ? p1 : got);
#endif
}
#define WEFT_GEMM_OUT_GROUP(row, col, f0, f1, f2, f3) \
  weft_gemm_ll_group(&lld, M, N, ldc, row, col, f0, f1, f2, f3)
#else
#define WEFT_GEMM_OUT_GROUP(row, col, f0, f1, f2, f3) \
  weft_gemm_store_group(c, M, N, ldc, row, col, f0, f1, f2, f3)
#endif

__device__ __forceinline__ float4 weft_gemm_ld_cg_v4(const float4 *p) {
  float4 v;
  asm volatile("ld.global.cg.v4.f32 {%0, %1, %2, %3}, [%4];"
               : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w)
               : "l"(p));
  return v;
}

/* A split's partial tile (split-K, or a split tail): both consumer warpgroups (256 threads,
 * named barrier 4) store their accumulators at `mine` (float4 [v][wtid] of the warpgroup's
 * slice), then one thread adds 1 to the tile's counter (acq_rel: the partials before it, the
 * others' after it). Returns whether this CTA is the tile's last split, and so sums the
 * partials; it zeroes the counter for the next launch. `flag`: a shared word for the answer. */
__device__ __forceinline__ int weft_gemm_partial_arrive(const float *d, float4 *mine, u32 *counter,
                                                        int splits, volatile int *flag, int tid) {
#pragma unroll
  for (int v = 0; v < WEFT_GEMM_NV; v++)
    asm volatile("st.global.v4.f32 [%0], {%1, %2, %3, %4};" ::"l"(mine + v * 128), "f"(d[4 * v]),
                 "f"(d[4 * v + 1]), "f"(d[4 * v + 2]), "f"(d[4 * v + 3])
                 : "memory");
  __threadfence();
  weft_gemm_named_sync(4, 256);
  if (tid == 128) {
    u32 old;
    asm volatile("atom.acq_rel.gpu.global.add.u32 %0, [%1], 1;" : "=r"(old) : "l"(counter) : "memory");
    const int is_last = old == (u32)(splits - 1);
    if (is_last) *counter = 0;
    *flag = is_last;
  }
  weft_gemm_named_sync(4, 256);
  return *flag;
}

__device__ __forceinline__ u64 weft_gemm_globaltimer(void) {
  u64 t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

__device__ __forceinline__ u64 weft_gemm_ld_acquire_sys(const u64 *p) {
  u64 v;
  asm volatile("ld.acquire.sys.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
  return v;
}

/* ---------------------------------------------------------------------------------------- */
/* wgmma m64nWG_Nk16, A and B from shared memory, D += A*B (scale_d = 0: D = A*B)            */
/* ---------------------------------------------------------------------------------------- */
/* The instruction names every accumulator register: WG_N/2 floats, in chunks of 8 (chunk c:
 * d[8c..8c+7], present when WG_N > 16c: its register numbers S<c> and operands O<c>). The
 * width's line of WEFT_GEMM_ACC_END names the shape and the operands after the list: the
 * descriptors (%WG_N/2, %WG_N/2+1) and scale_d (%WG_N/2+2). */
#define WEFT_GEMM_D8(i)                                                                         \
  "+f"(d[i]), "+f"(d[i + 1]), "+f"(d[i + 2]), "+f"(d[i + 3]), "+f"(d[i + 4]), "+f"(d[i + 5]),      \
      "+f"(d[i + 6]), "+f"(d[i + 7])
#define WEFT_GEMM_ACC_S0 "%0, %1, %2, %3, %4, %5, %6, %7"
#define WEFT_GEMM_ACC_O0 WEFT_GEMM_D8(0)
#define WEFT_GEMM_ACC_S1 ", %8, %9, %10, %11, %12, %13, %14, %15"
#define WEFT_GEMM_ACC_O1 , WEFT_GEMM_D8(8)
#if WEFT_GEMM_WG_N > 32
#define WEFT_GEMM_ACC_S2 ", %16, %17, %18, %19, %20, %21, %22, %23"
#define WEFT_GEMM_ACC_O2 , WEFT_GEMM_D8(16)
#else
#define WEFT_GEMM_ACC_S2 ""
#define WEFT_GEMM_ACC_O2
#endif
#if WEFT_GEMM_WG_N > 48
#define WEFT_GEMM_ACC_S3 ", %24, %25, %26, %27, %28, %29, %30, %31"
#define WEFT_GEMM_ACC_O3 , WEFT_GEMM_D8(24)
#else
#define WEFT_GEMM_ACC_S3 ""
#define WEFT_GEMM_ACC_O3
#endif
#if WEFT_GEMM_WG_N > 64
#define WEFT_GEMM_ACC_S4 ", %32, %33, %34, %35, %36, %37, %38, %39"
#define WEFT_GEMM_ACC_O4 , WEFT_GEMM_D8(32)
#else
#define WEFT_GEMM_ACC_S4 ""
#define WEFT_GEMM_ACC_O4
#endif
#if WEFT_GEMM_WG_N > 80
#define WEFT_GEMM_ACC_S5 ", %40, %41, %42, %43, %44, %45, %46, %47"
#define WEFT_GEMM_ACC_O5 , WEFT_GEMM_D8(40)
#else
#define WEFT_GEMM_ACC_S5 ""
#define WEFT_GEMM_ACC_O5
#endif
#if WEFT_GEMM_WG_N > 96
#define WEFT_GEMM_ACC_S6 ", %48, %49, %50, %51, %52, %53, %54, %55"
#define WEFT_GEMM_ACC_O6 , WEFT_GEMM_D8(48)
#else
#define WEFT_GEMM_ACC_S6 ""
#define WEFT_GEMM_ACC_O6
#endif
#if WEFT_GEMM_WG_N > 112
#define WEFT_GEMM_ACC_S7 ", %56, %57, %58, %59, %60, %61, %62, %63"
#define WEFT_GEMM_ACC_O7 , WEFT_GEMM_D8(56)
#else
#define WEFT_GEMM_ACC_S7 ""
#define WEFT_GEMM_ACC_O7
#endif
#if WEFT_GEMM_WG_N > 128
#define WEFT_GEMM_ACC_S8 ", %64, %65, %66, %67, %68, %69, %70, %71"
#define WEFT_GEMM_ACC_O8 , WEFT_GEMM_D8(64)
#else
#define WEFT_GEMM_ACC_S8 ""
#define WEFT_GEMM_ACC_O8
#endif
#if WEFT_GEMM_WG_N > 144
#define WEFT_GEMM_ACC_S9 ", %72, %73, %74, %75, %76, %77, %78, %79"
#define WEFT_GEMM_ACC_O9 , WEFT_GEMM_D8(72)
#else
#define WEFT_GEMM_ACC_S9 ""
#define WEFT_GEMM_ACC_O9
#endif
#if WEFT_GEMM_WG_N > 160
#define WEFT_GEMM_ACC_S10 ", %80, %81, %82, %83, %84, %85, %86, %87"
#define WEFT_GEMM_ACC_O10 , WEFT_GEMM_D8(80)
#else
#define WEFT_GEMM_ACC_S10 ""
#define WEFT_GEMM_ACC_O10
#endif
#if WEFT_GEMM_WG_N > 176
#define WEFT_GEMM_ACC_S11 ", %88, %89, %90, %91, %92, %93, %94, %95"
#define WEFT_GEMM_ACC_O11 , WEFT_GEMM_D8(88)
#else
#define WEFT_GEMM_ACC_S11 ""
#define WEFT_GEMM_ACC_O11
#endif
#if WEFT_GEMM_WG_N > 192
#define WEFT_GEMM_ACC_S12 ", %96, %97, %98, %99, %100, %101, %102, %103"
#define WEFT_GEMM_ACC_O12 , WEFT_GEMM_D8(96)
#else
#define WEFT_GEMM_ACC_S12 ""
#define WEFT_GEMM_ACC_O12
#endif
#if WEFT_GEMM_WG_N > 208
#define WEFT_GEMM_ACC_S13 ", %104, %105, %106, %107, %108, %109, %110, %111"
#define WEFT_GEMM_ACC_O13 , WEFT_GEMM_D8(104)
#else
#define WEFT_GEMM_ACC_S13 ""
#define WEFT_GEMM_ACC_O13
#endif
#if WEFT_GEMM_WG_N > 224
#define WEFT_GEMM_ACC_S14 ", %112, %113, %114, %115, %116, %117, %118, %119"
#define WEFT_GEMM_ACC_O14 , WEFT_GEMM_D8(112)
#else
#define WEFT_GEMM_ACC_S14 ""
#define WEFT_GEMM_ACC_O14
#endif
#if WEFT_GEMM_WG_N > 240
#define WEFT_GEMM_ACC_S15 ", %120, %121, %122, %123, %124, %125, %126, %127"
#define WEFT_GEMM_ACC_O15 , WEFT_GEMM_D8(120)
#else
#define WEFT_GEMM_ACC_S15 ""
#define WEFT_GEMM_ACC_O15
#endif
#if WEFT_GEMM_WG_N == 32
#define WEFT_GEMM_ACC_END "m64n32k16", "%16, %17", "%18"
#elif WEFT_GEMM_WG_N == 48
#define WEFT_GEMM_ACC_END "m64n48k16", "%24, %25", "%26"
#elif WEFT_GEMM_WG_N == 64
#define WEFT_GEMM_ACC_END "m64n64k16", "%32, %33", "%34"
#elif WEFT_GEMM_WG_N == 80
#define WEFT_GEMM_ACC_END "m64n80k16", "%40, %41", "%42"
#elif WEFT_GEMM_WG_N == 96
#define WEFT_GEMM_ACC_END "m64n96k16", "%48, %49", "%50"
#elif WEFT_GEMM_WG_N == 112
#define WEFT_GEMM_ACC_END "m64n112k16", "%56, %57", "%58"
#elif WEFT_GEMM_WG_N == 128
#define WEFT_GEMM_ACC_END "m64n128k16", "%64, %65", "%66"
#elif WEFT_GEMM_WG_N == 144
#define WEFT_GEMM_ACC_END "m64n144k16", "%72, %73", "%74"
#elif WEFT_GEMM_WG_N == 160
#define WEFT_GEMM_ACC_END "m64n160k16", "%80, %81", "%82"
#elif WEFT_GEMM_WG_N == 176
#define WEFT_GEMM_ACC_END "m64n176k16", "%88, %89", "%90"
#elif WEFT_GEMM_WG_N == 192
#define WEFT_GEMM_ACC_END "m64n192k16", "%96, %97", "%98"
#elif WEFT_GEMM_WG_N == 208
#define WEFT_GEMM_ACC_END "m64n208k16", "%104, %105", "%106"
#elif WEFT_GEMM_WG_N == 224
#define WEFT_GEMM_ACC_END "m64n224k16", "%112, %113", "%114"
#elif WEFT_GEMM_WG_N == 240
#define WEFT_GEMM_ACC_END "m64n240k16", "%120, %121", "%122"
#elif WEFT_GEMM_WG_N == 256
#define WEFT_GEMM_ACC_END "m64n256k16", "%128, %129", "%130"
#endif
/* the asm text, from WEFT_GEMM_ACC_END's three strings */
#define WEFT_GEMM_ACC_ASM(shape, in, scale)                                                      \
  "{\n.reg .pred p;\nsetp.ne.b32 p, " scale ", 0;\n"                                             \
  "wgmma.mma_async.sync.aligned." shape "." WEFT_GEMM_WGMMA_TYPES " {" WEFT_GEMM_ACC_S0             \
  WEFT_GEMM_ACC_S1 WEFT_GEMM_ACC_S2 WEFT_GEMM_ACC_S3 WEFT_GEMM_ACC_S4 WEFT_GEMM_ACC_S5              \
  WEFT_GEMM_ACC_S6 WEFT_GEMM_ACC_S7 WEFT_GEMM_ACC_S8 WEFT_GEMM_ACC_S9 WEFT_GEMM_ACC_S10             \
  WEFT_GEMM_ACC_S11 WEFT_GEMM_ACC_S12 WEFT_GEMM_ACC_S13 WEFT_GEMM_ACC_S14 WEFT_GEMM_ACC_S15         \
  "}, " in ", p, 1, 1, " WEFT_GEMM_STR(WEFT_GEMM_TRANS_A) ", " WEFT_GEMM_STR(WEFT_GEMM_TRANS_B) ";\n}\n"
#define WEFT_GEMM_APPLY(macro, args) macro(args)
__device__ __forceinline__ void weft_gemm_wgmma(float *d, u64 da, u64 db, int scale_d) {
  asm volatile(WEFT_GEMM_APPLY(WEFT_GEMM_ACC_ASM, WEFT_GEMM_ACC_END)
               : WEFT_GEMM_ACC_O0 WEFT_GEMM_ACC_O1 WEFT_GEMM_ACC_O2 WEFT_GEMM_ACC_O3 WEFT_GEMM_ACC_O4
                 WEFT_GEMM_ACC_O5 WEFT_GEMM_ACC_O6 WEFT_GEMM_ACC_O7 WEFT_GEMM_ACC_O8 WEFT_GEMM_ACC_O9
                 WEFT_GEMM_ACC_O10 WEFT_GEMM_ACC_O11 WEFT_GEMM_ACC_O12 WEFT_GEMM_ACC_O13
                 WEFT_GEMM_ACC_O14 WEFT_GEMM_ACC_O15
               : "l"(da), "l"(db), "r"(scale_d));
}

/* Notify: +n on a counter, released at gpu or sys scope (the data it guards must already be
 * complete and, if written by TMA, fenced with fence.proxy.async.global). Several counters
 * behind one memory barrier: weft_gemm_notify_fence, then weft_gemm_notify_relaxed on each (a
 * relaxed add after a release one could be performed before it). */
#if WEFT_GEMM_NOTIFY_SYS
#define WEFT_GEMM_NOTIFY_SCOPE "sys"
#else
#define WEFT_GEMM_NOTIFY_SCOPE "gpu"
#endif
__device__ __forceinline__ void weft_gemm_notify(u64 *ctr, u64 n) {
  asm volatile("red.release." WEFT_GEMM_NOTIFY_SCOPE ".global.add.u64 [%0], %1;" ::"l"(ctr), "l"(n)
               : "memory");
}
__device__ __forceinline__ void weft_gemm_notify_fence(void) {
  asm volatile("fence.acq_rel." WEFT_GEMM_NOTIFY_SCOPE ";" ::: "memory");
}
__device__ __forceinline__ void weft_gemm_notify_relaxed(u64 *ctr, u64 n) {
  asm volatile("red.relaxed." WEFT_GEMM_NOTIFY_SCOPE ".global.add.u64 [%0], %1;" ::"l"(ctr), "l"(n)
               : "memory");
}

/* A release at gpu or sys scope is a memory barrier that waits for the issuing warp's
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
 * about 1% more on 128-column tiles (H100). Not with SCATTER (each owner's counter, as before). */
#define WEFT_GEMM_STORERS (WEFT_GEMM_HOOK_NOTIFY && !WEFT_GEMM_SPLITK)
#define WEFT_GEMM_SUMMERS (WEFT_GEMM_AR_OWN && WEFT_GEMM_AR_SUMMERS)
/* AR_OWN: whether the consumer adds the peers' partials of an own tile of work item p (and its
 * storer stores the sums into every rank's C), rather than the summers: the grid's last round */
#define WEFT_GEMM_AR_LATE(p) (!WEFT_GEMM_AR_SUMMERS || (p) + num_clusters >= num_work)

/* ---------------------------------------------------------------------------------------- */
/* work decomposition                                                                        */
/* ---------------------------------------------------------------------------------------- */

typedef struct weft_gemm_work {
  int m0, n0;     /* this CTA's tile origin */
  int tile;       /* row-major index of this CTA's tile (tm * tiles_n + tn), split-K counters */
  int kb0, kb1;   /* k-blocks [kb0, kb1) of 64 */
  int split;
  int splits;     /* the tile's splits (TAIL: 1, or k_splits for a tail tile) */
  int slot;       /* TAIL: the tail tile's counter and workspace slot */
} weft_gemm_work_t;

__device__ __forceinline__ weft_gemm_work_t weft_gemm_decode(int p, int M, int N, int K,
                                                                   const int *order_table,
                                                                   int rotate_m, int k_splits,
                                                                   int first_tail, int cta_rank) {
  weft_gemm_work_t w;
  int tiles_n = (N + WEFT_GEMM_BN - 1) / WEFT_GEMM_BN;
  int mn = p, s = 0, splits = 1;
  w.slot = 0;
#if WEFT_GEMM_SPLITK && WEFT_GEMM_CLUSTER_K > 1
  s = cta_rank; /* the cluster's CTAs are the tile's splits */
  splits = WEFT_GEMM_CLUSTER_K;
#elif WEFT_GEMM_SPLITK
  mn = p / k_splits;
  s = p - mn * k_splits;
  splits = k_splits;
#elif WEFT_GEMM_TAIL
  /* the whole tiles first, then k_splits items for each tail tile from item first_tail on
   * (computed once by the caller: the TMA thread has 40 registers) */
  if (p >= first_tail) {
    const int q = p - first_tail, t = q / k_splits;
    mn = first_tail + t;
    s = q - t * k_splits;
    splits = k_splits;
    w.slot = t * WEFT_GEMM_CLUSTER_M + (WEFT_GEMM_CLUSTER_M > 1 ? cta_rank : 0);
  }
#endif
  (void)first_tail;
  int ctm, tn;
#if WEFT_GEMM_ORDER_TABLE
  int code = order_table[mn];
  ctm = code / tiles_n;
  tn = code - ctm * tiles_n;
  (void)rotate_m;
#elif WEFT_GEMM_AR_COLS
  /* one tile row; the columns from rotate_m on */
  (void)order_table;
  ctm = 0;
  tn = mn + rotate_m;
  if (tn >= tiles_n) tn -= tiles_n;
#else
  (void)order_table;
  int tiles_m = (M + WEFT_GEMM_BM - 1) / WEFT_GEMM_BM;
  int ctiles_m = (tiles_m + WEFT_GEMM_CLUSTER_M - 1) / WEFT_GEMM_CLUSTER_M;
  weft_gemm_order_grouped_rotated(mn, ctiles_m, tiles_n, WEFT_GEMM_GROUP, rotate_m, &ctm, &tn);
#endif
  int tm = ctm * WEFT_GEMM_CLUSTER_M + (WEFT_GEMM_CLUSTER_M > 1 ? cta_rank : 0);
  w.m0 = tm * WEFT_GEMM_BM;
  w.n0 = tn * WEFT_GEMM_BN;
  w.tile = tm * tiles_n + tn;
  int nkb = (K + WEFT_GEMM_BK - 1) / WEFT_GEMM_BK;
  /* 32-bit where the products fit (any k below 2.9M): the 64-bit divisions were a call each,
   * on the producer's path to its first load (as is every division: none for one split) */
  if (splits == 1) {
    w.kb0 = 0;
    w.kb1 = nkb;
  } else if (nkb < 46341) {
    w.kb0 = (int)((unsigned)(s * nkb) / (unsigned)splits);
    w.kb1 = (int)((unsigned)((s + 1) * nkb) / (unsigned)splits);
  } else {
    w.kb0 = (int)((long long)s * nkb / splits);
    w.kb1 = (int)((long long)(s + 1) * nkb / splits);
  }
  (void)k_splits;
  w.split = s;
  w.splits = splits;
  return w;
}

#if WEFT_GEMM_HOOK_WAIT || WEFT_GEMM_AR_OWN
/* The runtime's state block (weft/device.cuh declares it for the device library, which this
 * kernel does not include): the rank and the node's abort word, for the waits below. */
__constant__ weft_device_state_t weft_state;

/* Bounded spin on one signal word (written by a peer GPU, the copy engine or the host: .sys
 * acquire). `abortable` (the waiter thread's): it also ends when the node's abort word is raised,
 * read every 1024 spins; the own-segment waits of AR_OWN, in threads that hold a tile's
 * accumulators, keep the bare deadline (the spin count spilled them). Returns 0 when the signal
 * reached `expected`, else WEFT_DEVICE_ERROR_TIMEOUT or WEFT_DEVICE_ERROR_ABORTED with the last
 * value seen in *observed. The report (and trap) is made by the caller: a call (printf) reachable
 * here would make ptxas serialise every wgmma (C7510). */
__device__ __forceinline__ unsigned weft_gemm_wait_signal(const u64 *sig, u64 expected,
                                                          u64 timeout_ns, u64 *observed,
                                                          int abortable) {
  u64 v = weft_gemm_ld_acquire_sys(sig);
  if (v >= expected) return 0;
  u64 t0 = weft_gemm_globaltimer();
  for (unsigned spins = 1;; spins++) {
    v = weft_gemm_ld_acquire_sys(sig);
    if (v >= expected) return 0;
    if (!abortable) {
      if (weft_gemm_globaltimer() - t0 > timeout_ns) {
        *observed = v;
        return WEFT_DEVICE_ERROR_TIMEOUT;
      }
    } else if ((spins & 1023) == 0) {
      const volatile unsigned *ab = (const volatile unsigned *)weft_state.abort_flag;
      unsigned st = ab && *ab ? WEFT_DEVICE_ERROR_ABORTED
                    : weft_gemm_globaltimer() - t0 > timeout_ns ? WEFT_DEVICE_ERROR_TIMEOUT
                                                                : 0u;
      if (st) {
        *observed = v;
        return st;
      }
    }
  }
}

/* Fills the host-mapped error record (first reporter wins) with status (a timeout or an abort):
 * op "<op> tile <t>" (ag_gemm's per-tile wait, or gemm_ar's own-segment waits), this rank, the
 * peer whose signal it waited on (signal s of ag_gemm is rank s's rows; flag q of gemm_ar is
 * peer q's; -1 for a word many peers count on), the signal's index, expected and observed. Out
 * of line: inlined into the threads that hold a tile's accumulators (or the summers' 48
 * registers), its stores spilled them; it calls nothing outside the module (see above). */
__device__ __noinline__ void weft_gemm_report(weft_device_error_t *e, unsigned status, int tile,
                                             int peer, int index, u64 expected, u64 observed) {
  if (!e || atomicCAS_system((unsigned *)&e->status, 0u, WEFT_DEVICE_ERROR_BUSY) != 0u) return;
  e->rank = weft_state.rank;
  e->peer = peer;
  e->cmp = 3; /* WEFT_CMP_GE */
  e->signal_index = (u64)index;
  e->expected = expected;
  e->observed = observed;
#if WEFT_GEMM_HOOK_WAIT
  const char *pre = "ag_gemm tile ";
#else
  const char *pre = "gemm_ar tile ";
#endif
  int i = 0;
  for (; pre[i]; i++) e->op[i] = pre[i];
  unsigned t = (unsigned)tile;
  int n = 1;
  for (unsigned x = t; x >= 10; x /= 10) n++;
  for (int k = n - 1; k >= 0; k--, t /= 10) e->op[i + k] = (char)('0' + t % 10);
  e->op[i + n] = 0;
  __threadfence_system();
  *(volatile unsigned *)&e->status = status;
  __threadfence_system();
}
#endif

#if WEFT_GEMM_AR_OWN
/* Until *word counts `need`; at the deadline the report (tile, peer, signal index) and a trap. */
__device__ __forceinline__ void weft_gemm_ar_wait_word(const u64 *word, u64 need, u64 timeout_ns,
                                                       weft_device_error_t *error, int tile,
                                                       int peer, int index) {
  u64 got;
  if (weft_gemm_wait_signal(word, need, timeout_ns, &got, 0)) {
    weft_gemm_report(error, WEFT_DEVICE_ERROR_TIMEOUT, tile, peer, index, need, got);
    asm volatile("trap;"); /* a dead end: nothing after it keeps the accumulators live */
  }
}

/* Until every peer's arrival flag (flags[q], q != me) counts `need` chunks of the own segment
 * landed (the report's signal and peer: q). */
__device__ __forceinline__ void weft_gemm_ar_wait_peers(const u64 *flags, int me, int world,
                                                        int need, u64 timeout_ns,
                                                        weft_device_error_t *error, int tile) {
  for (int q = 0; q < world; q++)
    if (q != me) weft_gemm_ar_wait_word(flags + q, (u64)need, timeout_ns, error, tile, q, q);
}

/* The rank after q of world (the AllGather stores go to the next rank first, as the
 * collectives' pushes do: every link carries alike) */
__device__ __forceinline__ int weft_gemm_next_rank(int q, int world) {
  return q + 1 == world ? 0 : q + 1;
}

#if WEFT_GEMM_AR_COLS
/* AR_COLS, the release of a stored tile of column tn (words0: rank 0's copy of the words, the
 * ranks' copies peer_stride bytes apart; mine: this rank's): a partial stored into owner q's
 * staging adds its `subtiles` to q's arrival word; an own tile's sums, stored into every rank's
 * C, zero the arrival word (every peer's partial was added) and count on every rank's done word
 * (tiles_n), the next rank first, behind one memory barrier. */
__device__ __forceinline__ void weft_gemm_ar_cols_release(u64 *words0, const u64 *mine,
                                                          long long peer_stride, int tn,
                                                          int tiles_n, int q, int me, int world,
                                                          u64 subtiles) {
  if (q != me) {
    weft_gemm_notify((u64 *)((char *)words0 + q * peer_stride) + tn, subtiles);
    return;
  }
  *(volatile u64 *)(mine + tn) = 0;
  weft_gemm_notify_fence();
  for (int i = 1; i <= world; i++) {
    q = weft_gemm_next_rank(q, world);
    weft_gemm_notify_relaxed((u64 *)((char *)words0 + q * peer_stride) + tiles_n, 1);
  }
}
#endif

/* two elements of C's type (a 32-bit word, low first) into fp32 *lo, *hi (+=) */
__device__ __forceinline__ void weft_gemm_ar_acc2(float *lo, float *hi, u32 w) {
#if WEFT_GEMM_OUT == 1
  float l, h;
  asm("{.reg .b16 a, b;\nmov.b32 {a, b}, %2;\ncvt.f32.f16 %0, a;\ncvt.f32.f16 %1, b;}"
      : "=f"(l), "=f"(h)
      : "r"(w));
  *lo += l, *hi += h;
#else
  *lo += __uint_as_float(w << 16), *hi += __uint_as_float(w & 0xffff0000u);
#endif
}

/* AR_OWN: d (this thread's fragment of a 64 x WG_N warpgroup block whose fragment row 0 is
 * staged row r0 and column 0 staged column col0, of rows of ld elements; columns from `cols` on
 * are past C; see the fragment layout in the consumer) += every peer's
 * partial of the same elements, ranks in order, so that the sum has the same bits on every
 * rank that stores it. One peer at a time, 8 column groups' loads (16 registers) in flight beside
 * the 128 accumulators of a 256-column block: more spill, and 3 peers x 8 in flight were no
 * faster (bench/results/2026-11-26r-stop30.md section 3); .cg (past L1): the copies land during
 * the kernel. */
__device__ __forceinline__ void weft_gemm_ar_add(float *d, const char *staging, u64 slot, int me,
                                                 int world, int r0, int col0, int ld, int cols) {
#pragma unroll 1
  for (int p = 0; p < world; p++) {
    if (p == me) continue;
    const char *base = staging + (u64)p * slot + ((u64)r0 * ld + col0) * 2;
    const u64 down = (u64)8 * ld * 2; /* h = 1: 8 rows on */
#pragma unroll
    for (int j0 = 0; j0 < WEFT_GEMM_NV; j0 += 8) {
      u32 x[16];
#pragma unroll
      for (int i = 0; i < 16; i++) {
        const int j = j0 + i / 2;
        x[i] = 0u;
        if (j < WEFT_GEMM_NV && col0 + 8 * j < cols)
          asm("ld.global.cg.b32 %0, [%1];" : "=r"(x[i]) : "l"(base + 16 * j + (i & 1 ? down : 0)));
      }
#pragma unroll
      for (int i = 0; i < 16; i++) {
        const int j = j0 + i / 2, h = i & 1;
        if (j >= WEFT_GEMM_NV) continue;
        weft_gemm_ar_acc2(&d[4 * j + 2 * h], &d[4 * j + 2 * h + 1], x[i]);
      }
    }
  }
}
#endif

#if WEFT_GEMM_SUMMERS
/* The summers' weft_gemm_ar_wait_peers (the report names the sub-tile's row as the tile). Out of
 * line: inlined, its registers beside the sum loop's spilled in the producer warpgroup's 48. */
__device__ __noinline__ void weft_gemm_ar_wait(const u64 *flags, int me, int world, int need,
                                               u64 timeout_ns, weft_device_error_t *error,
                                               int row) {
  weft_gemm_ar_wait_peers(flags, me, world, need, timeout_ns, error, row);
}

/* AR_OWN, the summers (lane `lane` of `lanes`): the own sub-tile of C rows [row, row + 64) and
 * columns [col0, col0 + WG_N), clipped to M and N, whose partial this rank's C holds (stored and
 * fenced by the storer): every rank's C gets the sum of the world partials in rank order (the
 * peers' from their staging slots, rows from seg_row, row stride N), the next rank first. So
 * every rank's C holds the same bits, and each partial enters rounded to C's type, as in a GEMM
 * followed by an AllReduce. 16-byte units (N % 8 == 0: the TMA store's rows); two partials'
 * loads in flight at a time (the producer warpgroup's 48 registers: four spilled). */
__device__ __forceinline__ void weft_gemm_ar_sum(char *c0, long long stride, long long ldc,
                                                 const char *staging, u64 slot, int me, int world,
                                                 int row, int seg_row, int col0, int M, int N,
                                                 int lane, int lanes) {
  const int units = WEFT_GEMM_WG_N / 8;
#pragma unroll 1
  for (int i = lane; i < 64 * units; i += lanes) {
    const int r = i / units, col = col0 + 8 * (i - r * units);
    if (row + r >= M || col >= N) continue;
    char *dst = c0 + ((u64)(row + r) * ldc + col) * 2; /* in rank 0's C */
    const char *src = staging + ((u64)(seg_row + r) * N + col) * 2;
    float s[8];
#pragma unroll
    for (int j = 0; j < 8; j++) s[j] = 0.f;
#pragma unroll 1
    for (int p0 = 0; p0 < world; p0 += 2) {
      float4 x[2]; /* 8 elements of C's type each (weft_gemm_ld_cg_v4 moves the bits) */
#pragma unroll
      for (int j = 0; j < 2; j++)
        if (p0 + j < world)
          x[j] = weft_gemm_ld_cg_v4(
              (const float4 *)(p0 + j == me ? dst + me * stride : src + (p0 + j) * slot));
#pragma unroll
      for (int j = 0; j < 2; j++)
        if (p0 + j < world)
#pragma unroll
          for (int k = 0; k < 4; k++)
            weft_gemm_ar_acc2(&s[2 * k], &s[2 * k + 1], __float_as_uint((&x[j].x)[k]));
    }
    const uint4 o = make_uint4(weft_gemm_pack(s[0], s[1]), weft_gemm_pack(s[2], s[3]),
                               weft_gemm_pack(s[4], s[5]), weft_gemm_pack(s[6], s[7]));
    for (int k = 1, q = me; k <= world; k++) {
      q = weft_gemm_next_rank(q, world);
      *(uint4 *)(dst + q * stride) = o;
    }
  }
}
#endif

/* ---------------------------------------------------------------------------------------- */
/* the kernel                                                                                */
/* ---------------------------------------------------------------------------------------- */

extern "C" __global__ void __launch_bounds__(384, 1)
    weft_gemm(const __grid_constant__ weft_gemm_tmap_t tm_a,
              const __grid_constant__ weft_gemm_tmap_t tm_b,
              const __grid_constant__ weft_gemm_tmap_t tm_c, void *c, int M, int N, int K,
              const int *order_table, int order_rotate_m, const u64 *wait_signals,
              int wait_rows_per_signal, u64 wait_expected, u64 timeout_ns, u64 *notify_counters,
              int notify_rows_per_counter, float *splitk_ws, u32 *splitk_counters,
              int k_splits, weft_device_error_t *error, long long ldc, long long peer_stride,
              int tail_tiles, const u64 *ll_epoch, u64 ll_slot, int ll_rank, int ll_world,
              const __grid_constant__ weft_gemm_tmap_t tm_a_own, int a_own_row0, int a_own_rows,
              const __grid_constant__ weft_gemm_tmap_t tm_c_all, const char *ar_staging,
              u64 ar_slot, const u64 *ar_flags, int ar_row0, int ar_rows, int ar_chunk_rows,
              char *ar_c, const __grid_constant__ weft_gemm_tmap_t tm_a_tail, int a_tail_rows) {
  extern __shared__ __align__(1024) unsigned char weft_gemm_dyn_smem[];
  if (threadIdx.x == 0) WEFT_GEMM_STAMP(0);
  /* The stream's next kernel, where it is launched for programmatic dependent launch (weft's
   * small-message collectives: weft_pdl_begin), may be scheduled from now on: its blocks take the
   * SMs as this grid's CTAs leave them and wait there for this grid to complete, so that an
   * AllReduce after the GEMM starts without a launch gap. */
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
  /* 128B-swizzled TMA boxes and wgmma atoms want 1024-byte alignment. */
  u32 base = (weft_gemm_smem(weft_gemm_dyn_smem) + 1023u) & ~1023u;
  const u32 sA = base;
  const u32 sB = sA + WEFT_GEMM_STAGES * WEFT_GEMM_A_BYTES;
  const u32 sC = sB + WEFT_GEMM_STAGES * WEFT_GEMM_B_BYTES;
  const u32 bar_full = sC + WEFT_GEMM_EPI_BYTES;
  const u32 bar_empty = bar_full + 8 * WEFT_GEMM_STAGES;
  const u32 flag_addr = bar_empty + 8 * WEFT_GEMM_STAGES;
  /* 112 bytes: the storers' hand-offs (48), the split tail's words (12) and AR_SUMMERS's
   * hand-offs (64..95) and sub-tiles (96..111), or with SPLITK (no storers, no tail) the cluster
   * reduction's and the waiter's barriers (16 each) */
  const u32 aux = flag_addr + 16;
  (void)flag_addr;
  (void)aux;
  /* cluster split-K: the partials received at sC */
  const u32 red_full = aux, red_empty = aux + 8;
  (void)red_full;
  (void)red_empty;
#if WEFT_GEMM_HOOK_WAIT
  /* the waiter's hand-off barriers (ready, taken): in the split-K flag's room, or after the
   * cluster reduction's barriers in the aux room with split-K (which has no storers) */
  const u32 wait_bar = WEFT_GEMM_SPLITK ? aux + 16 : flag_addr;
#endif
#if WEFT_GEMM_SPLITK
  volatile int *flag =
      (volatile int *)(weft_gemm_dyn_smem + (flag_addr - weft_gemm_smem(weft_gemm_dyn_smem)));
#endif
#if WEFT_GEMM_TAIL
  /* after the storers' 48 bytes of the aux room: the last-split flag, and each consumer
   * warpgroup's skip word for its storer */
  volatile int *tail_flag =
      (volatile int *)(weft_gemm_dyn_smem + (aux + 48 - weft_gemm_smem(weft_gemm_dyn_smem)));
#if WEFT_GEMM_STORERS
  const u32 tail_skip = aux + 52; /* + 4 * cw (a shared address: the storer has 40 registers) */
#endif
#endif

  const int tid = threadIdx.x;
  const int wg = tid / 128;
  u32 cta_rank = 0;
#if WEFT_GEMM_CLUSTER > 1
  asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(cta_rank));
#endif
  const int cluster_id = blockIdx.x / WEFT_GEMM_CLUSTER;
  const int num_clusters = gridDim.x / WEFT_GEMM_CLUSTER;
  const int tiles_m = (M + WEFT_GEMM_BM - 1) / WEFT_GEMM_BM;
  const int tiles_n = (N + WEFT_GEMM_BN - 1) / WEFT_GEMM_BN;
  const int ctiles_m = (tiles_m + WEFT_GEMM_CLUSTER_M - 1) / WEFT_GEMM_CLUSTER_M;
#if WEFT_GEMM_SPLITK && WEFT_GEMM_CLUSTER_K == 1
  const int num_work = ctiles_m * tiles_n * k_splits;
#elif WEFT_GEMM_TAIL
  const int num_work = ctiles_m * tiles_n + tail_tiles * (k_splits - 1);
#else
  const int num_work = ctiles_m * tiles_n;
#endif
  /* the first tail tile's item (TAIL; see weft_gemm_decode) */
  const int first_tail = ctiles_m * tiles_n - (WEFT_GEMM_TAIL ? tail_tiles : 0);
  (void)tail_tiles;
  /* A_OWN: whether a tile's rows (from m0) come from tm_a_own */
#define WEFT_GEMM_IS_OWN(m0) \
  (WEFT_GEMM_A_OWN && (m0) >= a_own_row0 && (m0) + WEFT_GEMM_BM <= a_own_row0 + a_own_rows)
/* AR_OWN: whether a tile (any of its rows: the segment is whole cluster tiles; AR_COLS: its
 * column n0's owner) is the rank's own */
#if WEFT_GEMM_AR_COLS
#define WEFT_GEMM_AR_OWNER(n0) ((n0) / WEFT_GEMM_BN / ar_seg_tiles)
#define WEFT_GEMM_AR_IS_OWN(row, n0) (WEFT_GEMM_AR_OWNER(n0) == ll_rank)
  /* the tile columns of a rank's segment, and the sub-tiles every tile stores */
  const int ar_seg_tiles = (tiles_n + ll_world - 1) / ll_world;
  const u64 ar_subtiles = M > 64 ? 2 : 1;
  (void)ar_row0;
  (void)ar_rows;
  (void)ar_chunk_rows;
#else
#define WEFT_GEMM_AR_IS_OWN(row, n0) \
  (WEFT_GEMM_AR_OWN && (row) >= ar_row0 && (row) < ar_row0 + ar_rows)
#endif
/* AR_OWN: the chunks of the own segment whose peers' copies an own row needs landed (chunk c is
 * there once the flags count above c) */
#define WEFT_GEMM_AR_CHUNKS(row) (((row) - ar_row0) / ar_chunk_rows + 1)
#if !WEFT_GEMM_SUMMERS
  (void)ar_c;
#endif
#if !WEFT_GEMM_AR_OWN
  (void)ar_staging;
  (void)ar_slot;
  (void)ar_flags;
  (void)ar_row0;
  (void)ar_rows;
  (void)ar_chunk_rows;
#endif
#if !WEFT_GEMM_LL
  (void)ll_epoch;
  (void)ll_slot;
  (void)ll_rank;
  (void)ll_world;
#endif

  if (tid == 0) {
    /* the maps' first use otherwise waits for their fetch from parameter space */
    asm volatile("prefetch.tensormap [%0];" ::"l"((u64)&tm_a) : "memory");
    asm volatile("prefetch.tensormap [%0];" ::"l"((u64)&tm_b) : "memory");
    if (a_tail_rows) asm volatile("prefetch.tensormap [%0];" ::"l"((u64)&tm_a_tail) : "memory");
#if WEFT_GEMM_A_OWN
    asm volatile("prefetch.tensormap [%0];" ::"l"((u64)&tm_a_own) : "memory");
#endif
#if !WEFT_GEMM_SPLITK
    asm volatile("prefetch.tensormap [%0];" ::"l"((u64)&tm_c) : "memory");
#endif
#if WEFT_GEMM_AR_OWN
    asm volatile("prefetch.tensormap [%0];" ::"l"((u64)&tm_c_all) : "memory");
#endif
    for (int s = 0; s < WEFT_GEMM_STAGES; s++) {
      weft_gemm_mbar_init(bar_full + 8 * s, 1);
      weft_gemm_mbar_init(bar_empty + 8 * s, 2 * WEFT_GEMM_CLUSTER_M);
    }
#if WEFT_GEMM_STORERS
    for (int i = 0; i < 2; i++) {
      weft_gemm_mbar_init(aux + 16 * i, 128);  /* full: the consumer warpgroup's threads */
      weft_gemm_mbar_init(aux + 16 * i + 8, 1); /* free: its storer */
    }
    weft_gemm_mbar_init(aux + 32, 1); /* pair: storer 0's sub-tile is complete and fenced */
    weft_gemm_mbar_init(aux + 40, 1); /* pair_free: storer 1 has released it */
#endif
#if WEFT_GEMM_SUMMERS
    for (int i = 0; i < 2; i++) {
      weft_gemm_mbar_init(aux + 64 + 16 * i, 1);     /* sum_full: storer i handed a sub-tile */
      weft_gemm_mbar_init(aux + 64 + 16 * i + 8, 1); /* sum_free: its summers have taken it */
    }
#endif
#if WEFT_GEMM_CLUSTER_K > 1
    /* red_full: this CTA's expect_tx, then the peers' partials; red_empty: each peer's two
     * consumer warpgroups, done reading what this CTA sent them */
    weft_gemm_mbar_init(red_full, 1);
    weft_gemm_mbar_init(red_empty, 2 * (WEFT_GEMM_CLUSTER_K - 1));
#endif
#if WEFT_GEMM_TAIL && WEFT_GEMM_STORERS
    /* the storers read their skip words before any skip round could have set them */
    weft_gemm_st_shared_u32(tail_skip, 0);
    weft_gemm_st_shared_u32(tail_skip + 4, 0);
#endif
#if WEFT_GEMM_HOOK_WAIT
    weft_gemm_mbar_init(wait_bar, 1);     /* ready: the waiter saw the tile's signals */
    weft_gemm_mbar_init(wait_bar + 8, 1); /* taken: the producer passed that tile */
#endif
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  }
#if WEFT_GEMM_CLUSTER > 1
  /* No peer may arrive on (or store into) this CTA's barriers before they are initialised. A
   * relaxed arrive: the fence above orders the initialisation, and a release arrive would add a
   * MEMBAR.ALL.GPU to every thread. There is no closing cluster barrier (see the producer's tail
   * and the cluster reduction's last wait). */
  __syncwarp(); /* .aligned: the whole warp executes the barrier together */
  asm volatile("barrier.cluster.arrive.relaxed.aligned;\nbarrier.cluster.wait.acquire.aligned;" ::
                   : "memory");
#else
  __syncthreads();
#endif
  /* Launched for programmatic dependent launch (gemm.c), this grid may have started while the
   * stream's previous kernel still ran: nothing above touched global memory, and nothing below
   * may before that kernel has completed and its writes are visible. */
  asm volatile("griddepcontrol.wait;" ::: "memory");

#if WEFT_GEMM_HOOK_WAIT
  int to_tile = 0, to_index = 0;
  unsigned to_status = 0;
  u64 to_observed = 0;
#endif
  if (wg == 0) {
    /* ---------------- producer warpgroup: one thread issues every TMA load ---------------- */
    asm volatile("setmaxnreg.dec.sync.aligned.u32 " WEFT_GEMM_STR(WEFT_GEMM_PRODUCER_REGS) ";");
    if (tid == 0) {
      int stage = 0;
      u32 phase = 0;
#if WEFT_GEMM_B_EVICT_FIRST
      u64 pol_b;
      asm volatile("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;" : "=l"(pol_b));
#endif
#if WEFT_GEMM_HOOK_WAIT
      u32 wait_seq = 0; /* tiles taken from the waiter */
#endif
      for (int p = cluster_id; p < num_work; p += num_clusters) {
        weft_gemm_work_t w = weft_gemm_decode(p, M, N, K, order_table, order_rotate_m, k_splits,
                                              first_tail, cta_rank);
#if WEFT_GEMM_HOOK_WAIT
        /* the waiter (thread 96) has read this tile's signals; then tell it to go on to the next */
        weft_gemm_mbar_wait(wait_bar, wait_seq & 1); /* .acquire.cta */
        weft_gemm_mbar_arrive(wait_bar + 8);
        wait_seq++;
        /* the data behind the signal is read by TMA (async proxy) */
        if (w.m0 < M) asm volatile("fence.proxy.async.global;" ::: "memory");
#else
        (void)wait_signals;
        (void)wait_rows_per_signal;
        (void)wait_expected;
        (void)timeout_ns;
#endif
        /* A_OWN: the tile's rows from the caller's own rows. A partial last tile row loads only
         * the rows that exist (whole swizzle atoms; the stage's other rows keep stale bytes,
         * whose output rows are never stored): the box's out-of-bounds rows held the 128-column
         * tiles back (H200: 160x8192x14336 134 us against 86 for 256 rows) */
        const int a_tail = a_tail_rows && w.m0 + WEFT_GEMM_BM > M;
        const weft_gemm_tmap_t *map_a =
            WEFT_GEMM_IS_OWN(w.m0) ? &tm_a_own : a_tail ? &tm_a_tail : &tm_a;
        const int row_a = WEFT_GEMM_IS_OWN(w.m0) ? w.m0 - a_own_row0 : w.m0;
        const u32 stage_tx = a_tail ? (u32)a_tail_rows * (WEFT_GEMM_BK * 2) + WEFT_GEMM_B_BYTES
                                    : WEFT_GEMM_STAGE_BYTES;
        for (int kb = w.kb0; kb < w.kb1; kb++) {
          const u32 full = bar_full + 8 * stage;
          weft_gemm_mbar_wait(bar_empty + 8 * stage, phase ^ 1);
          const int k0 = kb * WEFT_GEMM_BK;
#if WEFT_GEMM_CLUSTER_M > 1
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
#if WEFT_GEMM_B_KMAJOR
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
#else
            WEFT_GEMM_LOAD_B(b_dst + jj * 8192, &tm_b, w.n0 + jj * 64, k0, full);
#endif
          }
#endif
          if (++stage == WEFT_GEMM_STAGES) {
            stage = 0;
            phase ^= 1;
          }
        }
      }
#if WEFT_GEMM_CLUSTER_M > 1
      /* The producer's tail, in place of a closing cluster barrier: the CTA must outlive the
       * peer consumers' arrivals on its empty barriers, so it waits for every stage's release
       * after its last fill (both CTAs of a cluster fill the same stages in the same order).
       * A closing barrier.cluster kept the producer warpgroup's idle warps waiting in
       * UCGABAR_WAIT for the whole kernel, and that slowed every load: 128x2752x4096 on
       * 64x128 tiles ran 22.4 us as 2x1 clusters against 16.6 unclustered (H100). */
      for (int i = 0; i < WEFT_GEMM_STAGES; i++) {
        weft_gemm_mbar_wait(bar_empty + 8 * stage, phase ^ 1);
        if (++stage == WEFT_GEMM_STAGES) {
          stage = 0;
          phase ^= 1;
        }
      }
#endif
#if WEFT_GEMM_AR_COLS
      /* the call ends once every tile column's sums are in this rank's C (the done word counts
       * them; the report names the word: tile and signal tiles_n); zeroed for the next call,
       * whose counts come only after this grid has ended (a peer's sums wait for this rank's
       * partials) */
      if (blockIdx.x == 0) {
        weft_gemm_ar_wait_word(ar_flags + tiles_n, (u64)tiles_n, timeout_ns, error, tiles_n, -1,
                               tiles_n);
        *(volatile u64 *)(ar_flags + tiles_n) = 0;
      }
#endif
    }
#if WEFT_GEMM_HOOK_WAIT
    /* The wait's signal reads are made one tile ahead by thread 96 (warp 3, otherwise idle), not
     * by the TMA thread: made by it, each read's round trip sat between a tile's last load and
     * the next tile's first, and the consumers waited with it where the ring has no full stages
     * to spare (128-column tiles: +7% on H100, about 2 us a tile; a relaxed read cost the same).
     * Causality carries over: acquire.sys read, release.cta arrive on ready, acquire.cta wait in
     * thread 0, then its proxy fence and loads. Placed after the TMA thread's code: placed before
     * it (as it first was), the wait cost 0.3-0.8 us more a call (H100, gemm_dev, same runs,
     * 2026-11-26: 8192x1376x4096 +1.9 -> +1.1 us over the plain kernel). ptxas lays the TMA loop
     * out differently (with either order it is no longer the plain build's all-uniform loop:
     * R2UR before each load); why one order is faster is not settled (dev/gemm/NOTES.md). */
    if (tid == 96) {
      u32 seq = 0;
      for (int p = cluster_id; p < num_work; p += num_clusters, seq++) {
        weft_gemm_work_t w = weft_gemm_decode(p, M, N, K, order_table, order_rotate_m, k_splits,
                                              first_tail, cta_rank);
        if (w.m0 < M && !WEFT_GEMM_IS_OWN(w.m0)) {
          int last = (w.m0 + WEFT_GEMM_BM < M ? w.m0 + WEFT_GEMM_BM : M) - 1;
          for (int s = w.m0 / wait_rows_per_signal; s <= last / wait_rows_per_signal; s++) {
            to_status = weft_gemm_wait_signal(wait_signals + s, wait_expected, timeout_ns,
                                              &to_observed, 1);
            if (to_status) {
              to_tile = w.tile;
              to_index = s;
              /* aborted: reported, then on as if it had come (the results are void) */
              if (to_status == WEFT_DEVICE_ERROR_TIMEOUT) goto weft_gemm_timed_out;
              weft_gemm_report(error, to_status, to_tile, to_index, to_index, wait_expected,
                               to_observed);
            }
          }
        }
        /* one tile ahead at most: the producer has taken the previous one */
        if (seq > 0) weft_gemm_mbar_wait(wait_bar + 8, (seq - 1) & 1);
        weft_gemm_mbar_arrive(wait_bar); /* .release.cta */
      }
    }
#endif
#if WEFT_GEMM_STORERS
    /* the storers (see WEFT_GEMM_STORERS): the TMA stores of consumer warpgroup cw's tiles, then
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
#endif
#if WEFT_GEMM_SUMMERS
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
#endif
  } else {
    /* ---------------- consumer warpgroups ---------------- */
    asm volatile("setmaxnreg.inc.sync.aligned.u32 " WEFT_GEMM_STR(WEFT_GEMM_CONSUMER_REGS) ";");
    const int cw = wg - 1;            /* 0 or 1 */
    const int wtid = tid & 127;       /* thread in its warpgroup */
    const int warp = wtid / 32, lane = tid & 31;
    /* this WG's part of the tile: 64 rows at row_off, WG_N cols at col_off */
    const int row_off = WEFT_GEMM_BM == 128 ? cw * 64 : 0;
    const int col_off = WEFT_GEMM_BM == 128 ? 0 : cw * WEFT_GEMM_WG_N;
    float d[WEFT_GEMM_WG_N / 2];
#if WEFT_GEMM_AR_OWN && !WEFT_GEMM_AR_COLS
    int ar_seen = 0; /* AR_OWN: the segment's chunks seen landed from every peer */
#endif
#if WEFT_GEMM_STORERS
    /* store rounds handed to this warpgroup's storer (see WEFT_GEMM_STORERS) */
    const u32 st_full = aux + 16 * cw, st_free = st_full + 8;
    u32 st_seq = 0;
#endif
    int stage = 0;
    u32 phase = 0;
#if WEFT_GEMM_CLUSTER_K > 1
    u32 red_round = 0; /* tiles reduced so far: the red_full / red_empty phase */
#endif
    for (int p = cluster_id; p < num_work; p += num_clusters) {
      weft_gemm_work_t w = weft_gemm_decode(p, M, N, K, order_table, order_rotate_m, k_splits,
                                            first_tail, cta_rank);
      int prev = -1;
      for (int kb = w.kb0; kb < w.kb1; kb++) {
        weft_gemm_mbar_wait(bar_full + 8 * stage, phase);
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

      /* Fragment of m64nNk16's fp32 D held by this thread: d[4j + 2h + e] is row
       * 16*warp + lane/4 + 8h, col 8j + 2*(lane%4) + e of the WG's 64 x WG_N block. */
#if WEFT_GEMM_SPLITK
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
#else
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
#else
          weft_gemm_named_sync(2 + cw, 128);
          if (wtid == 0) {
#pragma unroll
            for (int bi = 0; bi < WEFT_GEMM_EPI_BUFS; bi++) {
              const int box = round * WEFT_GEMM_EPI_BUFS + bi;
              weft_gemm_tma_store(&tm_c, stg + bi * 8192,
                                  w.n0 + col_off + WEFT_GEMM_BOX_COL(box), w.m0 + row_off);
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
#endif
    }
#if !WEFT_GEMM_SPLITK && !WEFT_GEMM_STORERS
    /* smem must outlive the last TMA store's read of it (with the notify hook the storers
     * issue the stores, and wait for them before they leave) */
    if (wtid == 0) weft_gemm_bulk_wait0();
#endif
#if WEFT_GEMM_CLUSTER_K > 1
    /* the CTA must outlive the peers' arrivals on red_empty for its last tile (their reads of
     * what it sent; what they sent it has arrived, red_full said so) */
    if (red_round > 0) weft_gemm_mbar_wait_cluster(red_empty, (red_round - 1) & 1);
#endif
    if (tid == 128) WEFT_GEMM_STAMP(3);
  }

#if WEFT_GEMM_HOOK_WAIT
  if (0) {
  weft_gemm_timed_out:
    weft_gemm_report(error, to_status, to_tile, to_index, to_index, wait_expected, to_observed);
    asm volatile("trap;");
  }
#else
  (void)error;
#endif
#undef WEFT_GEMM_IS_OWN
#undef WEFT_GEMM_AR_IS_OWN
}

/* Zeroes n u32 counters (split-K counters before their first use). */
extern "C" __global__ void weft_gemm_zero_counters(u32 *p, int n) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) p[i] = 0;
}
