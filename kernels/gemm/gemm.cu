/*
 * kernels/gemm/gemm.cu — weft's Hopper (sm_90a) GEMM: C[M,N] = A[M,K] * op(B), bf16/fp16
 * inputs, fp32 accumulation, bf16/fp16/fp32 output, with the overlap hooks (per-tile wait,
 * per-tile notify, tile-order table, SM budget) compiled in only when asked for. Compiled at run
 * time by NVRTC (--gpu-architecture=sm_90a); specialisations are chosen by -D defines
 * (kernels/gemm/config.cuh). C-style CUDA C, no system or CUDA headers: every Hopper feature is
 * inline PTX.
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
 * LAUNCH CONTRACT (for src/ops/gemm/: specialisation.c compiles and loads a specialisation,
 * launch.c encodes the tensor maps and launches it)
 * ------------------------------------------------------------------------------------------
 * Entry points (extern "C"):
 *   weft_gemm               the GEMM (one per -D specialisation)
 *   weft_gemm_zero_counters optional helper: zero `n` u32 counters (split-K counters start at 0
 *                           and are reset to 0 by the kernel itself after each use)
 *
 * Defines: kernels/gemm/config.cuh (the -D contract).
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
 *  39  const int *group_expert          GROUPED only (the kernels without it have 39 parameters,
 *  40  const int *group_tiles           and a launch may pass these three anyway): the routing
 *  41  int group_rows                   plan's tile-row experts, its tile-row count (device
 *                                       memory) and its tile height (kernels/moe.h)
 *  42  const int *row_entry             COMBINE and A_GATHER only (passed to every kernel, as
 *  43  const void *combine_weights      39-41): the plan's row -> entry table, COMBINE's routing
 *  44  int topk                         weights [tokens, topk] and topk (kernels/moe.h)
 *  45  const void *gather_a             A_GATHER only (passed to every kernel): the tokens A's
 *  46  long long gather_lda             rows are gathered from, and their row stride (elements)
 *  47  const int *group_order           GROUP_WAIT only (passed to every kernel): the tile rows
 *                                       in the order to compute them (weft_moe_arrival_order)
 *
 * Tensor maps (cuTensorMapEncodeTiled, rank 2, innermost dimension first, 128B swizzle on all,
 * interleave none, L2 promotion 256B (128B where the row stride is no multiple of 256 bytes),
 * OOB fill none (zeros)):
 *   tm_a: dims {K, M}, strides {K*2}, box {64, A_ROWS}; A_KMAJOR=0: dims {M, K}, strides
 *         {M*2}, box {64, 64}
 *   tm_b: B_KMAJOR=1: dims {K, N}, strides {K*2}, box {64, BN/CLUSTER_M}
 *         B_KMAJOR=0: dims {N, K}, strides {N*2}, box {64, 64}
 *         GROUPED: the same with a third dimension, the experts (stride: one expert's matrix),
 *         box 1 along it
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
 * Configurations: the launcher's heuristic (src/ops/gemm/config.c, weft_gemm_config_choose;
 * measured on H100, dev/gemm/README.md) picks them. Large M: BM=128, BN 256 / 192 / 128 by wave
 * quantisation, CLUSTER_M=2, TAIL where the launch splits a last wave under half full. Decode
 * (M <= 128): BM=64 or 128 tiles, SPLITK with k_splits from the SM count (2, 4 or 8 as a
 * cluster reduction), A_ROWS for M <= 32, 8 to 16 stages.
 * Every wait/notify/table/SM-budget variant is the same kernel with the hook defines on.
 * ptxas (CUDA 13.0 NVRTC): 168 registers at entry, no spills, no local memory, no
 * C7508/C7510/C7511/C7515 for every configuration the heuristic picks.
 *
 * Files. The kernel's parts are headers of kernels/gemm/, each saying at its top what it provides
 * and what it expects before it; the library embeds them and offers them to NVRTC under these
 * names (src/jit/nvrtc.c), so the includes name them in full (an offline compile: -I include
 * -I <the repository's root>).
 *   config.cuh           the -D contract: every define, its default, the refused combinations
 *   ptx.cuh, mbarrier.cuh, cluster.cuh, tma.cuh, wgmma.cuh
 *                        PTX wrappers that read no define, for any kernel
 *   wgmma_acc.cuh        the m64nNk16 instruction of the specialisation's warpgroup width
 *   tile.cuh             work items to tiles and k-blocks (weft_gemm_decode)
 *   hooks.cuh            the notify, and the waits' signal spin and error report
 *   store.cuh, ll.cuh, allreduce.cuh
 *                        the epilogues' device functions: C's stores from registers and the
 *                        split partials; the LL lines; GEMM + AllReduce's waits and sums
 * and the parts of weft_gemm's body below, each included where it runs:
 *   mainloop_load.cuh    producer thread: a work item's TMA loads into the ring
 *   mainloop_mma.cuh     consumer warpgroup: a work item's wgmmas from the ring
 *   epilogue_direct.cuh  consumer warpgroup: the direct-store epilogue (SPLITK: unsplit, split-K
 *                        through the workspace or a cluster, LL)
 *   epilogue_tma.cuh     consumer warpgroup: the TMA-store epilogue (the split tail's sum, AR_OWN's
 *                        additions, the staging boxes, the stores or their hand-off)
 *   epilogue_storers.cuh producer warpgroup: the storers (the notify hook's stores and releases;
 *                        SCATTER's, AR_OWN's and AR_COLS's stores)
 *   epilogue_summers.cuh producer warpgroup: AR_SUMMERS's sums
 */
#include "kernels/gemm/order.h"
#include "weft/state.h"

#include "kernels/gemm/config.cuh"
#include "kernels/gemm/ptx.cuh"
#include "kernels/gemm/mbarrier.cuh"
#include "kernels/gemm/cluster.cuh"
#include "kernels/gemm/tma.cuh"
#include "kernels/gemm/wgmma.cuh"
#include "kernels/gemm/wgmma_acc.cuh"
#include "kernels/gemm/store.cuh"
#include "kernels/gemm/ll.cuh"
#include "kernels/gemm/hooks.cuh"
#include "kernels/gemm/tile.cuh"
#include "kernels/gemm/allreduce.cuh"
#include "kernels/gemm/gated.h"
#include "kernels/moe.h"

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
              char *ar_c, const __grid_constant__ weft_gemm_tmap_t tm_a_tail, int a_tail_rows
#if WEFT_GEMM_GROUPED
              , const int *group_expert, const int *group_tiles, int group_rows
#endif
#if WEFT_GEMM_COMBINE || WEFT_GEMM_A_GATHER
              , const int *row_entry, const void *combine_weights, int topk
#endif
#if WEFT_GEMM_A_GATHER
              , const void *gather_a, long long gather_lda
#endif
#if WEFT_GEMM_GROUP_WAIT
              , const int *group_order
#endif
    ) {
  extern __shared__ __align__(1024) unsigned char weft_gemm_dyn_smem[];
#if WEFT_GEMM_GROUPED
  /* the plan's rows in use (its kernels ran before this launch, which is not programmatic) */
  {
    const int in_use = *group_tiles * group_rows;
    M = in_use < M ? in_use : M;
  }
#endif
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
      /* (A_GATHER: thread 0's expect_tx and the 128 loaders' copies) */
      weft_gemm_mbar_init(bar_full + 8 * s, WEFT_GEMM_A_GATHER ? 1 + 128 : 1);
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
  /* Launched for programmatic dependent launch (src/ops/gemm/launch.c), this grid may have
   * started while the stream's previous kernel still ran: nothing above touched global memory,
   * and nothing below may before that kernel has completed and its writes are visible. */
  asm volatile("griddepcontrol.wait;" ::: "memory");

#if WEFT_GEMM_HOOK_WAIT
  int to_tile = 0, to_index = 0;
  unsigned to_status = 0;
  u64 to_observed = 0;
#endif
  if (wg == 0) {
    /* ---------------- producer warpgroup: one thread issues every TMA load ---------------- */
    asm volatile("setmaxnreg.dec.sync.aligned.u32 " WEFT_GEMM_STR(WEFT_GEMM_PRODUCER_REGS) ";");
    /* (A_GATHER: the whole warpgroup loads A; thread 0 as ever B) */
    if (tid == 0 || WEFT_GEMM_A_GATHER) {
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
#if WEFT_GEMM_GROUP_WAIT
        weft_gemm_group_reorder(&w, group_order, N);
#endif
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
        /* the mainloop's producer side: the item's loads into the ring */
#include "kernels/gemm/mainloop_load.cuh"
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
     * R2UR before each load); why one order is faster is not settled (dev/gemm/README.md). */
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
    /* the storers: threads 32 and 64 store the consumers' boxes and notify */
#include "kernels/gemm/epilogue_storers.cuh"
#endif
#if WEFT_GEMM_SUMMERS
    /* GEMM + AllReduce's summers: lanes 1-31 of the storers' warps */
#include "kernels/gemm/epilogue_summers.cuh"
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
    /* store rounds handed to this warpgroup's storer (kernels/gemm/epilogue_storers.cuh) */
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
#if WEFT_GEMM_GROUP_WAIT
      weft_gemm_group_reorder(&w, group_order, N);
#endif
      /* the mainloop's consumer side: the item's wgmmas into d */
#include "kernels/gemm/mainloop_mma.cuh"

      /* Fragment of m64nNk16's fp32 D held by this thread: d[4j + 2h + e] is row
       * 16*warp + lane/4 + 8h, col 8j + 2*(lane%4) + e of the WG's 64 x WG_N block. */
#if WEFT_GEMM_SPLITK
      /* the direct-store epilogue: C from registers, splits reduced first */
#include "kernels/gemm/epilogue_direct.cuh"
#else
      /* the TMA-store epilogue: staging boxes, then TMA stores */
#include "kernels/gemm/epilogue_tma.cuh"
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
