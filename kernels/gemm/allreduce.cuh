/*
 * kernels/gemm/allreduce.cuh — the device functions of the GEMM + AllReduce epilogues in weft's
 * GEMM (kernels/gemm/gemm.cu: WEFT_GEMM_AR_OWN and its forms WEFT_GEMM_AR_SUMMERS and
 * WEFT_GEMM_AR_COLS, whose defines say what each does): the waits for the peers' partials, with
 * the report of a timeout (kernels/gemm/hooks.cuh); the next rank of the pushes; AR_COLS's
 * release of a stored tile; the addition of the peers' partials to a consumer's accumulators;
 * and the summers' wait and sum of an own sub-tile. WEFT_GEMM_AR_LATE(p) names the kernel's
 * num_clusters and num_work.
 *
 * Expects nothing before it: includes kernels/gemm/config.cuh (the defines), kernels/gemm/ptx.cuh,
 * kernels/gemm/hooks.cuh and kernels/gemm/store.cuh.
 */
#ifndef WEFT_KERNELS_GEMM_ALLREDUCE_CUH
#define WEFT_KERNELS_GEMM_ALLREDUCE_CUH

#include "kernels/gemm/config.cuh"
#include "kernels/gemm/ptx.cuh"
#include "kernels/gemm/hooks.cuh"
#include "kernels/gemm/store.cuh"

/* AR_OWN: whether the consumer adds the peers' partials of an own tile of work item p (and its
 * storer stores the sums into every rank's C), rather than the summers: the grid's last round */
#define WEFT_GEMM_AR_LATE(p) (!WEFT_GEMM_AR_SUMMERS || (p) + num_clusters >= num_work)

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

/* AR_OWN: d (this thread's fragment of a 64 x WG_N warpgroup block whose fragment row 0 is staged
 * row r0 and column 0 staged column col0, of rows of ld elements; columns from `cols` on are past
 * C; see the fragment layout in weft_gemm's consumer) += every peer's partial of the same elements,
 * ranks in order, so that the sum has the same bits on every rank that stores it. One peer at a
 * time, 8 column groups' loads (16 registers) in flight beside the 128 accumulators of a 256-column
 * block: more spill, and 3 peers x 8 in flight were no faster
 * (bench/results/2026-11-27-tp-overlap-h200x4.md, "Taken apart by probes"); .cg (past L1): the
 * copies land during the kernel. */
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

#endif
