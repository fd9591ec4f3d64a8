/*
 * test_groups.c — the device primitives at every granularity (one thread, one warp, one block per
 * rank) across ranks, checked bit for bit, complementing test_primitives.c:
 *   barrier_all / sync_all: thread, warp and block forms mixed at random in one kernel, 3,000
 *     times, each checked for its meaning (every rank's writes before it are seen after it);
 *   broadcast: thread, warp and block forms from a rotating root, random sizes and alignments;
 *   signal_wait_until: thread, warp and block forms with every comparison; the value returned is
 *     the value that satisfied it, in every thread of the group;
 *   putmem_signal with WEFT_SIGNAL_ADD from every rank into every rank (thread, warp, block, nbi);
 *   rank_notify / rank_wait (thread and block forms) guarding pushed data;
 *   tile maps with rows: an affine map whose last tile is cut short, and a MoE-like table of
 *     uneven row segments, shuffled signals and random owners, through tile_push_data and the
 *     block forms of peer_tile_notify / peer_tile_wait; the same table driving
 *     producer_tile_notify_block / consumer_tile_wait_block between two blocks of one GPU;
 *   LL: 8-byte {data, flag} words to every peer, and buffers pushed and received at thread, warp
 *     and block granularity with odd sizes and unaligned ends (bytes past the end stay untouched).
 * Sizes, offsets and choices come from a seed common to all ranks (printed); data depends on the
 * rank and the round; outputs are poisoned before every round.
 */
// weft-test: ranks=2,4 timeout=240
#include "gpu_test.h"
#include "weft/tile_map.h"

#define ROUNDS 8
#define BAR_ITERS 3000
#define MAXB (96 * 1024) /* broadcast / put / LL payload bytes, at most */
#define MAT_R 300        /* rows of the tile matrix: not a multiple of any tile height */
#define MAT_C 48
#define AFF_ROWS 32      /* affine tile height: 10 tiles, the last one 12 rows */
#define MAX_TILES 128

enum { W_BAR, W_BCAST, W_SIGWAIT, W_PUTADD, W_RANKNW, W_TILE_AFF, W_TILE_TAB, W_PRODCONS, W_LL8,
       W_LL, W_COUNT };
static const char *names[W_COUNT] = {"barrier/sync_all", "broadcast", "signal_wait_until",
                                     "putmem_signal add", "rank notify/wait", "tiles affine rows",
                                     "tiles table rows", "producer/consumer", "LL words",
                                     "LL buffers"};

static const char *src =
    "#include <weft/device.cuh>\n"
    "typedef unsigned long long u64;\n"
    "#define PAT(r, e, i) ((unsigned char)((((u64)(i)) * 2654435761ull ^ ((u64)(r) << 33) ^ ((u64)(e) << 17)) >> 7))\n"
    "#define T (weft_thread_rank())\n"
    "#define NT (weft_block_size())\n"
    "extern \"C\" __global__ void fill(unsigned char *p, u64 n, int r, u64 e) {\n"
    "  for (u64 i = T; i < n; i += NT) p[i] = PAT(r, e, i);\n"
    "}\n"
    /* kinds[i] % 6: barrier thread/warp/block, sync_all thread/warp/block. Before barrier i every
       thread p writes v into slot me of rank p (parity array of v); after it slot p here must be v. */
    "extern \"C\" __global__ void barriers(u64 *slots, const unsigned char *kinds, int iters, u64 base,\n"
    "                                    u64 *wrong) {\n"
    "  int n = weft_state.local_world, me = weft_state.local_rank, f = weft_state.node_first_rank;\n"
    "  for (int i = 0; i < iters; i++) {\n"
    "    u64 v = base + i, *arr = slots + (v & 1) * 64;\n"
    "    for (int p = T; p < n; p += NT) *(volatile u64 *)weft_remote_ptr(arr + me, f + p) = v;\n"
    "    __syncthreads();\n"
    "    switch (kinds[i] % 6) {\n"
    "    case 0: if (T == 0) weft_barrier_all(); break;\n"
    "    case 1: if (T < 32) weft_barrier_all_warp(); break;\n"
    "    case 2: weft_barrier_all_block(); break;\n"
    "    case 3: if (T == 0) weft_sync_all(); break;\n"
    "    case 4: if (T >= 64 && T < 96) weft_sync_all_warp(); break;\n"
    "    default: weft_sync_all_block(); break;\n"
    "    }\n"
    "    __syncthreads();\n"
    "    for (int p = T; p < n; p += NT) if (((volatile u64 *)arr)[p] != v) atomicAdd(wrong, 1ull);\n"
    "  }\n"
    "}\n"
    "extern \"C\" __global__ void bcast(unsigned char *dst, const unsigned char *src, u64 n, int root,\n"
    "                                 u64 e, int kind, u64 *wrong) {\n"
    "  if (kind == 0) { if (T == 0) weft_broadcast(dst, src, n, root); }\n"
    "  else if (kind == 1) { if (T >= 32 && T < 64) weft_broadcast_warp(dst, src, n, root); }\n"
    "  else weft_broadcast_block(dst, src, n, root);\n"
    "  __syncthreads();\n"
    "  for (u64 i = T; i < n; i += NT) if (((volatile unsigned char *)dst)[i] != PAT(root, e, i)) atomicAdd(wrong, 1ull);\n"
    "  weft_barrier_all_block();\n" /* nobody poisons dst for the next round while a root writes */
    "}\n"
    /* up[p] rises with e (16e + p), down[p] falls (BIG - 16e - p); rank p sets both on every rank.
       Waiting for this round's value with each compare must return exactly it. */
    "#define BIG (1ull << 62)\n"
    "extern \"C\" __global__ void sigwait(u64 *up, u64 *down, u64 e, int kind, u64 *wrong) {\n"
    "  int n = weft_n_pes(), me = weft_my_pe();\n"
    "  if (T == 0) for (int p = 0; p < n; p++) {\n"
    "    weft_signal_op(up + me, 16 * e + me, WEFT_SIGNAL_SET, p);\n"
    "    weft_signal_op(down + me, BIG - 16 * e - me, WEFT_SIGNAL_SET, p);\n"
    "  }\n"
    "  for (int p = 0; p < n; p++) for (int c = 0; c < 6; c++) {\n"
    "    u64 v = 16 * e + p, old = e == 1 ? 0 : v - 16, got = 0, want = v, x;\n"
    "    const u64 *s = up + p;\n"
    "    switch (c) {\n"
    "    case WEFT_CMP_EQ: x = v; break;\n"
    "    case WEFT_CMP_NE: x = old; break;\n"
    "    case WEFT_CMP_GT: x = v - 1; break;\n"
    "    case WEFT_CMP_GE: x = v; break;\n"
    "    case WEFT_CMP_LT: s = down + p; want = BIG - v; x = want + 1; break;\n"
    "    default: s = down + p; want = BIG - v; x = want; break;\n"
    "    }\n"
    "    if (kind == 0) { if (T == 0) got = weft_signal_wait_until(s, c, x); else got = want; }\n"
    "    else if (kind == 1) { if (T < 32) got = weft_signal_wait_until_warp(s, c, x); else got = want; }\n"
    "    else got = weft_signal_wait_until_block(s, c, x);\n"
    "    if (got != want) atomicAdd(wrong, 1ull);\n"
    "  }\n"
    "  weft_barrier_all_block();\n"
    "}\n"
    /* every rank puts bytes into slot me of every rank and adds 1 to its counter there */
    "extern \"C\" __global__ void putadd(unsigned char *slots, const unsigned char *src, u64 bytes,\n"
    "                                  u64 *cnt, u64 e, int g, u64 *wrong) {\n"
    "  int n = weft_n_pes(), me = weft_my_pe();\n"
    "  for (int p = 0; p < n; p++) {\n"
    "    unsigned char *d = slots + me * bytes;\n"
    "    if (g == 0) { if (T == 0) weft_putmem_signal(d, src, bytes, cnt, 1, WEFT_SIGNAL_ADD, p); }\n"
    "    else if (g == 1) { if (T >= 96 && T < 128) weft_putmem_signal_warp(d, src, bytes, cnt, 1, WEFT_SIGNAL_ADD, p); }\n"
    "    else if (g == 2) weft_putmem_signal_block(d, src, bytes, cnt, 1, WEFT_SIGNAL_ADD, p);\n"
    "    else weft_putmem_signal_nbi_block(d, src, bytes, cnt, 1, WEFT_SIGNAL_ADD, p);\n"
    "  }\n"
    "  weft_signal_wait_until_block(cnt, WEFT_CMP_GE, e * n);\n"
    "  for (u64 i = T; i < n * bytes; i += NT)\n"
    "    if (((volatile unsigned char *)slots)[i] != PAT(i / bytes, e, i % bytes)) atomicAdd(wrong, 1ull);\n"
    "  weft_barrier_all_block();\n"
    "}\n"
    /* data pushed with putmem_block, then rank_notify (thread or block form); rank_wait for all */
    "extern \"C\" __global__ void ranknw(unsigned char *slots, const unsigned char *src, u64 bytes,\n"
    "                                  u64 *sigs, u64 e, int g, u64 *wrong) {\n"
    "  int n = weft_n_pes(), me = weft_my_pe();\n"
    "  for (int p = 0; p < n; p++) {\n"
    "    weft_putmem_block(slots + me * bytes, src, bytes, p);\n" /* ends with __syncthreads */
    "    if (g == 0) { if (T == 0) { weft_fence(); weft_rank_notify(sigs, me, 1, p); } }\n"
    "    else weft_rank_notify_block(sigs, me, 1, p);\n"
    "  }\n"
    "  for (int p = 0; p < n; p++) {\n"
    "    if (g == 0) { if (T == 0) weft_rank_wait(sigs, p, e, p); __syncthreads(); }\n"
    "    else weft_rank_wait_block(sigs, p, e, p);\n"
    "  }\n"
    "  for (u64 i = T; i < n * bytes; i += NT)\n"
    "    if (((volatile unsigned char *)slots)[i] != PAT(i / bytes, e, i % bytes)) atomicAdd(wrong, 1ull);\n"
    "  weft_barrier_all_block();\n"
    "}\n"
    /* row tiles of a [R][C] int matrix: the owner of each tile pushes it to every rank and notifies
       the tile's signal there (each round's map uses fresh signals: each gets one notify). */
    "#define VAL(e, owner, i) ((int)((e) * 7777u) ^ ((owner) << 20) ^ (int)(i))\n"
    "extern \"C\" __global__ void tiles(int *mat, const int *mine, u64 *sigs, weft_tile_map_t map, int ntiles,\n"
    "                                 int R, int C, const int *row_owner, u64 e, u64 *wrong) {\n"
    "  int n = weft_n_pes(), me = weft_my_pe();\n"
    "  for (int t = 0; t < ntiles; t++) {\n"
    "    if (weft_tile_rank(&map, t) != me) continue;\n"
    "    weft_tile_t tl = weft_tile_of_map(&map, t, 0, C, C, 4);\n"
    "    for (int p = 0; p < n; p++) {\n"
    "      weft_tile_push_data_block(mat, mine, tl, p);\n"
    "      weft_peer_tile_notify_block(sigs, &map, t, p);\n"
    "    }\n"
    "  }\n"
    "  for (int t = 0; t < ntiles; t++) weft_peer_tile_wait_block(sigs, &map, t, 1);\n"
    "  for (int i = T; i < R * C; i += NT)\n"
    "    if (((volatile int *)mat)[i] != VAL(e, row_owner[i / C], i)) atomicAdd(wrong, 1ull);\n"
    "  weft_barrier_all_block();\n"
    "}\n"
    /* one GPU: block 0 writes the map's tiles (last first) and notifies each; block 1 waits for
       each tile in order and checks its rows. */
    "extern \"C\" __global__ void prodcons(int *buf, u64 *sigs, weft_tile_map_t map, int ntiles, int C,\n"
    "                                    u64 e, u64 *wrong) {\n"
    "  if (blockIdx.x == 0) {\n"
    "    for (int t = ntiles - 1; t >= 0; t--) {\n"
    "      long long r0 = weft_tile_row0(&map, t);\n"
    "      for (int i = T; i < weft_tile_rows(&map, t) * C; i += NT) buf[r0 * C + i] = VAL(e, t, r0 * C + i);\n"
    "      weft_producer_tile_notify_block(sigs, &map, t);\n"
    "    }\n"
    "  } else {\n"
    "    for (int t = 0; t < ntiles; t++) {\n"
    "      weft_consumer_tile_wait_block(sigs, &map, t, 1);\n"
    "      long long r0 = weft_tile_row0(&map, t);\n"
    "      for (int i = T; i < weft_tile_rows(&map, t) * C; i += NT)\n"
    "        if (((volatile int *)buf)[r0 * C + i] != VAL(e, t, r0 * C + i)) atomicAdd(wrong, 1ull);\n"
    "    }\n"
    "  }\n"
    "}\n"
    /* LL words: word me on every rank gets (hash(me, e), flag e); read every rank's word here. */
    "#define H(r, e) ((unsigned)(((u64)(r) + 1) * 0x9E3779B97F4A7C15ull >> 32) ^ (unsigned)(e) * 2654435761u)\n"
    "extern \"C\" __global__ void ll8(u64 *words, u64 e, u64 *wrong) {\n"
    "  int n = weft_n_pes(), me = weft_my_pe();\n"
    "  if (T < n) weft_ll_store8((u64 *)weft_remote_ptr(words + me, T), H(me, e), (unsigned)e);\n"
    "  if (T < n && weft_ll_load8(words + T, (unsigned)e) != H(T, e)) atomicAdd(wrong, 1ull);\n"
    "  weft_barrier_all_block();\n"
    "}\n"
    /* LL buffers: push n bytes from src to next's llbuf; receive prev's into out; out[n, n+16) must
       keep its poison. */
    "extern \"C\" __global__ void llbuf(unsigned char *ll, const unsigned char *src, unsigned char *out,\n"
    "                                 u64 n, u64 e, int kind, u64 *wrong) {\n"
    "  int np = weft_n_pes(), me = weft_my_pe(), next = (me + 1) % np, prev = (me + np - 1) % np;\n"
    "  if (kind == 0) { if (T == 0) { weft_ll_push(ll, src, n, (unsigned)e, next); weft_ll_recv(out, ll, n, (unsigned)e); } }\n"
    "  else if (kind == 1) { if (T >= 32 && T < 64) { weft_ll_push_warp(ll, src, n, (unsigned)e, next); weft_ll_recv_warp(out, ll, n, (unsigned)e); } }\n"
    "  else { weft_ll_push_block(ll, src, n, (unsigned)e, next); weft_ll_recv_block(out, ll, n, (unsigned)e); }\n"
    "  __syncthreads();\n"
    "  for (u64 i = T; i < n + 16; i += NT)\n"
    "    if (out[i] != (i < n ? PAT(prev, e, i) : 0xEE)) atomicAdd(wrong, 1ull);\n"
    "  weft_barrier_all_block();\n"
    "}\n";

static weft_module_t *mod;

static void run(const char *name, unsigned grid, void **args) {
  weft_launch_config_t c = WEFT_LAUNCH_CONFIG_INIT;
  c.grid[0] = grid;
  c.block[0] = 256;
  OK(weft_kernel_launch(test_kernel(mod, name), &c, args, NULL));
}

static void *dptr(CUdeviceptr p) { return (void *)(uintptr_t)p; }

/* A MoE-like partition of R rows into tiles of 1..40 rows (the last one whatever is left). */
static int make_segments(unsigned long long *x, int R, int *row0, int *rows) {
  int t = 0;
  for (int r = 0; r < R && t < MAX_TILES; t++) {
    int h = 1 + (int)(test_rand(x) % 40);
    if (r + h > R || t == MAX_TILES - 1) h = R - r;
    row0[t] = r, rows[t] = h, r += h;
  }
  return t;
}

int main(void) {
  test_precompile(src, "test_groups.cu");
  weft_comm_t *comm = test_init();
  unsigned long long seed = test_seed(comm);
  OK(weft_module_load(comm, src, "test_groups.cu", NULL, 0, &mod));
  int np = comm->world, me = comm->rank;
  unsigned long long x = (seed / 1000003ull) | 1; /* common to all ranks (test_seed) */

  unsigned char *sym, *slots, *ll;
  unsigned long long *bslots, *up, *down, *cnt, *rsigs, *tsig_aff, *tsig_tab, *words;
  int *mat;
  OK(weft_malloc(comm, MAXB + 64, (void **)&sym));
  OK(weft_malloc(comm, (size_t)64 * 4096, (void **)&slots));
  OK(weft_malloc(comm, 2 * MAXB + 64, (void **)&ll));
  OK(weft_malloc(comm, 2 * 64 * 8, (void **)&bslots));
  OK(weft_malloc(comm, 64 * 8, (void **)&up));
  OK(weft_malloc(comm, 64 * 8, (void **)&down));
  OK(weft_malloc(comm, 8, (void **)&cnt));
  OK(weft_malloc(comm, 64 * 8, (void **)&rsigs));
  /* tile signals: a fresh range of MAX_TILES per round, so a signal counts exactly one notify
   * whatever the number of tiles of each round's map */
  OK(weft_malloc(comm, ROUNDS * MAX_TILES * 8, (void **)&tsig_aff));
  OK(weft_malloc(comm, ROUNDS * MAX_TILES * 8, (void **)&tsig_tab));
  OK(weft_malloc(comm, 64 * 8, (void **)&words));
  OK(weft_malloc(comm, (size_t)MAT_R * MAT_C * 4, (void **)&mat));
  /* down[] starts above every value it will hold, so LT/LE waits cannot pass on a stale 0. */
  CU(cuMemsetD8((CUdeviceptr)(uintptr_t)down, 0xFF, 64 * 8));
  CUdeviceptr local, out, wrong, kinds, mine, owner, tab, pcsig, pcbuf;
  CU(cuMemAlloc(&local, MAXB + 64));
  CU(cuMemAlloc(&out, MAXB + 64));
  CU(cuMemAlloc(&wrong, 8 * W_COUNT));
  CU(cuMemsetD8(wrong, 0, 8 * W_COUNT));
  CU(cuMemAlloc(&kinds, BAR_ITERS));
  CU(cuMemAlloc(&mine, (size_t)MAT_R * MAT_C * 4));
  CU(cuMemAlloc(&owner, MAT_R * 4));
  CU(cuMemAlloc(&tab, 4 * 4 * MAX_TILES)); /* signal, rank, row0, rows */
  CU(cuMemAlloc(&pcsig, 8 * ROUNDS * MAX_TILES));
  CU(cuMemsetD8(pcsig, 0, 8 * ROUNDS * MAX_TILES));
  CU(cuMemAlloc(&pcbuf, (size_t)MAT_R * MAT_C * 4));
  unsigned long long *w = dptr(wrong);
  CU(cuCtxSynchronize());
  OK(weft_comm_barrier(comm)); /* down[] is set on every rank before anyone signals it */

  /* barrier_all / sync_all, forms mixed at random (the same sequence on every rank) */
  {
    unsigned char k[BAR_ITERS];
    for (int i = 0; i < BAR_ITERS; i++) k[i] = (unsigned char)(test_rand(&x) % 6);
    CU(cuMemcpyHtoD(kinds, k, BAR_ITERS));
    int iters = BAR_ITERS;
    unsigned long long base = 1, *wb = w + W_BAR;
    unsigned char *kp = dptr(kinds);
    void *a[] = {&bslots, &kp, &iters, &base, &wb};
    run("barriers", 1, a);
    OK(weft_stream_synchronize(comm, NULL));
    printf("[%d] %d mixed barrier_all/sync_all calls done\n", me, BAR_ITERS);
  }

  int R = MAT_R, C = MAT_C;
  unsigned char *lsrc = dptr(local), *o = dptr(out);
  for (unsigned long long e = 1; e <= ROUNDS; e++) {
    int kind = (int)((e - 1) % 3);
    /* broadcast */
    {
      unsigned long long n = 1 + test_rand(&x) % (e < 3 ? 300 : MAXB);
      unsigned long long off = (e % 2) ? 0 : test_rand(&x) % 33; /* aligned and unaligned */
      int root = (int)(test_rand(&x) % (unsigned long long)np);
      unsigned char *s = lsrc + off, *d = sym + off;
      unsigned long long *wb = w + W_BCAST;
      void *fa[] = {&s, &n, &me, &e};
      run("fill", 1, fa);
      CU(cuMemsetD8((CUdeviceptr)(uintptr_t)d, 0xEE, n));
      OK(weft_stream_barrier(comm, NULL));
      void *a[] = {&d, &s, &n, &root, &e, &kind, &wb};
      run("bcast", 1, a);
    }
    /* signal_wait_until with every compare */
    {
      unsigned long long *ws = w + W_SIGWAIT;
      void *a[] = {&up, &down, &e, &kind, &ws};
      run("sigwait", 1, a);
    }
    /* putmem_signal ADD from every rank, g = thread, warp, block, nbi block */
    {
      int g = (int)((e - 1) % 4);
      unsigned long long bytes = 1 + test_rand(&x) % 4096;
      unsigned long long *wp = w + W_PUTADD;
      void *fa[] = {&lsrc, &bytes, &me, &e};
      run("fill", 1, fa);
      CU(cuMemsetD8((CUdeviceptr)(uintptr_t)slots, 0xEE, (size_t)np * bytes));
      OK(weft_stream_barrier(comm, NULL));
      void *a[] = {&slots, &lsrc, &bytes, &cnt, &e, &g, &wp};
      run("putadd", 1, a);
      /* rank notify/wait on the same slots, thread and block forms */
      int g2 = (int)(e % 2);
      bytes = 1 + test_rand(&x) % 4096;
      unsigned long long *wr = w + W_RANKNW;
      void *fb[] = {&lsrc, &bytes, &me, &e};
      run("fill", 1, fb);
      CU(cuMemsetD8((CUdeviceptr)(uintptr_t)slots, 0xEE, (size_t)np * bytes));
      OK(weft_stream_barrier(comm, NULL));
      void *b[] = {&slots, &lsrc, &bytes, &rsigs, &e, &g2, &wr};
      run("ranknw", 1, b);
    }
    /* tiles with rows: affine (cut last tile) and a table of uneven segments */
    {
      int *hm = malloc(sizeof(int) * R * C), *ro = malloc(sizeof(int) * R);
      int tsig[MAX_TILES], trank[MAX_TILES], trow0[MAX_TILES], trows[MAX_TILES];
      int aff_tiles = (R + AFF_ROWS - 1) / AFF_ROWS;
      weft_tile_map_t aff = weft_tile_map_with_rows(
          weft_tile_map_affine(1, (int)(e - 1) * MAX_TILES, (aff_tiles + np - 1) / np), AFF_ROWS, R,
          NULL, NULL);
      int tab_tiles = make_segments(&x, R, trow0, trows);
      for (int t = 0; t < tab_tiles; t++) tsig[t] = t, trank[t] = (int)(test_rand(&x) % (unsigned long long)np);
      for (int t = tab_tiles - 1; t > 0; t--) { /* shuffle the signals */
        int j = (int)(test_rand(&x) % (unsigned long long)(t + 1)), v = tsig[t];
        tsig[t] = tsig[j], tsig[j] = v;
      }
      for (int t = 0; t < tab_tiles; t++) tsig[t] += (int)(e - 1) * MAX_TILES;
      int *dt = dptr(tab);
      CU(cuMemcpyHtoD(tab, tsig, 4 * MAX_TILES));
      CU(cuMemcpyHtoD(tab + 4 * MAX_TILES, trank, 4 * MAX_TILES));
      CU(cuMemcpyHtoD(tab + 8 * MAX_TILES, trow0, 4 * MAX_TILES));
      CU(cuMemcpyHtoD(tab + 12 * MAX_TILES, trows, 4 * MAX_TILES));
      weft_tile_map_t tabm = weft_tile_map_with_rows(weft_tile_map_table(dt, dt + MAX_TILES), 0, 0,
                                                     dt + 2 * MAX_TILES, dt + 3 * MAX_TILES);
      for (int which = 0; which < 2; which++) {
        weft_tile_map_t *m = which ? &tabm : &aff;
        int ntiles = which ? tab_tiles : aff_tiles;
        /* owner of every row, from the host's view of the same map (tile_map.h as host C) */
        int covered = 0;
        for (int t = 0; t < ntiles; t++) {
          int r0 = which ? trow0[t] : (int)weft_tile_row0(m, t);
          int h = which ? trows[t] : weft_tile_rows(m, t);
          int own = which ? trank[t] : weft_tile_rank(m, t);
          for (int r = r0; r < r0 + h; r++) ro[r] = own;
          covered += h;
        }
        if (covered != R) {
          printf("[%d] FAILED: tile map rows cover %d of %d rows\n", me, covered, R);
          exit(1);
        }
        for (int i = 0; i < R * C; i++) hm[i] = (int)(e * 7777u) ^ (ro[i / C] << 20) ^ i;
        CU(cuMemcpyHtoD(mine, hm, sizeof(int) * R * C));
        CU(cuMemcpyHtoD(owner, ro, sizeof(int) * R));
        CU(cuMemsetD8((CUdeviceptr)(uintptr_t)mat, 0xEE, sizeof(int) * R * C));
        OK(weft_stream_barrier(comm, NULL));
        unsigned long long *sg = which ? tsig_tab : tsig_aff;
        unsigned long long *wt = w + (which ? W_TILE_TAB : W_TILE_AFF);
        int *mp = dptr(mine), *op = dptr(owner);
        void *a[] = {&mat, &mp, &sg, m, &ntiles, &R, &C, &op, &e, &wt};
        run("tiles", 1, a);
        CU(cuCtxSynchronize()); /* the host tables are rewritten next time round */
      }
      /* the same table between two blocks of this GPU */
      {
        int *pb = dptr(pcbuf);
        unsigned long long *ps = dptr(pcsig), *wpc = w + W_PRODCONS;
        weft_tile_map_t pm = tabm;
        for (int t = 0; t < tab_tiles; t++) tsig[t] = (int)(e - 1) * MAX_TILES + t; /* local, per tile */
        CU(cuMemcpyHtoD(tab, tsig, 4 * MAX_TILES));
        CU(cuMemsetD8(pcbuf, 0xEE, sizeof(int) * R * C));
        void *a[] = {&pb, &ps, &pm, &tab_tiles, &C, &e, &wpc};
        run("prodcons", 2, a);
        CU(cuCtxSynchronize());
      }
      free(hm);
      free(ro);
    }
    /* LL words and buffers */
    {
      unsigned long long *wl8 = w + W_LL8, *wl = w + W_LL;
      void *a[] = {&words, &e, &wl8};
      run("ll8", 1, a);
      unsigned long long n = 1 + test_rand(&x) % (e < 3 ? 100 : MAXB / 2);
      unsigned long long so = test_rand(&x) % 9, doff = (e % 2) ? 0 : test_rand(&x) % 9;
      unsigned char *s = lsrc + so, *d = o + doff;
      void *fa[] = {&s, &n, &me, &e};
      run("fill", 1, fa);
      CU(cuMemsetD8((CUdeviceptr)(uintptr_t)d, 0xEE, n + 16));
      void *b[] = {&ll, &s, &d, &n, &e, &kind, &wl};
      run("llbuf", 1, b);
    }
    OK(weft_stream_synchronize(comm, NULL));
    printf("[%d] round %llu (granularity %d) done\n", me, e, kind);
  }

  unsigned long long hw[W_COUNT];
  CU(cuMemcpyDtoH(hw, wrong, sizeof hw));
  int fails = 0;
  for (int i = 0; i < W_COUNT; i++) {
    printf("[%d] %-20s %s (%llu wrong)\n", me, names[i], hw[i] ? "FAIL" : "ok", hw[i]);
    fails += hw[i] != 0;
  }
  weft_module_unload(mod);
  OK(weft_comm_destroy(comm));
  printf("[%d] %s\n", me, fails ? "FAILED" : "ok");
  return fails ? 1 : 0;
}
