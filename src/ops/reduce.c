/*
 * reduce.c — weft_reduce_scatter and weft_allreduce: argument checks, the choice of algorithm,
 * and the launches of kernels/reduce.cu (see there for the protocols). Shapes, in elements of
 * fp16, bf16 or fp32: ReduceScatter sendbuf [world][recvcount] symmetric, recvbuf [recvcount];
 * AllReduce sendbuf, recvbuf [count], both symmetric.
 *
 * Scratch, allocated at init (never inside a call): the LL areas of AllReduce, [2 parities]
 * [world][WEFT_LL_BYTES(WEFT_ALLREDUCE_LL_MAX_BYTES(world))]; AllReduce's two-shot areas, LL128
 * (ops.h red_ll128_buf) and pushes (red_push2_buf, the push ReduceScatter's too); and the
 * staging of the copy-engine and ring ReduceScatters, [2 parities][world][slot] with
 * 2 * world * slot = WEFT_REDUCE_STAGING_BYTES (default 64 MiB).
 */
#include "ops.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../runtime/module.h"
#include "../runtime/comm.h"
#include "../runtime/loader.h"

/* AUTO's choices. LL while each rank pushes at most RED_LL_AUTO_PUSH bytes ((world - 1) copies
 * of the array, or of its segments, in 16-byte lines carrying 8): on nvidia-h100-x2 (2026-11-25,
 * dev/collectives/ar_sweep.sh) LL AllReduce beat two-shot up to 2 MiB (19.1 against 22.2 us) and
 * lost at 4 MiB (34.5 against 28.2), LL ReduceScatter beat the SM pull up to 2 MiB segments;
 * at more ranks each byte goes to more peers, so the limit in bytes shrinks with the world. Above
 * it, AllReduce takes two-shot (one-shot reads (world - 1) whole arrays per rank and cannot run
 * in place, so AUTO leaves it out); ReduceScatter the SM pull (the copy-engine form, staged in
 * 16 MiB rounds, each waited for, lost to it on nvidia-h200-x2, 2026-11-23: 175-180 GB/s busbw
 * at 128/256 MB against the SM pull's 288 at 64 MB and NCCL's 220-229; pipelined, it still
 * took 875 us at 256 MB on 4 ranks against the pull's 650, h200-x4 2026-11-26). */
#define RED_LL_AUTO_PUSH (2u << 20)
/* ReduceScatter where its SM form pushes (a segment within the push staging, red_push2 below): LL
 * while each rank pushes at most this much. h200-x4, 2026-11-26
 * (bench/results/2026-11-26-collectives-h200x4.md, "ReduceScatter by pushes"), us, LL / pushes: 4
 * ranks 1 MB total 10.1 / 12.7, 2 MB 15.0 / 15.0, 4 MB 26.5 / 20.5; 2 ranks 1 MB 7.5 / 8.8, 2 MB
 * 11.3 / 10.2, 4 MB 18.2 / 13.6. */
#define RED_RS_LL_AUTO_PUSH (768u << 10)
#define RED_STAGING_DEFAULT (64ull << 20)
/* Copy-engine ReduceScatter: a segment in about this many rounds, so that the reductions of one
 * round run under the copies of the next, but rounds of at least RED_CE_MIN_PIECE bytes (a
 * round costs ~20 us of kernels and copies at 4 ranks, h200-x4 2026-11-26: 1 MiB in 4 rounds
 * took 94 us) and at most a staging slot. */
#define RED_CE_ROUNDS 4
#define RED_CE_MIN_PIECE (4u << 20)
#define RED_THREADS 512
/* The LL kernel's blocks (at most one per SM) of RED_LL_THREADS threads, RED_LL_LINES lines a
 * thread */
#define RED_LL_THREADS 512
#define RED_LL_LINES 1
/* AllReduce LL: two-shot from this many bytes at 3 ranks or more (h200-x4, 2026-11-26, 4 ranks:
 * one-shot 8.7 / 10.9 / 15.6 us at 128 / 256 / 512 KiB, two-shot 9.3 / 9.8 / 11.8) */
#define RED_LL2_MIN_BYTES (256u << 10)
#define RED_BYTES_PER_BLOCK (16u << 10) /* grid size: about this much output per block */
/* AllReduce two-shot: by pushes (weft_red_push2: no handshakes; a staging area of twice
 * WEFT_ALLREDUCE_PUSH_BYTES) up to WEFT_ALLREDUCE_PUSH_BYTES, by pulls (weft_red_pull) above. On
 * h200-x4 (2026-11-26, 4 ranks) the pushes took 19.8 / 34.4 / 53.1 / 91.8 / 173 / 340 us at 1 / 4 /
 * 8 / 16 / 32 / 64 MiB against the pulls' 21.4 / 37.9 / 62.4 / 100.6 / 182 / 340 (2 ranks: 4-8%
 * faster at 4-64 MiB). The limit is 32 MiB (an area of 64 MiB): at 32 MiB the pushes took 168.7 /
 * 169.2 us against the pulls' 177.7 / 179.5 and NCCL's 170.5-171.0 (h200-x4, 2026-11-26, 4 ranks,
 * bench/results/2026-11-26-collectives-h200x4.md, "A 32 MiB push limit"), 64 MiB was a tie. The
 * ReduceScatter's pushes share the area (segments up to a world-th of it). Slices of about
 * RED_PUSH2_SLICE_BYTES of a segment per block. */
#define RED_PUSH2_DEFAULT (32u << 20)
#define RED_PUSH2_SLICE_BYTES (16u << 10)
/* AllReduce two-shot in LL128 lines (weft_red_ll128) up to WEFT_ALLREDUCE_LL128_BYTES (default
 * RED_LL128_DEFAULT; its area is about 4.3 times that), the pushes above. h200-x4, 2026-11-26, 4
 * ranks (bench/results/2026-11-26-collectives-h200x4.md, "AllReduce two-shot in LL128 lines"): 9.3
 * / 9.8 / 10.3 / 12.6 / 17.4 / 31.7 / 54.0 us at 64 KiB / 256 KiB / 512 KiB / 1 / 2 / 4 / 8 MiB
 * against the pushes' 17.0 / 17.1 / 17.6 / 18.8 / 24.1 / 33.2 / 52.5. */
#define RED_LL128_DEFAULT (4u << 20)
/* AUTO's AllReduce: LL below this many bytes, the LL128 two-shot from here up to its limit. Same
 * runs: 4 ranks LL 10.8-11.1 us at 512 KiB, 16.7 at 1 MiB; 2 ranks LL 6.2 / 7.8 / 11.5 / 18.5 us at
 * 256 KiB / 512 KiB / 1 / 2 MiB against 7.0 / 7.5 / 9.0 / 14.3. */
#define RED_LL128_MIN_BYTES (512u << 10)

/* Two-shot segments: this rank's 1/world of count elements, in multiples of 8 elements so that
 * aligned arrays stay aligned. */
static size_t red_two_shot_per(const weft_comm_t *comm, size_t count) {
  size_t per = (count + (size_t)comm->local_world - 1) / (size_t)comm->local_world;
  return (per + 7) & ~(size_t)7;
}

/* The LL128 area's slot: the LL128 lines of a two-shot segment of an AllReduce of at most
 * `bytes` (red_two_shot_per rounds up by 8 elements: at most 32 bytes more). */
static size_t red_ll128_slot(const weft_comm_t *comm, size_t bytes) {
  size_t per = (bytes + (size_t)comm->local_world - 1) / (size_t)comm->local_world + 32;
  return WEFT_LL128_BYTES(per);
}

/* kernels/reduce.cu compiled for op (-DWEFT_RED_OP; SUM's without it, the device library's
 * default) into comm->ops->red[op], which is left untouched on failure. */
static weft_status_t red_load(weft_comm_t *comm, weft_red_op_t op) {
  char op_def[32];
  snprintf(op_def, sizeof op_def, "-DWEFT_RED_OP=%d", (int)op);
  const char *opts[2];
  int nopts = 0;
  /* the LL forms poll four ranks' lines at once above 2 ranks (kernels/reduce.cu says why) */
  if (comm->local_world > 2) opts[nopts++] = "-DWEFT_RED_LL_BATCH=4";
  if (op != WEFT_RED_OP_SUM) opts[nopts++] = op_def;
  weft_red_kernels_t k = {0};
  WEFT_CHECK(weft_module_load_embedded(comm, "kernels/reduce.cu", opts, nopts, &k.mod));
  const struct {
    const char *name;
    struct weft_kernel **to;
  } names[] = {{"weft_red_pull", &k.pull},         {"weft_red_ll", &k.ll},
               {"weft_red_ll2", &k.ll2},           {"weft_red_ll128", &k.ll128},
               {"weft_red_push2", &k.push2},       {"weft_red_ce_enter", &k.ce_enter},
               {"weft_red_ce_step", &k.ce_step},   {"weft_red_ce_wait", &k.ce_wait},
               {"weft_red_ce_reduce", &k.ce_reduce}, {"weft_red_ring", &k.ring}};
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
    weft_status_t st = weft_module_get_kernel(k.mod, names[i].name, names[i].to);
    if (st != WEFT_STATUS_SUCCESS) {
      weft_module_unload(k.mod);
      return st;
    }
  }
  comm->ops->red[op] = k;
  return WEFT_STATUS_SUCCESS;
}

/* op's kernels, loaded at the first call that needs them (SUM's at init). */
static weft_status_t red_kernels(weft_comm_t *comm, weft_red_op_t op, const weft_red_kernels_t **k) {
  if (!comm->ops->red[op].mod) WEFT_CHECK(red_load(comm, op));
  *k = &comm->ops->red[op];
  return WEFT_STATUS_SUCCESS;
}

weft_status_t weft_reduce_init(weft_comm_t *comm) {
  weft_ops_t *o = comm->ops;
  WEFT_CHECK(red_load(comm, WEFT_RED_OP_SUM));
  const char *ll = getenv("WEFT_AR_LL");
  if (ll && strcmp(ll, "one") && strcmp(ll, "two"))
    return WEFT_ERR(comm, WEFT_STATUS_INVALID_ARGUMENT, "WEFT_AR_LL=%s: one or two", ll);
  o->red_ll_two = ll ? !strcmp(ll, "two") : -1;
  uint64_t push;
  if (!weft_env_u64("WEFT_ALLREDUCE_PUSH_BYTES", RED_PUSH2_DEFAULT, true, &push) || push > (1ull << 30))
    return WEFT_ERR(comm, WEFT_STATUS_INVALID_ARGUMENT,
                    "WEFT_ALLREDUCE_PUSH_BYTES does not parse or exceeds 1 GiB");
  o->red_push2_max = (size_t)push;
  /* a segment (rounded up to 8 elements, at most 32 bytes more) at any offset mod 16 */
  o->red_push2_slot = ((o->red_push2_max / (size_t)comm->local_world + 15) & ~(size_t)15) + 48;
  WEFT_CHECK(weft_malloc(comm, 2 * (size_t)comm->local_world * o->red_push2_slot, (void **)&o->red_push2_buf));
  uint64_t ll128;
  if (!weft_env_u64("WEFT_ALLREDUCE_LL128_BYTES", RED_LL128_DEFAULT, true, &ll128) || ll128 > (1ull << 30))
    return WEFT_ERR(comm, WEFT_STATUS_INVALID_ARGUMENT,
                    "WEFT_ALLREDUCE_LL128_BYTES does not parse or exceeds 1 GiB");
  o->red_ll128_max = (size_t)ll128;
  if (o->red_ll128_max) {
    o->red_ll128_slot = red_ll128_slot(comm, o->red_ll128_max);
    WEFT_CHECK(weft_malloc(comm, 4 * (size_t)comm->local_world * o->red_ll128_slot,
                           (void **)&o->red_ll128_buf));
  }
  o->red_ll_slot = WEFT_LL_BYTES(WEFT_ALLREDUCE_LL_MAX_BYTES(comm->local_world));
  WEFT_CHECK(weft_malloc(comm, 2 * (size_t)comm->local_world * o->red_ll_slot, (void **)&o->red_ll_buf));
  uint64_t staging;
  if (!weft_env_u64("WEFT_REDUCE_STAGING_BYTES", RED_STAGING_DEFAULT, true, &staging))
    return WEFT_ERR(comm, WEFT_STATUS_INVALID_ARGUMENT, "WEFT_REDUCE_STAGING_BYTES does not parse");
  /* Each slot holds one piece placed at its source's offset mod 16 (the +16). */
  o->red_stage_slot = (size_t)(staging / (2 * (uint64_t)comm->local_world)) & ~(size_t)15;
  if (o->red_stage_slot < (64u << 10) + 16)
    return WEFT_ERR(comm, WEFT_STATUS_INVALID_ARGUMENT,
                    "WEFT_REDUCE_STAGING_BYTES=%llu leaves less than 64 KiB per rank and parity",
                    (unsigned long long)staging);
  return weft_malloc(comm, 2 * (size_t)comm->local_world * o->red_stage_slot, (void **)&o->red_stage_buf);
}

void weft_reduce_destroy(weft_comm_t *comm) {
  /* The LL and staging areas go with the heap. */
  for (int op = 0; op < WEFT_RED_OP_COUNT; op++)
    if (comm->ops->red[op].mod) weft_module_unload(comm->ops->red[op].mod);
}

static int overlap(const char *a, size_t an, const char *b, size_t bn) {
  return a < b + bn && b < a + an;
}

/* A buffer that peers read or write in the chosen form must lie in the symmetric heap; the forms
 * that move everything through internal symmetric areas (LL, LL128, the pushes into staging)
 * take any device memory. */
static weft_status_t red_symmetric(weft_comm_t *comm, const void *p, size_t bytes, const char *what,
                                   const char *form) {
  WEFT_ARG(comm, weft_heap_contains(&comm->heap, p, bytes),
           "%s %p (+%zu bytes) must lie in the symmetric heap (weft_malloc) for %s, which "
           "reaches it from the peers",
           what, p, bytes, form);
  return WEFT_STATUS_SUCCESS;
}

/* The checks both ops share; *elem gets the element size. */
static weft_status_t red_check(weft_comm_t *comm, weft_dtype_t dtype, weft_red_op_t op, size_t *elem) {
  WEFT_CHECK(weft_comm_check(comm));
  WEFT_ARG(comm, dtype == WEFT_DTYPE_FP16 || dtype == WEFT_DTYPE_BF16 || dtype == WEFT_DTYPE_FP32,
           "dtype %d: reductions take fp16, bf16 or fp32", (int)dtype);
  WEFT_ARG(comm, (unsigned)op < WEFT_RED_OP_COUNT, "op %d is not a weft_red_op_t", (int)op);
  if (comm->world != comm->local_world)
    return WEFT_ERR(comm, WEFT_STATUS_NOT_SUPPORTED,
                    "reductions run over the ranks of one node (world %d, %d on this node)",
                    comm->world, comm->local_world);
  *elem = weft_dtype_size(dtype);
  return WEFT_STATUS_SUCCESS;
}

/* Whether AUTO takes LL for an array (AllReduce) or segment (ReduceScatter) of `bytes`. */
static int red_ll_auto(const weft_comm_t *comm, size_t bytes) {
  int world = comm->local_world;
  return weft_ops_ll_auto(world, bytes, WEFT_ALLREDUCE_LL_MAX_BYTES(world), RED_LL_AUTO_PUSH);
}

static unsigned red_blocks(const weft_comm_t *comm, unsigned long long bytes) {
  return weft_ops_gpu_grid(&comm->ops->gpu,
                           (bytes + RED_BYTES_PER_BLOCK - 1) / RED_BYTES_PER_BLOCK);
}

/* weft_red_pull over n elements of send (symmetric), into recv (push: every rank's). */
static weft_status_t red_pull(weft_comm_t *comm, const weft_red_kernels_t *k, const char *send,
                              char *recv, size_t n, size_t elem, weft_dtype_t dtype, int push,
                              CUstream stream) {
  weft_launch_config_t cfg = WEFT_LAUNCH_CONFIG_INIT;
  cfg.block[0] = RED_THREADS;
  cfg.grid[0] = red_blocks(comm, (unsigned long long)n * elem);
  unsigned long long count = n;
  int dt = (int)dtype;
  void *args[] = {(void *)&send, &recv, &count, &dt, &push};
  return weft_kernel_launch(k->pull, &cfg, args, stream);
}

/* weft_red_push2 over count elements of send, segments of per elements, each in slices of a
 * block: gather 1, AllReduce into recv (count at most WEFT_ALLREDUCE_PUSH_BYTES, per a multiple of
 * 8); gather 0, ReduceScatter of this rank's segment into recv (per at most that over world). */
static weft_status_t red_push2(weft_comm_t *comm, const weft_red_kernels_t *k, const char *send,
                               char *recv, size_t count, size_t per, size_t elem,
                               weft_dtype_t dtype, int gather, CUstream stream) {
  weft_ops_t *o = comm->ops;
  size_t most = (size_t)WEFT_RED_PUSH2_FLAG_SLOTS * WEFT_MAX_LOCAL_RANKS / (size_t)comm->local_world;
  if (most > (size_t)o->gpu.sms) most = (size_t)o->gpu.sms;
  size_t blocks = (per * elem + RED_PUSH2_SLICE_BYTES - 1) / RED_PUSH2_SLICE_BYTES;
  blocks = blocks < 1 ? 1 : blocks > most ? most : blocks;
  unsigned long long slice = ((per + blocks - 1) / blocks + 7) & ~(size_t)7, n = count, per_ = per,
                     slot = o->red_push2_slot;
  weft_launch_config_t cfg = WEFT_LAUNCH_CONFIG_INIT;
  cfg.block[0] = RED_THREADS;
  cfg.grid[0] = (unsigned)((per + slice - 1) / slice);
  int dt = (int)dtype;
  void *args[] = {(void *)&send, &recv, &n, &per_, &slice, &dt, &o->red_push2_buf, &slot, &gather};
  cfg.programmatic = 1; /* weft_pdl_begin */
  return weft_kernel_launch(k->push2, &cfg, args, stream);
}

/* An LL kernel (weft_red_ll, _ll2, _ll128) on `threads` threads of work, RED_LL_THREADS a
 * block, at most one block an SM (every LL form needs its whole grid resident), launched for
 * programmatic dependent launch (its weft_pdl_begin). */
static weft_status_t red_ll_launch(weft_comm_t *comm, struct weft_kernel *k, unsigned long long threads,
                                  void **args, CUstream stream) {
  weft_launch_config_t cfg = WEFT_LAUNCH_CONFIG_INIT;
  unsigned long long blocks = (threads + RED_LL_THREADS - 1) / RED_LL_THREADS;
  cfg.block[0] = RED_LL_THREADS;
  cfg.grid[0] = weft_ops_gpu_grid(&comm->ops->gpu, blocks);
  cfg.programmatic = 1;
  return weft_kernel_launch(k, &cfg, args, stream);
}

/* weft_red_ll over bytes (at most WEFT_ALLREDUCE_LL_MAX_BYTES(world)) of send: AllReduce with
 * seg_stride 0, ReduceScatter with the segments seg_stride bytes apart; send NULL: the reduction
 * only (weft_reduce_ll_sum). */
static weft_status_t red_ll(weft_comm_t *comm, const weft_red_kernels_t *k, const char *send,
                            char *recv, size_t bytes, size_t seg_stride, weft_dtype_t dtype,
                            CUstream stream) {
  weft_ops_t *o = comm->ops;
  unsigned long long lines = (bytes + 7) / 8, nbytes = bytes, slot = o->red_ll_slot, stride = seg_stride;
  int dt = (int)dtype;
  void *args[] = {(void *)&send, &recv, &nbytes, &dt, &o->red_ll_buf, &slot, &stride};
  return red_ll_launch(comm, k->ll, (lines + RED_LL_LINES - 1) / RED_LL_LINES, args, stream);
}

/* weft_red_ll2: AllReduce two-shot in LL lines over bytes (at most
 * WEFT_ALLREDUCE_LL_MAX_BYTES(world)), segments of per bytes (a multiple of 8), a thread a line. */
static weft_status_t red_ll2(weft_comm_t *comm, const weft_red_kernels_t *k, const char *send,
                             char *recv, size_t bytes, weft_dtype_t dtype, CUstream stream) {
  weft_ops_t *o = comm->ops;
  size_t world = (size_t)comm->local_world;
  unsigned long long per = (bytes + world * 8 - 1) / (world * 8) * 8, nbytes = bytes, slot = o->red_ll_slot;
  int dt = (int)dtype;
  void *args[] = {(void *)&send, &recv, &nbytes, &per, &dt, &o->red_ll_buf, &slot};
  return red_ll_launch(comm, k->ll2, per / 8, args, stream);
}

/* weft_red_ll128: AllReduce two-shot in LL128 lines over count elements (bytes at most
 * red_ll128_max), segments of per elements; a group of 8 lanes a line. */
static weft_status_t red_ll128(weft_comm_t *comm, const weft_red_kernels_t *k, const char *send,
                               char *recv, size_t count, size_t per, size_t elem,
                               weft_dtype_t dtype, CUstream stream) {
  weft_ops_t *o = comm->ops;
  unsigned long long nbytes = count * elem, per_bytes = per * elem, slot = o->red_ll128_slot;
  unsigned long long lines = WEFT_LL128_BYTES(per_bytes) / WEFT_LL128_LINE;
  int dt = (int)dtype;
  void *args[] = {(void *)&send, &recv, &nbytes, &per_bytes, &dt, &o->red_ll128_buf, &slot};
  return red_ll_launch(comm, k->ll128, 8 * lines, args, stream);
}

weft_status_t weft_reduce_ll_sum(weft_comm_t *comm, void *recv, size_t bytes, weft_dtype_t dtype,
                                 CUstream stream) {
  return red_ll(comm, &comm->ops->red[WEFT_RED_OP_SUM], NULL, recv, bytes, 0, dtype, stream);
}

/* Copy-engine ReduceScatter (Triton-distributed, §3.3, Algorithm 3; kernels/reduce.cu has the
 * protocol): enter (every rank has finished its earlier calls), then, round by round, this rank's
 * pieces of the peers' segments copied into their owners' staging (parity r & 1) one after another
 * on the side stream, rank + 1's first (every GPU then sends to one peer and receives from one at a
 * time, as the copy-engine AllGather does, allgather.c), a step kernel between rounds (the
 * arrival counts of the round before, the owners' freed counts before the next), while
 * the caller's stream waits for each round's arrivals in one block and reduces it, on at most
 * all SMs but one (the step kernels must find room beside it). The join keeps the caller's
 * stream behind the copies (they read sendbuf). */
static weft_status_t rs_copy_engine(weft_comm_t *comm, const weft_red_kernels_t *k, const char *send,
                                    char *recv, size_t recvcount, size_t elem, weft_dtype_t dtype,
                                    CUstream stream) {
  weft_ops_t *o = comm->ops;
  int me = comm->local_rank, world = comm->local_world, dt = (int)dtype;
  /* elements a round: a multiple of 4 KiB (pieces keep the segments' alignment) */
  size_t align = 4096 / elem, most = (o->red_stage_slot - 16) / elem / align * align;
  size_t piece = (recvcount + RED_CE_ROUNDS - 1) / RED_CE_ROUNDS;
  if (piece < RED_CE_MIN_PIECE / elem) piece = RED_CE_MIN_PIECE / elem;
  piece = (piece + align - 1) / align * align;
  if (piece > most) piece = most;
  unsigned long long slot = o->red_stage_slot;
  weft_launch_config_t one = WEFT_LAUNCH_CONFIG_INIT, step = WEFT_LAUNCH_CONFIG_INIT;
  one.block[0] = 32;
  step.block[0] = (unsigned)world; /* a thread a peer */
  WEFT_CHECK(weft_kernel_launch(k->ce_enter, &one, NULL, stream));
  WEFT_CHECK(weft_ops_fork(comm, stream));
  for (size_t r = 0, off = 0; off < recvcount; r++, off += piece) {
    size_t n = recvcount - off < piece ? recvcount - off : piece;
    unsigned char *stage = o->red_stage_buf + (r & 1) * (size_t)world * slot;
    int sent = r > 0, next = 1;
    void *sargs[] = {&sent, &next};
    WEFT_CHECK(weft_kernel_launch(k->ce_step, &step, sargs, o->side));
    for (int j = 1; j < world; j++) {
      int q = (me + j) % world;
      const char *src = send + ((size_t)q * recvcount + off) * elem;
      CUdeviceptr dst = weft_heap_peer(&comm->heap, stage + (size_t)me * slot + ((uintptr_t)src & 15), q);
      WEFT_CU(comm, cuMemcpyAsync(dst, (CUdeviceptr)(uintptr_t)src, n * elem, o->side));
    }
    WEFT_CHECK(weft_kernel_launch(k->ce_wait, &one, NULL, stream));
    weft_launch_config_t cfg = WEFT_LAUNCH_CONFIG_INIT;
    cfg.block[0] = RED_THREADS;
    cfg.grid[0] = red_blocks(comm, (unsigned long long)n * elem);
    if (cfg.grid[0] >= (unsigned)o->gpu.sms) cfg.grid[0] = (unsigned)o->gpu.sms - 1;
    const char *own = send + ((size_t)me * recvcount + off) * elem;
    char *out = recv + off * elem;
    unsigned long long cnt = n;
    int last = off + n >= recvcount;
    void *args[] = {(void *)&own, &stage, &slot, &out, &cnt, &dt, &last};
    WEFT_CHECK(weft_kernel_launch(k->ce_reduce, &cfg, args, stream));
  }
  int sent = 1, next = 0;
  void *sargs[] = {&sent, &next};
  WEFT_CHECK(weft_kernel_launch(k->ce_step, &step, sargs, o->side));
  return weft_ops_join(comm, stream);
}

/* Ring ReduceScatter (kernels/reduce.cu, weft_red_ring): WEFT_MAX_LOCAL_RANKS blocks, one per
 * slice and count word, in every call (every call must advance every word alike); the staging
 * area holds two parities of every slice's fp32 partials, per floats each. */
static weft_status_t rs_ring(weft_comm_t *comm, const weft_red_kernels_t *k, const char *send,
                             char *recv, size_t recvcount, weft_dtype_t dtype, CUstream stream) {
  weft_ops_t *o = comm->ops;
  unsigned slices = WEFT_MAX_LOCAL_RANKS;
  size_t floats = 2 * (size_t)comm->local_world * o->red_stage_slot / 4;
  unsigned long long per = floats / (2 * (size_t)slices) / 4 * 4, count = recvcount;
  weft_launch_config_t cfg = WEFT_LAUNCH_CONFIG_INIT;
  cfg.grid[0] = slices;
  cfg.block[0] = RED_THREADS;
  int dt = (int)dtype;
  void *args[] = {(void *)&send, &recv, &count, &dt, &o->red_stage_buf, &per};
  return weft_kernel_launch(k->ring, &cfg, args, stream);
}

weft_status_t weft_reduce_scatter(weft_comm_t *comm, const void *sendbuf, void *recvbuf,
                                  size_t recvcount, weft_dtype_t dtype, weft_red_op_t op,
                                  weft_algo_t algo, weft_stream_t stream) {
  size_t elem = 0;
  WEFT_CHECK(red_check(comm, dtype, op, &elem));
  WEFT_ARG(comm, algo == WEFT_ALGO_AUTO || algo == WEFT_ALGO_COPY_ENGINE || algo == WEFT_ALGO_SM ||
                     algo == WEFT_ALGO_LL || algo == WEFT_ALGO_RING,
           "algo %d is not one of reduce_scatter's (auto, copy engine, SM, LL, ring)", (int)algo);
  if (recvcount == 0) return WEFT_STATUS_SUCCESS;
  WEFT_ARG(comm, sendbuf && recvbuf, "sendbuf or recvbuf is NULL");
  WEFT_ARG(comm, recvcount <= SIZE_MAX / elem / (size_t)comm->world, "recvcount %zu overflows", recvcount);
  WEFT_ARG(comm, (uintptr_t)sendbuf % elem == 0 && (uintptr_t)recvbuf % elem == 0,
           "sendbuf %p and recvbuf %p must be aligned to the element size (%zu)", sendbuf, recvbuf, elem);
  size_t seg = recvcount * elem, total = seg * (size_t)comm->world;
  const char *send = sendbuf;
  char *recv = recvbuf;
  int in_place = recv == send + (size_t)comm->local_rank * seg;
  WEFT_ARG(comm, in_place || !overlap(send, total, recv, seg),
           "recvbuf overlaps sendbuf without being this rank's segment of it (in place)");
  size_t ll_max = WEFT_ALLREDUCE_LL_MAX_BYTES(comm->local_world);
  int push = seg <= comm->ops->red_push2_max / (size_t)comm->local_world; /* the SM form's pushes */
  if (algo == WEFT_ALGO_AUTO)
    algo = weft_ops_ll_auto(comm->local_world, seg, ll_max, push ? RED_RS_LL_AUTO_PUSH : RED_LL_AUTO_PUSH)
               ? WEFT_ALGO_LL
               : WEFT_ALGO_SM;
  WEFT_ARG(comm, algo != WEFT_ALGO_LL || seg <= ll_max,
           "WEFT_ALGO_LL takes at most %zu bytes per segment at %d ranks, not %zu", ll_max,
           comm->local_world, seg);
  if (algo == WEFT_ALGO_SM && !push)
    WEFT_CHECK(red_symmetric(comm, sendbuf, total, "sendbuf", "the SM form above its pushes' limit"));
  WEFT_CHECK(weft_comm_make_current(comm));
  const weft_red_kernels_t *k;
  WEFT_CHECK(red_kernels(comm, op, &k));
  CUstream s = (CUstream)stream;
  if (algo == WEFT_ALGO_COPY_ENGINE) return rs_copy_engine(comm, k, send, recv, recvcount, elem, dtype, s);
  if (algo == WEFT_ALGO_RING) return rs_ring(comm, k, send, recv, recvcount, dtype, s);
  if (algo == WEFT_ALGO_LL) return red_ll(comm, k, send, recv, seg, seg, dtype, s);
  /* SM: by pushes where a segment fits the push two-shot's staging, by pulls above */
  if (push)
    return red_push2(comm, k, send, recv, recvcount * (size_t)comm->local_world, recvcount, elem,
                     dtype, 0, s);
  return red_pull(comm, k, send + (size_t)comm->local_rank * seg, recv, recvcount, elem, dtype, 0, s);
}

weft_status_t weft_allreduce(weft_comm_t *comm, const void *sendbuf, void *recvbuf, size_t count,
                             weft_dtype_t dtype, weft_red_op_t op, weft_algo_t algo,
                             weft_stream_t stream) {
  size_t elem = 0;
  WEFT_CHECK(red_check(comm, dtype, op, &elem));
  WEFT_ARG(comm, algo == WEFT_ALGO_AUTO || algo == WEFT_ALGO_SM || algo == WEFT_ALGO_LL ||
                     algo == WEFT_ALGO_TWO_SHOT,
           "algo %d is not one of allreduce's (auto, SM, LL, two-shot)", (int)algo);
  if (count == 0) return WEFT_STATUS_SUCCESS;
  WEFT_ARG(comm, sendbuf && recvbuf, "sendbuf or recvbuf is NULL");
  WEFT_ARG(comm, count <= SIZE_MAX / elem, "count %zu overflows", count);
  WEFT_ARG(comm, (uintptr_t)sendbuf % elem == 0 && (uintptr_t)recvbuf % elem == 0,
           "sendbuf %p and recvbuf %p must be aligned to the element size (%zu)", sendbuf, recvbuf, elem);
  size_t bytes = count * elem;
  const char *send = sendbuf;
  char *recv = recvbuf;
  int in_place = recv == send;
  WEFT_ARG(comm, in_place || !overlap(send, bytes, recv, bytes),
           "recvbuf overlaps sendbuf without being equal to it (in place)");
  /* AUTO must choose the same algorithm on every rank, so it may not look at in_place (ranks
   * may differ there, and one-shot cannot run in place): one-shot only when asked for. */
  size_t ll_max = WEFT_ALLREDUCE_LL_MAX_BYTES(comm->local_world);
  /* LL below RED_LL128_MIN_BYTES, the two-shot in LL128 lines from there up to its limit; beyond
   * it (or with it off), at 3 ranks or more LL up to its limit (two-shot from RED_LL2_MIN_BYTES:
   * 16.7 us at 1 MiB against the pushes' 18.8 on 4 H200s), at 2 while each rank pushes at most
   * RED_LL_AUTO_PUSH. */
  if (algo == WEFT_ALGO_AUTO) {
    int ll = bytes <= comm->ops->red_ll128_max ? bytes < RED_LL128_MIN_BYTES
             : comm->local_world > 2          ? bytes <= ll_max
                                              : red_ll_auto(comm, bytes);
    algo = ll ? WEFT_ALGO_LL : WEFT_ALGO_TWO_SHOT;
  }
  WEFT_ARG(comm, algo != WEFT_ALGO_LL || bytes <= ll_max,
           "WEFT_ALGO_LL takes at most %zu bytes at %d ranks, not %zu", ll_max, comm->local_world,
           bytes);
  WEFT_ARG(comm, algo != WEFT_ALGO_SM || !in_place,
           "WEFT_ALGO_SM (one-shot) cannot run in place: peers read sendbuf while recvbuf is "
           "written (use two-shot or LL)");
  /* Above the LL128 lines the two-shot stores its sums into every rank's recvbuf (the pushes,
   * then the pulls), and the pulls (and the one-shot) read every rank's sendbuf. */
  int peers_store = algo == WEFT_ALGO_TWO_SHOT && bytes > comm->ops->red_ll128_max;
  int peers_read = algo == WEFT_ALGO_SM || (peers_store && bytes > comm->ops->red_push2_max);
  if (peers_store)
    WEFT_CHECK(red_symmetric(comm, recvbuf, bytes, "recvbuf",
                             "the two-shot above WEFT_ALLREDUCE_LL128_BYTES"));
  if (peers_read)
    WEFT_CHECK(red_symmetric(comm, sendbuf, bytes, "sendbuf",
                             algo == WEFT_ALGO_SM ? "the SM one-shot"
                                                  : "the two-shot above WEFT_ALLREDUCE_PUSH_BYTES"));
  WEFT_CHECK(weft_comm_make_current(comm));
  const weft_red_kernels_t *k;
  WEFT_CHECK(red_kernels(comm, op, &k));
  CUstream s = (CUstream)stream;
  if (algo == WEFT_ALGO_SM) return red_pull(comm, k, send, recv, count, elem, dtype, 0, s);
  if (algo == WEFT_ALGO_TWO_SHOT) {
    size_t per = red_two_shot_per(comm, count);
    if (!peers_store) return red_ll128(comm, k, send, recv, count, per, elem, dtype, s);
    if (!peers_read) return red_push2(comm, k, send, recv, count, per, elem, dtype, 1, s);
    size_t lo = per * (size_t)comm->local_rank;
    if (lo > count) lo = count;
    size_t n = count - lo < per ? count - lo : per;
    return red_pull(comm, k, send + lo * elem, recv + lo * elem, n, elem, dtype, 1, s);
  }
  /* LL: one-shot, or two-shot (half the bytes a rank pushes at 4 ranks, a quarter at 8, for one
   * more NVLink hop) from RED_LL2_MIN_BYTES at 3 ranks or more; WEFT_AR_LL=one|two (read at
   * init) overrides (for measurements; equal on every rank). */
  int two = comm->ops->red_ll_two >= 0 ? comm->ops->red_ll_two
                                      : comm->local_world > 2 && bytes >= RED_LL2_MIN_BYTES;
  two = two && comm->local_world > 1;
  return two ? red_ll2(comm, k, send, recv, bytes, dtype, s) : red_ll(comm, k, send, recv, bytes, 0, dtype, s);
}
