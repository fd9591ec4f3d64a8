/*
 * kernels/moe.cu — an MoE layer's routing plan on the GPU (src/ops/moe.c launches these;
 * kernels/moe.h says what the plan is): from the router's topk_ids [tokens, topk], every expert's
 * entries counted, laid out in rows padded per expert to the grouped GEMM's tile height, and every
 * tile row tagged with its expert (the dynamic tile mapping of TileLink, §4.1); then the tokens'
 * activations gathered into that row order. Three small kernels and the gather, no host sync in
 * between, so a CUDA graph captures the whole routing; no atomics decide a row, so the same ids
 * give the same plan.
 *
 *   weft_moe_count   a block a chunk of entries (kernels/moe.h, weft_moe_chunk): its counts per
 *                    expert, kept for the chunk and added into counts[] (zeroed by the
 *                    launcher); an id outside [0, experts) is left out and reported (first_bad,
 *                    and the error record: WEFT_DEVICE_ERROR_INVALID)
 *   weft_moe_plan    one block: the padded offsets (a scan), each chunk's first row of each
 *                    expert, the tile table, -1 in every padding row and past the rows in use; no
 *                    tile rows at all after a bad id, so that the GEMMs that follow compute and
 *                    write nothing
 *   weft_moe_place   a block a chunk: its entries in order, each the next row of its expert, so
 *                    that every expert's rows hold its entries in entry order
 *   weft_moe_gather  grid: row r of out = the token row of entry row_entry[r] (zeros in padding)
 *   weft_moe_silu_mul, weft_moe_combine   the unfused steps of a layer between and after its
 *                    grouped GEMMs: the gated activation, and the top-k weighted sum into token order
 *   weft_moe_arrival_order   AllGather + MoE's tile order: the plan's tiles by the arrival of their
 *                    tokens' ranks
 */
#include <weft/device.cuh>

#include "kernels/moe.h"

/* Block b counts chunk b's entries [b * chunk, +chunk) per expert into chunk_counts[b][experts]
 * (every expert, zeros too) and adds them into counts[] (zeroed by the launcher). */
extern "C" __global__ void weft_moe_count(const int *ids, long long entries, long long chunk,
                                          int experts, int *counts, int *chunk_counts,
                                          int *first_bad) {
  extern __shared__ int hist[];
  for (int e = threadIdx.x; e < experts; e += blockDim.x) hist[e] = 0;
  __syncthreads();
  const long long i0 = blockIdx.x * chunk, i1 = i0 + chunk < entries ? i0 + chunk : entries;
  for (long long i = i0 + threadIdx.x; i < i1; i += blockDim.x) {
    int e = ids[i];
    if ((unsigned)e < (unsigned)experts) {
      atomicAdd(&hist[e], 1);
    } else if (atomicCAS(first_bad, -1, (int)i) == -1) {
      weft_error_record(WEFT_DEVICE_ERROR_INVALID, "moe_route: expert id", -1, WEFT_CMP_LT,
                        (weft_u64_t)i, (weft_u64_t)experts, (weft_u64_t)(long long)e);
    }
  }
  __syncthreads();
  for (int e = threadIdx.x; e < experts; e += blockDim.x) {
    chunk_counts[(long long)blockIdx.x * experts + e] = hist[e];
    if (hist[e]) atomicAdd(&counts[e], hist[e]);
  }
}

/* One block: the padded offsets (a scan), the tile table, -1 in every padding row and past the
 * rows in use, and chunk_counts turned into each chunk's first row of each expert. */
extern "C" __global__ void __launch_bounds__(WEFT_MOE_PLAN_THREADS)
weft_moe_plan(const int *counts, int experts, int tile_rows, long long max_rows, int chunks,
              const int *first_bad, int *offsets, int *chunk_counts, int *tile_expert, int *tiles,
              int *row_entry) {
  __shared__ long long part[WEFT_MOE_PLAN_THREADS];
  const int t = threadIdx.x, n = blockDim.x;
  /* each thread a run of experts; an inclusive scan of the runs' padded rows over the block */
  int per = (experts + n - 1) / n, e0 = t * per, e1 = e0 + per < experts ? e0 + per : experts;
  long long mine = 0;
  for (int e = e0; e < e1; e++) mine += weft_moe_padded(counts[e], tile_rows);
  part[t] = mine;
  __syncthreads();
  for (int off = 1; off < n; off *= 2) {
    long long v = t >= off ? part[t - off] : 0;
    __syncthreads();
    part[t] += v;
    __syncthreads();
  }
  const long long total = part[n - 1];
  long long row = part[t] - mine;
  for (int e = e0; e < e1; e++) {
    long long pad = weft_moe_padded(counts[e], tile_rows);
    offsets[e] = (int)row;
    /* the chunks' bases: expert e's rows before chunk c hold the earlier chunks' entries */
    int base = (int)row;
    for (int c = 0; c < chunks; c++) {
      int *cc = chunk_counts + (long long)c * experts + e, v = *cc;
      *cc = base;
      base += v;
    }
    for (long long r = row / tile_rows; r < (row + pad) / tile_rows; r++) tile_expert[r] = e;
    for (long long r = row + counts[e]; r < row + pad; r++) row_entry[r] = -1;
    row += pad;
  }
  if (t == 0) {
    offsets[experts] = (int)total;
    *tiles = *first_bad >= 0 ? 0 : (int)(total / tile_rows);
  }
  for (long long r = total + t; r < max_rows; r += n) row_entry[r] = -1;
  for (long long r = total / tile_rows + t; r < max_rows / tile_rows; r += n) tile_expert[r] = -1;
}

/* Block b places chunk b's entries in entry order: a warp at a time, each lane's row its
 * expert's next one (from the chunk's base) plus the lanes before it with the same expert. */
extern "C" __global__ void weft_moe_place(const int *ids, long long entries, long long chunk,
                                          int experts, const int *chunk_base, int *row_entry,
                                          int *entry_row) {
  extern __shared__ int next[];
  for (int e = threadIdx.x; e < experts; e += blockDim.x)
    next[e] = chunk_base[(long long)blockIdx.x * experts + e];
  __syncthreads();
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
  const long long i0 = blockIdx.x * chunk, i1 = i0 + chunk < entries ? i0 + chunk : entries;
  for (long long pass = i0; pass < i1; pass += blockDim.x) {
    for (int w = 0; w < warps; w++) {
      if (warp == w) {
        const long long i = pass + threadIdx.x;
        const int e = i < i1 ? ids[i] : -1, valid = (unsigned)e < (unsigned)experts;
        const unsigned same = __match_any_sync(0xffffffffu, valid ? e : -1);
        int r = -1;
        if (valid) {
          r = next[e] + __popc(same & ((1u << lane) - 1u));
          row_entry[r] = (int)i;
        }
        if (i < i1) entry_row[i] = r;
        __syncwarp();
        if (valid && lane == __ffs(same) - 1) next[e] += __popc(same);
      }
      __syncthreads();
    }
  }
}

/* AllGather + MoE's tile order (one block): the plan's rows in use as tiles of bm rows, each
 * keyed by the step at which the last of its tokens' ranks arrives at rank `me` (rank q's tokens
 * are entries [q * per_rank, (q + 1) * per_rank); q's arrive at step (q - me) mod world: its own
 * at 0, then me + 1, me + 2, ...); order[] = the tiles sorted by key, stably (keys: scratch of as
 * many ints). A tile of padding only is keyed 0. */
extern "C" __global__ void __launch_bounds__(WEFT_MOE_PLAN_THREADS)
weft_moe_arrival_order(const int *row_entry, const int *tiles, int tile_rows, int bm,
                       long long per_rank, int me, int world, int *keys, int *order) {
  __shared__ int next[WEFT_MAX_LOCAL_RANKS];
  const int n = (int)((long long)*tiles * tile_rows / bm);
  for (int k = threadIdx.x; k < world; k += blockDim.x) next[k] = 0;
  __syncthreads();
  for (int t = threadIdx.x; t < n; t += blockDim.x) {
    int r0 = t * bm, r1 = r0 + bm - 1, key = 0;
    while (r1 >= r0 && row_entry[r1] < 0) r1--;
    if (r1 >= r0) { /* the tile's ranks are q0..q1 (its rows are one expert's, in token order) */
      const int q0 = (int)(row_entry[r0] / per_rank), q1 = (int)(row_entry[r1] / per_rank);
      key = q1 < me ? q1 - me + world : q0 >= me ? q1 - me : world - 1;
    }
    keys[t] = key;
    atomicAdd(&next[key], 1);
  }
  __syncthreads();
  if (threadIdx.x == 0) /* each key's first place */
    for (int k = 0, at = 0; k < world; k++) {
      const int c = next[k];
      next[k] = at;
      at += c;
    }
  __syncthreads();
  if (threadIdx.x >= 32) return;
  /* one warp places the tiles in order, each after the earlier ones of its key */
  const int lane = threadIdx.x;
  for (int base = 0; base < n; base += 32) {
    const int t = base + lane, key = t < n ? keys[t] : -1;
    const unsigned same = __match_any_sync(0xffffffffu, key);
    if (t < n) order[next[key] + __popc(same & ((1u << lane) - 1u))] = t;
    __syncwarp();
    if (t < n && lane == __ffs(same) - 1) next[key] += __popc(same);
    __syncwarp();
  }
}

/* Rows of `row_bytes` bytes (a multiple of 16, as are x and out) in 16-byte pieces; rows from
 * tiles[0] * tile_rows on are left as they are (no GEMM reads them). */
extern "C" __global__ void weft_moe_gather(const uint4 *x, const int *row_entry, const int *tiles,
                                           int tile_rows, int topk, long long row_bytes,
                                           uint4 *out) {
  long long pieces = row_bytes / 16, rows = (long long)*tiles * tile_rows;
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < rows * pieces;
       i += (long long)gridDim.x * blockDim.x) {
    long long r = i / pieces, c = i - r * pieces;
    int entry = row_entry[r];
    uint4 v = {0u, 0u, 0u, 0u};
    if (entry >= 0) v = x[(long long)(entry / topk) * pieces + c];
    out[i] = v;
  }
}

/* ---- the unfused steps of an MoE layer between and after its grouped GEMMs ---------------- */

/* 16-bit floats (bf16: 0, fp16: 1) and fp32 (2), to and from fp32 */
static __device__ __forceinline__ float moe_ld(const void *p, weft_u64_t i, int t) {
  if (t == 2) return ((const float *)p)[i];
  unsigned short h = ((const unsigned short *)p)[i];
  if (t == 0) return __uint_as_float((unsigned)h << 16);
  float f;
  asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h));
  return f;
}
static __device__ __forceinline__ void moe_st(void *p, weft_u64_t i, int t, float v) {
  if (t == 2) {
    ((float *)p)[i] = v;
  } else if (t == 0) {
    unsigned short h;
    asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(h) : "f"(v));
    ((unsigned short *)p)[i] = h;
  } else {
    unsigned short h;
    asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(v));
    ((unsigned short *)p)[i] = h;
  }
}

/* The gated activation of the first grouped GEMM's output: out[r, c] = silu(gu[r, c]) *
 * gu[r, inter + c] (gate columns first, up columns after), in fp32, for the plan's rows in use
 * (tiles[0] * tile_rows); type: 0 bf16, 1 fp16, 2 fp32, for both. */
extern "C" __global__ void weft_moe_silu_mul(const void *gu, const int *tiles, int tile_rows,
                                             long long inter, int type, void *out) {
  long long rows = (long long)*tiles * tile_rows;
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < rows * inter;
       i += (long long)gridDim.x * blockDim.x) {
    long long r = i / inter, c = i - r * inter;
    float g = moe_ld(gu, (weft_u64_t)(r * 2 * inter + c), type);
    float u = moe_ld(gu, (weft_u64_t)(r * 2 * inter + inter + c), type);
    moe_st(out, (weft_u64_t)i, type, weft_moe_silu_mul1(g, u));
  }
}

/* The top-k combine: out[t, c] = sum over slots j in order of weights[t, j] * y[entry_row[t * topk
 * + j], c], in fp32 (an entry left out, -1, adds nothing); y and out of type `type`, weights of
 * `wtype` (0 bf16, 1 fp16, 2 fp32). */
extern "C" __global__ void weft_moe_combine(const void *y, const int *entry_row, const void *weights,
                                            int wtype, long long tokens, int topk, long long hidden,
                                            int type, void *out) {
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < tokens * hidden;
       i += (long long)gridDim.x * blockDim.x) {
    long long t = i / hidden, c = i - t * hidden;
    float s = 0.f;
    for (int j = 0; j < topk; j++) {
      int r = entry_row[t * topk + j];
      if (r >= 0)
        s += moe_ld(weights, (weft_u64_t)(t * topk + j), wtype) *
             moe_ld(y, (weft_u64_t)((long long)r * hidden + c), type);
    }
    moe_st(out, (weft_u64_t)i, type, s);
  }
}
