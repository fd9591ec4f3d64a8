/*
 * weft/tile_map.h — which signal and which rank a tile belongs to (TileLink's tile mappings),
 * shared by host C and device code so that the host builds and the CPU tests check exactly what
 * kernels compute.
 *
 * Static (affine) mapping: tile t -> signal t / tiles_per_signal + signal_offset, owner rank
 * t / tiles_per_rank. Dynamic mapping: per-tile lookup tables in device memory (built at run
 * time, e.g. from a MoE router's output): signal_of_tile[t], rank_of_tile[t].
 */
#ifndef WEFT_TILE_MAP_H
#define WEFT_TILE_MAP_H

#if defined(__CUDACC__) || defined(__CUDACC_RTC__)
#define WEFT_HD static __host__ __device__ __forceinline__
#else
#define WEFT_HD static inline
#endif

#define WEFT_TILE_MAP_AFFINE 0
#define WEFT_TILE_MAP_TABLE 1

typedef struct weft_tile_map {
  int kind;             /* WEFT_TILE_MAP_AFFINE or WEFT_TILE_MAP_TABLE */
  int tiles_per_signal; /* affine */
  int signal_offset;    /* affine */
  int tiles_per_rank;   /* affine */
  const int *signal_of_tile; /* table, device memory */
  const int *rank_of_tile;   /* table, device memory */
} weft_tile_map_t;

WEFT_HD weft_tile_map_t weft_tile_map_affine(int tiles_per_signal, int signal_offset,
                                             int tiles_per_rank) {
  weft_tile_map_t m = {WEFT_TILE_MAP_AFFINE, tiles_per_signal, signal_offset, tiles_per_rank, 0, 0};
  return m;
}

WEFT_HD weft_tile_map_t weft_tile_map_table(const int *signal_of_tile, const int *rank_of_tile) {
  weft_tile_map_t m = {WEFT_TILE_MAP_TABLE, 1, 0, 1, signal_of_tile, rank_of_tile};
  return m;
}

/* The signal index that covers tile t. */
WEFT_HD int weft_tile_signal(const weft_tile_map_t *m, int t) {
  return m->kind == WEFT_TILE_MAP_TABLE ? m->signal_of_tile[t]
                                        : t / m->tiles_per_signal + m->signal_offset;
}

/* The rank that owns (produces, or must receive) tile t. */
WEFT_HD int weft_tile_rank(const weft_tile_map_t *m, int t) {
  return m->kind == WEFT_TILE_MAP_TABLE ? m->rank_of_tile[t] : t / m->tiles_per_rank;
}

#endif
