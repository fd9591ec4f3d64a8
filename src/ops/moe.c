/*
 * moe.c — weft_moe_route, weft_moe_gather, weft_moe_silu_mul and weft_moe_combine: argument
 * checks, the plan's workspace layout and the launches of kernels/moe.cu (see there for the kernels; kernels/moe.h for the plan's
 * arithmetic). Local to this GPU.
 */
#include "grouped.h"

#include <limits.h>

#include "../runtime/comm.h"
#include "../runtime/loader.h"
#include "../runtime/module.h"
#include "kernels/moe.h"

#define MOE_THREADS 512
#define MOE_ALIGN 256

weft_status_t weft_moe_init(weft_comm_t *comm) {
  weft_ops_t *o = comm->ops;
  WEFT_CHECK(weft_module_load_embedded(comm, "kernels/moe.cu", NULL, 0, &o->moe));
  WEFT_CHECK(weft_module_get_kernel(o->moe, "weft_moe_count", &o->moe_count));
  WEFT_CHECK(weft_module_get_kernel(o->moe, "weft_moe_plan", &o->moe_plan));
  WEFT_CHECK(weft_module_get_kernel(o->moe, "weft_moe_place", &o->moe_place));
  WEFT_CHECK(weft_module_get_kernel(o->moe, "weft_moe_silu_mul", &o->moe_silu_mul));
  WEFT_CHECK(weft_module_get_kernel(o->moe, "weft_moe_combine", &o->moe_combine));
  WEFT_CHECK(weft_module_get_kernel(o->moe, "weft_moe_arrival_order", &o->moe_arrival_order));
  return weft_module_get_kernel(o->moe, "weft_moe_gather", &o->moe_gather);
}

void weft_moe_destroy(weft_comm_t *comm) {
  if (comm->ops->moe) weft_module_unload(comm->ops->moe);
}

/* The workspace, in order, each array MOE_ALIGN-aligned: counts [experts], offsets [experts + 1],
 * the chunks' counts and then bases [chunks][experts] (kernels/moe.h, weft_moe_chunks), first_bad
 * [1], tiles [1], tile_expert [max tiles], row_entry [max rows], entry_row [entries]; *bytes in all
 * (the offsets with base 0). */
typedef struct moe_layout {
  size_t counts, offsets, chunk_counts, first_bad, tiles, tile_expert, row_entry, entry_row, bytes;
} moe_layout_t;

static void moe_layout(int experts, long long max_rows, long long max_tiles, long long entries,
                       moe_layout_t *l) {
  size_t at = 0;
#define MOE_PLACE(field, count)                                                           \
  l->field = at;                                                                          \
  at += ((size_t)(count) * sizeof(int) + MOE_ALIGN - 1) / MOE_ALIGN * MOE_ALIGN;
  MOE_PLACE(counts, experts)
  MOE_PLACE(offsets, experts + 1)
  MOE_PLACE(chunk_counts, weft_moe_chunks(entries) * experts)
  MOE_PLACE(first_bad, 1)
  MOE_PLACE(tiles, 1)
  MOE_PLACE(tile_expert, max_tiles)
  MOE_PLACE(row_entry, max_rows)
  MOE_PLACE(entry_row, entries)
#undef MOE_PLACE
  l->bytes = at;
}

/* The size checks weft_moe_routing_size and weft_moe_route share (comm: where to record). */
static weft_status_t moe_sizes(weft_comm_t *comm, int tokens, int topk, int experts,
                               int tile_rows, long long *max_rows) {
  WEFT_ARG(comm, tokens >= 0, "tokens %d is negative", tokens);
  WEFT_ARG(comm, topk >= 1, "topk %d: at least 1", topk);
  WEFT_ARG(comm, experts >= 1 && experts <= WEFT_MOE_MAX_EXPERTS, "experts %d: 1 to %d", experts,
           WEFT_MOE_MAX_EXPERTS);
  WEFT_ARG(comm, topk <= experts, "topk %d exceeds the %d experts", topk, experts);
  WEFT_ARG(comm,
           tile_rows >= WEFT_MOE_TILE_ROWS_MIN && tile_rows <= WEFT_MOE_TILE_ROWS_MAX &&
               tile_rows % 16 == 0,
           "tile_rows %d: a multiple of 16 from %d to %d", tile_rows, WEFT_MOE_TILE_ROWS_MIN,
           WEFT_MOE_TILE_ROWS_MAX);
  *max_rows = weft_moe_max_rows(tokens, topk, experts, tile_rows);
  WEFT_ARG(comm, *max_rows <= INT_MAX, "%d tokens x %d experts each: %lld rows, more than a plan's "
           "%d", tokens, topk, *max_rows, INT_MAX);
  return WEFT_STATUS_SUCCESS;
}

weft_status_t weft_moe_routing_size(int tokens, int topk, int experts, int tile_rows,
                                    size_t *workspace_bytes, long long *max_rows) {
  WEFT_ARG(NULL, workspace_bytes, "workspace_bytes is NULL");
  long long rows = 0;
  WEFT_CHECK(moe_sizes(NULL, tokens, topk, experts, tile_rows, &rows));
  moe_layout_t l;
  moe_layout(experts, rows, rows / tile_rows, (long long)tokens * topk, &l);
  *workspace_bytes = l.bytes;
  if (max_rows) *max_rows = rows;
  return WEFT_STATUS_SUCCESS;
}

static unsigned moe_grid(const weft_comm_t *comm, long long items) {
  return weft_ops_gpu_grid(&comm->ops->gpu, (unsigned long long)(items + MOE_THREADS - 1) /
                                                MOE_THREADS);
}

weft_status_t weft_moe_route(weft_comm_t *comm, const int32_t *topk_ids, int tokens, int topk,
                             int experts, int tile_rows, void *workspace, size_t workspace_bytes,
                             weft_moe_routing_t *routing, weft_stream_t stream) {
  WEFT_CHECK(weft_comm_check(comm));
  long long max_rows = 0;
  WEFT_CHECK(moe_sizes(comm, tokens, topk, experts, tile_rows, &max_rows));
  long long entries = (long long)tokens * topk;
  WEFT_ARG(comm, topk_ids || entries == 0, "topk_ids is NULL");
  WEFT_ARG(comm, routing, "routing is NULL");
  moe_layout_t l;
  moe_layout(experts, max_rows, max_rows / tile_rows, entries, &l);
  WEFT_ARG(comm, workspace && ((uintptr_t)workspace % MOE_ALIGN) == 0,
           "workspace %p: device memory, %d-byte aligned", workspace, MOE_ALIGN);
  WEFT_ARG(comm, workspace_bytes >= l.bytes,
           "workspace of %zu bytes; this plan needs %zu (weft_moe_routing_size)", workspace_bytes,
           l.bytes);
  WEFT_CHECK(weft_comm_make_current(comm));
  char *w = workspace;
  weft_moe_routing_t r = {tokens, topk, experts, tile_rows, max_rows,
                          (int *)(w + l.counts), (int *)(w + l.offsets), (int *)(w + l.row_entry),
                          (int *)(w + l.entry_row), (int *)(w + l.tile_expert),
                          (int *)(w + l.tiles)};
  int *chunk_counts = (int *)(w + l.chunk_counts), *first_bad = (int *)(w + l.first_bad);
  weft_ops_t *o = comm->ops;
  CUstream s = (CUstream)stream;
  WEFT_CU(comm, cuMemsetD32Async((CUdeviceptr)(uintptr_t)r.counts, 0, (size_t)experts, s));
  WEFT_CU(comm, cuMemsetD32Async((CUdeviceptr)(uintptr_t)first_bad, 0xffffffffu, 1, s));

  /* a block a chunk (counts, then places), each with its experts' counters in shared memory */
  long long chunk = weft_moe_chunk(entries);
  int chunks = (int)weft_moe_chunks(entries);
  weft_launch_config_t cfg = WEFT_LAUNCH_CONFIG_INIT;
  cfg.grid[0] = (unsigned)chunks;
  cfg.block[0] = MOE_THREADS;
  cfg.shared_bytes = (size_t)experts * sizeof(int);
  void *count_args[] = {(void *)&topk_ids, &entries, &chunk, &experts, &r.counts, &chunk_counts,
                        &first_bad};
  if (chunks) WEFT_CHECK(weft_kernel_launch(o->moe_count, &cfg, count_args, stream));

  weft_launch_config_t one = WEFT_LAUNCH_CONFIG_INIT;
  one.block[0] = WEFT_MOE_PLAN_THREADS;
  void *plan_args[] = {&r.counts, &experts, &tile_rows, &max_rows, &chunks, &first_bad,
                       &r.offsets, &chunk_counts, &r.tile_expert, &r.tiles, &r.row_entry};
  WEFT_CHECK(weft_kernel_launch(o->moe_plan, &one, plan_args, stream));

  void *place_args[] = {(void *)&topk_ids, &entries, &chunk, &experts, &chunk_counts,
                        &r.row_entry, &r.entry_row};
  if (chunks) WEFT_CHECK(weft_kernel_launch(o->moe_place, &cfg, place_args, stream));
  *routing = r;
  return WEFT_STATUS_SUCCESS;
}

weft_status_t weft_moe_gather(weft_comm_t *comm, const weft_moe_routing_t *routing, const void *x,
                              int hidden, weft_dtype_t dtype, void *out, weft_stream_t stream) {
  WEFT_CHECK(weft_comm_check(comm));
  WEFT_ARG(comm, routing, "routing is NULL");
  size_t elem = weft_dtype_size(dtype);
  WEFT_ARG(comm, elem, "dtype %d is not a weft_dtype_t", (int)dtype);
  WEFT_ARG(comm, hidden >= 1, "hidden %d: at least 1", hidden);
  long long row_bytes = (long long)hidden * (long long)elem;
  WEFT_ARG(comm, row_bytes % 16 == 0,
           "a row of %d elements of %zu bytes is no multiple of 16 bytes", hidden, elem);
  WEFT_ARG(comm, out, "out is NULL");
  WEFT_ARG(comm, x || routing->tokens == 0, "x is NULL");
  WEFT_ARG(comm, ((uintptr_t)x % 16) == 0 && ((uintptr_t)out % 16) == 0,
           "x %p and out %p must be 16-byte aligned", x, out);
  size_t xb = (size_t)routing->tokens * (size_t)row_bytes;
  size_t ob = (size_t)routing->max_rows * (size_t)row_bytes;
  WEFT_ARG(comm, !x || (const char *)x + xb <= (const char *)out ||
                     (const char *)out + ob <= (const char *)x,
           "x and out overlap");
  WEFT_CHECK(weft_comm_make_current(comm));
  weft_launch_config_t cfg = WEFT_LAUNCH_CONFIG_INIT;
  /* the rows in use are known on the device only: a grid for the largest plan, each thread a
   * stride of 16-byte pieces */
  cfg.grid[0] = moe_grid(comm, routing->max_rows * (row_bytes / 16));
  cfg.block[0] = MOE_THREADS;
  int tile_rows = routing->tile_rows, topk = routing->topk;
  void *args[] = {(void *)&x, (void *)&routing->row_entry, (void *)&routing->tiles, &tile_rows,
                  &topk, &row_bytes, &out};
  return weft_kernel_launch(comm->ops->moe_gather, &cfg, args, stream);
}

/* kernels/moe.cu's code of a float type (0 bf16, 1 fp16, 2 fp32), or -1 */
static int moe_float(weft_dtype_t t) {
  return t == WEFT_DTYPE_BF16 ? 0 : t == WEFT_DTYPE_FP16 ? 1 : t == WEFT_DTYPE_FP32 ? 2 : -1;
}

weft_status_t weft_moe_silu_mul(weft_comm_t *comm, const weft_moe_routing_t *routing,
                                const void *gate_up, int inter, weft_dtype_t dtype, void *out,
                                weft_stream_t stream) {
  WEFT_CHECK(weft_comm_check(comm));
  WEFT_ARG(comm, routing, "routing is NULL");
  int type = moe_float(dtype);
  WEFT_ARG(comm, type >= 0, "dtype %d: bf16, fp16 or fp32", (int)dtype);
  WEFT_ARG(comm, inter >= 1, "inter %d: at least 1", inter);
  WEFT_ARG(comm, gate_up && out, "gate_up or out is NULL");
  size_t elem = weft_dtype_size(dtype);
  size_t in_b = (size_t)routing->max_rows * 2 * (size_t)inter * elem;
  size_t out_b = (size_t)routing->max_rows * (size_t)inter * elem;
  WEFT_ARG(comm, (const char *)gate_up + in_b <= (const char *)out ||
                     (const char *)out + out_b <= (const char *)gate_up,
           "gate_up and out overlap");
  WEFT_CHECK(weft_comm_make_current(comm));
  weft_launch_config_t cfg = WEFT_LAUNCH_CONFIG_INIT;
  cfg.grid[0] = moe_grid(comm, routing->max_rows * inter);
  cfg.block[0] = MOE_THREADS;
  long long n = inter;
  int tile_rows = routing->tile_rows;
  void *args[] = {(void *)&gate_up, (void *)&routing->tiles, &tile_rows, &n, &type, &out};
  return weft_kernel_launch(comm->ops->moe_silu_mul, &cfg, args, stream);
}

weft_status_t weft_moe_combine(weft_comm_t *comm, const weft_moe_routing_t *routing, const void *y,
                               const void *weights, weft_dtype_t wdtype, int hidden,
                               weft_dtype_t dtype, void *out, weft_stream_t stream) {
  WEFT_CHECK(weft_comm_check(comm));
  WEFT_ARG(comm, routing, "routing is NULL");
  int type = moe_float(dtype), wtype = moe_float(wdtype);
  WEFT_ARG(comm, type >= 0 && wtype >= 0, "dtype %d and wdtype %d: bf16, fp16 or fp32",
           (int)dtype, (int)wdtype);
  WEFT_ARG(comm, hidden >= 1, "hidden %d: at least 1", hidden);
  if (routing->tokens == 0) return WEFT_STATUS_SUCCESS;
  WEFT_ARG(comm, y && weights && out, "y, weights or out is NULL");
  size_t out_b = (size_t)routing->tokens * (size_t)hidden * weft_dtype_size(dtype);
  size_t y_b = (size_t)routing->max_rows * (size_t)hidden * weft_dtype_size(dtype);
  WEFT_ARG(comm, (const char *)y + y_b <= (const char *)out ||
                     (const char *)out + out_b <= (const char *)y,
           "y and out overlap");
  WEFT_CHECK(weft_comm_make_current(comm));
  weft_launch_config_t cfg = WEFT_LAUNCH_CONFIG_INIT;
  cfg.grid[0] = moe_grid(comm, (long long)routing->tokens * hidden);
  cfg.block[0] = MOE_THREADS;
  long long tokens = routing->tokens, h = hidden;
  int topk = routing->topk;
  void *args[] = {(void *)&y, (void *)&routing->entry_row, (void *)&weights, &wtype, &tokens,
                  &topk, &h, &type, &out};
  return weft_kernel_launch(comm->ops->moe_combine, &cfg, args, stream);
}

weft_status_t weft_moe_arrival_order(weft_comm_t *comm, const weft_moe_routing_t *routing, int bm,
                                     long long per_rank, int me, int world, int *keys, int *order,
                                     weft_stream_t stream) {
  WEFT_ARG(comm, routing && bm > 0 && routing->tile_rows % bm == 0 && per_rank > 0 && me >= 0 &&
                     me < world && world <= WEFT_MAX_LOCAL_RANKS && keys && order,
           "moe arrival order: bm %d, %lld entries a rank, rank %d of %d", bm, per_rank, me,
           world);
  weft_launch_config_t one = WEFT_LAUNCH_CONFIG_INIT;
  one.block[0] = WEFT_MOE_PLAN_THREADS;
  int tile_rows = routing->tile_rows;
  void *args[] = {(void *)&routing->row_entry, (void *)&routing->tiles, &tile_rows, &bm,
                  &per_rank, &me, &world, &keys, &order};
  return weft_kernel_launch(comm->ops->moe_arrival_order, &one, args, stream);
}
