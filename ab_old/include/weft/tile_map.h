/*
 * weft/tile_map.h — which signal and which rank a tile belongs to (TileLink's tile mappings),
 * shared by host C and device code so that the host builds and the CPU tests check exactly what
 * kernels compute.
 *
 * A mapping answers, for tile id t: which signal covers it, which rank owns it (produces it, or
 * must receive it), and which rows of the partitioned matrix it spans.
 * Static (affine) mapping: signal t / tiles_per_signal + signal_offset, owner t / tiles_per_rank,
 * rows [t * rows_per_tile, + rows_per_tile) cut at total_rows. Dynamic mapping: per-tile lookup
 * tables in device memory (built at run time, e.g. from a MoE router's output):
 * signal_of_tile[t], rank_of_tile[t], and optionally row_of_tile[t] / rows_of_tile[t] (a MoE tile
 * at the end of an expert's segment is short). A field the caller did not set is 0/NULL; the row
 * queries then answer 0.
 *
 * The struct is plain data (no host pointers inside a device-built table): pass it to a kernel
 * by value, or keep it in device memory; host and device see the same layout.
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
  int rows_per_tile;         /* rows of a (full) tile; affine row rule */
  int reserved_;
  long long total_rows;      /* affine row rule: the last tile is cut here (0: no cut) */
  const int *row_of_tile;    /* table (optional): first row of tile t */
  const int *rows_of_tile;   /* table (optional): rows of tile t */
} weft_tile_map_t;

WEFT_HD weft_tile_map_t weft_tile_map_affine(int tiles_per_signal, int signal_offset,
                                             int tiles_per_rank) {
  weft_tile_map_t m = {WEFT_TILE_MAP_AFFINE, tiles_per_signal, signal_offset, tiles_per_rank, 0, 0,
                       0, 0, 0, 0, 0};
  return m;
}

WEFT_HD weft_tile_map_t weft_tile_map_table(const int *signal_of_tile, const int *rank_of_tile) {
  weft_tile_map_t m = {WEFT_TILE_MAP_TABLE, 1, 0, 1, signal_of_tile, rank_of_tile, 0, 0, 0, 0, 0};
  return m;
}

/* m with a row rule: tile t spans rows [t * rows_per_tile, + rows_per_tile), the last one cut at
 * total_rows (0: no cut); where row_of_tile / rows_of_tile are not NULL they override the rule
 * per tile (device memory, like the other tables). */
WEFT_HD weft_tile_map_t weft_tile_map_with_rows(weft_tile_map_t m, int rows_per_tile,
                                                long long total_rows, const int *row_of_tile,
                                                const int *rows_of_tile) {
  m.rows_per_tile = rows_per_tile;
  m.total_rows = total_rows;
  m.row_of_tile = row_of_tile;
  m.rows_of_tile = rows_of_tile;
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

/* First row of tile t. */
WEFT_HD long long weft_tile_row0(const weft_tile_map_t *m, int t) {
  return m->row_of_tile ? (long long)m->row_of_tile[t] : (long long)t * m->rows_per_tile;
}

/* Rows of tile t (fewer than rows_per_tile for a cut last tile, 0 past the end). */
WEFT_HD int weft_tile_rows(const weft_tile_map_t *m, int t) {
  if (m->rows_of_tile) return m->rows_of_tile[t];
  long long r0 = weft_tile_row0(m, t), end = r0 + m->rows_per_tile;
  if (m->total_rows > 0 && end > m->total_rows) end = m->total_rows;
  return end > r0 ? (int)(end - r0) : 0;
}

#endif
