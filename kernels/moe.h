/*
 * kernels/moe.h — the arithmetic of an MoE routing plan, shared by host C (src/ops/moe.c, the
 * CPU tests) and the routing kernels (kernels/moe.cu). No system headers: it compiles under
 * NVRTC as it is.
 *
 * A routing plan lays the router's choices out as a grouped GEMM reads them (the dynamic tile
 * mapping of TileLink, §4.1): the `entries = tokens * topk` pairs (token t, its slot j), entry
 * t * topk + j choosing expert topk_ids[entry], become rows of one matrix in which every expert's
 * rows are contiguous, in expert order, and padded with empty rows to a multiple of tile_rows, so
 * that every tile row of tile_rows rows belongs to exactly one expert and the grouped GEMM needs
 * no per-row expert test. Expert e's rows are [offsets[e], offsets[e] + counts[e]), its padding
 * up to offsets[e + 1] = offsets[e] + round_up(counts[e], tile_rows); tile row i belongs to
 * expert tile_expert[i]. Within an expert the entries are in entry order (token by token): the
 * plan of the same ids is the same every time, and the rows of tokens gathered rank after rank
 * (AllGather + MoE) come rank after rank within each expert.
 */
#ifndef WEFT_KERNELS_MOE_H
#define WEFT_KERNELS_MOE_H

#if defined(__CUDACC__) || defined(__CUDACC_RTC__)
#define WEFT_MOE_HD static __host__ __device__ __forceinline__
#else
#define WEFT_MOE_HD static inline
#endif

/* weft_moe_plan's block (kernels/moe.cu: one block builds the whole plan). */
#define WEFT_MOE_PLAN_THREADS 512

/* The tile heights a plan pads to: the grouped GEMM's tile rows. */
#define WEFT_MOE_TILE_ROWS_MIN 16
#define WEFT_MOE_TILE_ROWS_MAX 256

/* Entries per chunk of the placement (kernels/moe.cu): each chunk's block counts its entries
 * per expert, and places them in order from its experts' bases (the rows its chunk's
 * predecessors left), so that every expert's rows hold its entries in entry order. At least
 * WEFT_MOE_CHUNK_MIN entries a chunk, and at most WEFT_MOE_CHUNKS_MAX chunks: the workspace holds
 * a count per chunk and expert. */
#define WEFT_MOE_CHUNK_MIN 1024
#define WEFT_MOE_CHUNKS_MAX 256
WEFT_MOE_HD long long weft_moe_chunk(long long entries) {
  long long per = (entries + WEFT_MOE_CHUNKS_MAX - 1) / WEFT_MOE_CHUNKS_MAX;
  per = (per + WEFT_MOE_CHUNK_MIN - 1) / WEFT_MOE_CHUNK_MIN * WEFT_MOE_CHUNK_MIN;
  return per > WEFT_MOE_CHUNK_MIN ? per : WEFT_MOE_CHUNK_MIN;
}
WEFT_MOE_HD long long weft_moe_chunks(long long entries) {
  long long per = weft_moe_chunk(entries);
  return (entries + per - 1) / per;
}

/* The most rows a plan of these sizes can use: every entry once, plus at most tile_rows - 1
 * padding rows for each expert that holds an entry (at most min(experts, entries) of them). The
 * plan's buffers are sized by it, whatever the routing. */
WEFT_MOE_HD long long weft_moe_max_rows(long long tokens, int topk, int experts, int tile_rows) {
  long long entries = tokens * topk;
  long long holders = entries < experts ? entries : experts;
  return entries + holders * (tile_rows - 1);
}

/* The most tile rows of such a plan. */
WEFT_MOE_HD long long weft_moe_max_tiles(long long tokens, int topk, int experts, int tile_rows) {
  return weft_moe_max_rows(tokens, topk, experts, tile_rows) / tile_rows;
}

/* Rows expert e takes for `count` entries. */
WEFT_MOE_HD long long weft_moe_padded(long long count, int tile_rows) {
  return (count + tile_rows - 1) / tile_rows * tile_rows;
}

#if defined(__CUDACC__) || defined(__CUDACC_RTC__)
/* The gated activation of an MoE layer's experts, silu(gate) * up, in fp32: weft_moe_silu_mul's
 * and the grouped GEMM's gated epilogue's (kernels/gemm/config.cuh, WEFT_GEMM_GATED). */
static __device__ __forceinline__ float weft_moe_silu_mul1(float gate, float up) {
  return gate / (1.f + __expf(-gate)) * up;
}
#endif

#endif /* WEFT_KERNELS_MOE_H */
