/*
 * test_primitives.c — every device primitive across ranks, checked bit for bit:
 * put/get and put-with-signal at thread, warp and block granularity (and nbi + quiet), signal
 * set/add and wait_until with each comparison, int_p with fence ordering, atomic add and cas
 * under contention from all ranks, broadcast, wait/notify/consume_token, the TileLink tile
 * primitives over static and dynamic tile maps (push, pull, rank copy, producer/consumer on one
 * GPU, peer notify/wait), and the LL protocol. Sizes and offsets are random each round; data is a
 * function of (rank, round, index) so every byte is checked.
 */
// weft-test: ranks=2,4 timeout=240
#include "gpu_test.h"
#include "weft/tile_map.h"

#define MAXN (1 << 20) /* bytes */
#define MAT_R 256
#define MAT_C 64
#define TILE 16

enum { W_PUT, W_GET, W_SIG, W_FENCE, W_ATOMIC, W_BCAST, W_WAIT, W_TILE_AFF, W_TILE_TAB, W_PULL,
       W_RANKCOPY, W_PRODCONS, W_LL, W_COUNT };
static const char *names[W_COUNT] = {"put/put_signal", "get", "signals", "int_p+fence",
                                     "atomics", "broadcast", "wait/notify", "tiles affine",
                                     "tiles table", "tile pull", "rank copy", "producer/consumer",
                                     "LL"};

static const char *src =
    "#include <weft/device.cuh>\n"
    "#define PAT(r, e, i) ((unsigned char)(((i) * 2654435761ull ^ ((unsigned long long)(r) << 33) ^ ((e) << 17)) >> 7))\n"
    "#define TID (threadIdx.x)\n"
    "extern \"C\" __global__ void fill(unsigned char *p, unsigned long long n, int r, unsigned long long e) {\n"
    "  for (unsigned long long i = TID; i < n; i += blockDim.x) p[i] = PAT(r, e, i);\n"
    "}\n"
    /* put at granularity g into next's dst; then wait for prev's and check */
    "extern \"C\" __global__ void put(unsigned char *dst, const unsigned char *src, unsigned long long n,\n"
    "    unsigned long long *sig, unsigned long long e, int g, unsigned long long *wrong) {\n"
    "  int np = weft_n_pes(), me = weft_my_pe(), next = (me + 1) % np, prev = (me + np - 1) % np;\n"
    "  if (g == 0) { if (TID == 0) weft_putmem_signal(dst, src, n, sig, e, WEFT_SIGNAL_SET, next); }\n"
    "  else if (g == 1) { if (TID < 32) weft_putmem_signal_warp(dst, src, n, sig, e, WEFT_SIGNAL_SET, next); }\n"
    "  else if (g == 2) weft_putmem_signal_block(dst, src, n, sig, e, WEFT_SIGNAL_SET, next);\n"
    "  else { if (TID == 0) { weft_putmem_nbi(dst, src, n, next); weft_quiet(); weft_signal_op(sig, e, WEFT_SIGNAL_SET, next); } }\n"
    "  if (TID == 0) weft_signal_wait_until(sig, WEFT_CMP_GE, e);\n"
    "  __syncthreads();\n"
    "  for (unsigned long long i = TID; i < n; i += blockDim.x)\n"
    "    if (((volatile unsigned char *)dst)[i] != PAT(prev, e, i)) atomicAdd(wrong, 1ull);\n"
    "  weft_barrier_all_block();\n"
    "}\n"
    /* get from next at granularity g (its sym holds its pattern after the previous barrier) */
    "extern \"C\" __global__ void get(unsigned char *dst, const unsigned char *sym, unsigned long long n,\n"
    "    unsigned long long e, int g, unsigned long long *wrong) {\n"
    "  int np = weft_n_pes(), next = (weft_my_pe() + 1) % np;\n"
    "  if (g == 0) { if (TID == 0) weft_getmem(dst, sym, n, next); }\n"
    "  else if (g == 1) { if (TID < 32) weft_getmem_warp(dst, sym, n, next); }\n"
    "  else weft_getmem_block(dst, sym, n, next);\n"
    "  __syncthreads();\n"
    "  for (unsigned long long i = TID; i < n; i += blockDim.x) if (dst[i] != PAT(next, e, i)) atomicAdd(wrong, 1ull);\n"
    "  weft_barrier_all_block();\n"
    "}\n"
    /* signals: sig[0] gets ADD (me+1) from everyone, sig[1+r] gets SET e from r */
    "extern \"C\" __global__ void signals(unsigned long long *sig, unsigned long long e, unsigned long long *wrong) {\n"
    "  int np = weft_n_pes(), me = weft_my_pe();\n"
    "  if (TID == 0) {\n"
    "    for (int p = 0; p < np; p++) { weft_signal_op(sig, me + 1, WEFT_SIGNAL_ADD, p); weft_signal_op(sig + 1 + me, e, WEFT_SIGNAL_SET, p); }\n"
    "    unsigned long long total = e * (unsigned long long)np * (np + 1) / 2;\n"
    "    weft_signal_wait_until(sig, WEFT_CMP_GE, total);\n"
    "    for (int p = 0; p < np; p++) weft_signal_wait_until(sig + 1 + p, WEFT_CMP_EQ, e);\n"
    "    unsigned long long v = weft_ld_acquire(sig);\n"
    "    if (v != total) atomicAdd(wrong, 1ull);\n"
    "    weft_signal_wait_until(sig, WEFT_CMP_LE, total); weft_signal_wait_until(sig, WEFT_CMP_LT, total + 1);\n"
    "    weft_signal_wait_until(sig, WEFT_CMP_GT, total - 1); weft_signal_wait_until(sig, WEFT_CMP_NE, total + 7);\n"
    "  }\n"
    "  weft_barrier_all_block();\n"
    "}\n"
    /* int_p words to next, fence, relaxed flag: next must see every word once it sees the flag */
    "extern \"C\" __global__ void fence_order(int *words, unsigned long long *flag, int count, unsigned long long e,\n"
    "    unsigned long long *wrong) {\n"
    "  int np = weft_n_pes(), me = weft_my_pe(), next = (me + 1) % np, prev = (me + np - 1) % np;\n"
    "  if (TID == 0) {\n"
    "    for (int i = 0; i < count; i++) weft_int_p(words + i, (int)(e * 1000003u + me * 7919 + i), next);\n"
    "    weft_fence();\n"
    "    *(volatile unsigned long long *)weft_remote_ptr(flag, next) = e;\n"
    "    weft_signal_wait_until(flag, WEFT_CMP_EQ, e);\n"
    "    for (int i = 0; i < count; i++) if (((volatile int *)words)[i] != (int)(e * 1000003u + prev * 7919 + i)) atomicAdd(wrong, 1ull);\n"
    "  }\n"
    "  weft_barrier_all_block();\n"
    "}\n"
    /* every thread of every rank: atomic adds to rank 0's counter; a CAS lock guarding a plain counter */
    "extern \"C\" __global__ void atomics(unsigned long long *ctr, unsigned long long *lock, unsigned long long *plain, int reps) {\n"
    "  for (int i = 0; i < reps; i++) weft_atomic_add((unsigned long long *)weft_remote_ptr(ctr, 0), 1);\n"
    "  if (TID == 0) {\n"
    "    unsigned long long *l = (unsigned long long *)weft_remote_ptr(lock, 0);\n"
    "    volatile unsigned long long *c = (volatile unsigned long long *)weft_remote_ptr(plain, 0);\n"
    "    for (int i = 0; i < reps; i++) {\n"
    "      unsigned long long t0 = weft_globaltimer();\n" /* bounded: a lost unlock must not hang */
    "      while (weft_atomic_cas(l, 0, 1) != 0) if (weft_globaltimer() - t0 > 10000000000ull) { printf(\"cas lock stuck\\n\"); asm(\"trap;\"); }\n"
    "      *c = *c + 1;\n"
    "      weft_fence();\n"
    "      weft_atomic_cas(l, 1, 0);\n"
    "    }\n"
    "  }\n"
    "  weft_barrier_all_block();\n"
    "}\n"
    "extern \"C\" __global__ void bcast(unsigned char *dst, const unsigned char *src, unsigned long long n, int root,\n"
    "    unsigned long long e, unsigned long long *wrong) {\n"
    "  weft_broadcast_block(dst, src, n, root);\n"
    "  for (unsigned long long i = TID; i < n; i += blockDim.x) if (dst[i] != PAT(root, e, i)) atomicAdd(wrong, 1ull);\n"
    "  weft_barrier_all_block();\n"
    "}\n"
    /* wait/notify/consume_token: put data to every peer, notify sig[me]; wait all; read through the token */
    "extern \"C\" __global__ void waitnotify(unsigned char *slots, const unsigned char *src, int bytes,\n"
    "    unsigned long long *sig, unsigned long long e, unsigned long long *wrong) {\n"
    "  int np = weft_n_pes(), me = weft_my_pe();\n"
    "  for (int p = 0; p < np; p++) weft_putmem_block(slots + me * bytes, src, bytes, p);\n"
    "  if (TID == 0) { weft_fence(); for (int p = 0; p < np; p++) weft_notify(sig + me, e, WEFT_SIGNAL_SET, p); }\n"
    "  unsigned long long tok = 0;\n"
    "  if (TID == 0) tok = weft_wait(sig, np, e);\n"
    "  __syncthreads();\n"
    "  unsigned char *s = (unsigned char *)weft_consume_token(slots, tok);\n"
    "  for (int i = TID; i < np * bytes; i += blockDim.x) if (((volatile unsigned char *)s)[i] != PAT(i / bytes, e, i % bytes)) atomicAdd(wrong, 1ull);\n"
    "  weft_barrier_all_block();\n"
    "}\n"
    /* tiles: each rank owns rows [me*R/np, ...); pushes its tiles to every peer, notifies the tile's signal\n"
       there; waits for all tiles; checks the whole matrix. map: affine or table. */
    "extern \"C\" __global__ void tiles(int *mat, const int *mine, unsigned long long *sigs, weft_tile_map_t map,\n"
    "    int R, int C, int T, unsigned long long base, unsigned long long e, unsigned long long *wrong) {\n"
    "  int np = weft_n_pes(), me = weft_my_pe(), tc = C / T, ntiles = (R / T) * tc;\n"
    "  for (int t = 0; t < ntiles; t++) {\n"
    "    if (weft_tile_rank(&map, t) != me) continue;\n"
    "    weft_tile_t tl = {(long long)(t / tc) * T, (long long)(t % tc) * T, T, T, C, 4};\n"
    "    for (int p = 0; p < np; p++) {\n"
    "      weft_tile_push_data_block(mat, mine, tl, p);\n"
    "      if (TID == 0) { weft_fence(); weft_peer_tile_notify(sigs, &map, t, p); }\n"
    "    }\n"
    "  }\n"
    "  if (TID == 0) for (int t = 0; t < ntiles; t++) weft_peer_tile_wait(sigs, &map, t, base + 1);\n"
    "  __syncthreads();\n"
    "  for (int i = TID; i < R * C; i += blockDim.x) {\n"
    "    int t = (i / C / T) * tc + (i % C) / T;\n"
    "    int want = (int)(e * 7777u) ^ (weft_tile_rank(&map, t) << 20) ^ i;\n"
    "    if (((volatile int *)mat)[i] != want) atomicAdd(wrong, 1ull);\n"
    "  }\n"
    "  weft_barrier_all_block();\n"
    "}\n"
    /* tile pull and rank copy: after tiles(), every rank's mat is complete; pull next's tiles into a local\n"
       matrix, and copy next's row chunk whole */
    "extern \"C\" __global__ void pull(int *local, int *mat, int R, int C, int T, unsigned long long e,\n"
    "    weft_tile_map_t map, unsigned long long *wrong, unsigned long long *wrong2) {\n"
    "  int np = weft_n_pes(), next = (weft_my_pe() + 1) % np, tc = C / T, ntiles = (R / T) * tc;\n"
    "  for (int t = 0; t < ntiles; t++) {\n"
    "    weft_tile_t tl = {(long long)(t / tc) * T, (long long)(t % tc) * T, T, T, C, 4};\n"
    "    weft_tile_pull_data_block(local, mat, tl, next);\n"
    "  }\n"
    "  for (int i = TID; i < R * C; i += blockDim.x) {\n"
    "    int t = (i / C / T) * tc + (i % C) / T;\n"
    "    if (local[i] != ((int)(e * 7777u) ^ (weft_tile_rank(&map, t) << 20) ^ i)) atomicAdd(wrong, 1ull);\n"
    "    local[i] = 0;\n"
    "  }\n"
    "  weft_barrier_all_block();\n" /* nobody pulls from my mat any more: poison the chunk I copy */
    "  unsigned long long chunk = (unsigned long long)(R * C / np) * 4, off = chunk * next;\n"
    "  for (unsigned long long i = off / 4 + TID; i < (off + chunk) / 4; i += blockDim.x) mat[i] = 0x5a5a5a5a;\n"
    "  __syncthreads();\n"
    "  weft_rank_copy_data_block(mat, off, chunk, next);\n"
    "  for (unsigned long long i = off / 4 + TID; i < (off + chunk) / 4; i += blockDim.x) {\n"
    "    int t = ((int)i / C / T) * tc + ((int)i % C) / T;\n"
    "    if (((volatile int *)mat)[i] != ((int)(e * 7777u) ^ (weft_tile_rank(&map, t) << 20) ^ (int)i)) atomicAdd(wrong2, 1ull);\n"
    "  }\n"
    "  weft_barrier_all_block();\n"
    "}\n"
    /* one GPU: block 0 produces tiles into buf and notifies; block 1 waits per tile and checks */
    "extern \"C\" __global__ void prodcons(int *buf, unsigned long long *sigs, int ntiles, int tile_elems,\n"
    "    unsigned long long base, unsigned long long e, unsigned long long *wrong) {\n"
    "  weft_tile_map_t map = weft_tile_map_affine(1, 0, ntiles);\n"
    "  if (blockIdx.x == 0) {\n"
    "    for (int t = ntiles - 1; t >= 0; t--) {\n"
    "      for (int i = TID; i < tile_elems; i += blockDim.x) buf[t * tile_elems + i] = (int)(e * 31u) + t * tile_elems + i;\n"
    "      __syncthreads();\n"
    "      if (TID == 0) weft_producer_tile_notify(sigs, &map, t);\n"
    "    }\n"
    "  } else {\n"
    "    for (int t = 0; t < ntiles; t++) {\n"
    "      if (TID == 0) weft_consumer_tile_wait(sigs, &map, t, base + 1);\n"
    "      __syncthreads();\n"
    "      for (int i = TID; i < tile_elems; i += blockDim.x)\n"
    "        if (((volatile int *)buf)[t * tile_elems + i] != (int)(e * 31u) + t * tile_elems + i) atomicAdd(wrong, 1ull);\n"
    "    }\n"
    "  }\n"
    "}\n"
    "extern \"C\" __global__ void ll(unsigned char *llbuf, const unsigned char *src, unsigned char *out,\n"
    "    unsigned long long n, unsigned long long e, unsigned long long *wrong) {\n"
    "  int np = weft_n_pes(), me = weft_my_pe(), next = (me + 1) % np, prev = (me + np - 1) % np;\n"
    "  weft_ll_push_block(llbuf, src, n, (unsigned)e, next);\n"
    "  weft_ll_recv_block(out, llbuf, n, (unsigned)e);\n"
    "  for (unsigned long long i = TID; i < n; i += blockDim.x) if (out[i] != PAT(prev, e, i)) atomicAdd(wrong, 1ull);\n"
    "  weft_barrier_all_block();\n"
    "}\n"
    /* compiled (so ptxas checks the PTX), never launched: multicast is off on these machines */
    "extern \"C\" __global__ void multimem_compile_only(float *mc, void *mcb) {\n"
    "  float4 v = weft_multimem_ld_reduce_f32x4(mc); weft_multimem_st_f32x4(mc, v);\n"
    "  uint4 b = weft_multimem_ld_reduce_bf16x8(mcb); weft_multimem_st_bf16x8(mcb, b);\n"
    "}\n";

static weft_module_t *mod;

static void run(const char *name, unsigned grid, void **args) {
  weft_kernel_t *k = test_kernel(mod, name);
  weft_launch_config_t c = WEFT_LAUNCH_CONFIG_INIT;
  c.grid[0] = grid;
  c.block[0] = 256;
  OK(weft_kernel_launch(k, &c, args, NULL));
}

int main(void) {
  test_precompile(src, "test_primitives.cu");
  weft_comm_t *comm = test_init();
  unsigned long long seed = test_seed(comm);
  OK(weft_module_load(comm, src, "test_primitives.cu", NULL, 0, &mod));
  int np = comm->world, me = comm->rank;
  unsigned char *sym, *llbuf, *slots;
  int *mat, *words, *pcbuf;
  unsigned long long *sig, *sigs, *tsigs, *ctr, *lock, *plain, *flag;
  OK(weft_malloc(comm, MAXN + 64, (void **)&sym));
  OK(weft_malloc(comm, 2 * MAXN, (void **)&llbuf));
  OK(weft_malloc(comm, 64 * 4096, (void **)&slots));
  OK(weft_malloc(comm, MAT_R * MAT_C * 4, (void **)&mat));
  OK(weft_malloc(comm, 4096 * 4, (void **)&words));
  OK(weft_malloc(comm, 8, (void **)&sig));
  OK(weft_malloc(comm, 8 * 80, (void **)&sigs));
  OK(weft_malloc(comm, 8 * 1024, (void **)&tsigs));
  OK(weft_malloc(comm, 8, (void **)&ctr));
  OK(weft_malloc(comm, 8, (void **)&lock));
  OK(weft_malloc(comm, 8, (void **)&plain));
  OK(weft_malloc(comm, 8, (void **)&flag));
  CUdeviceptr local, out, wrong, mine, pcsig, tab_sig, tab_rank, pbuf;
  CU(cuMemAlloc(&local, MAXN + 64));
  CU(cuMemAlloc(&out, MAXN));
  CU(cuMemAlloc(&wrong, 8 * W_COUNT));
  CU(cuMemsetD8(wrong, 0, 8 * W_COUNT));
  CU(cuMemAlloc(&mine, MAT_R * MAT_C * 4));
  CU(cuMemAlloc(&pcsig, 8 * 64));
  CU(cuMemsetD8(pcsig, 0, 8 * 64));
  CU(cuMemAlloc(&pbuf, 64 * 1024 * 4));
  pcbuf = (int *)(uintptr_t)pbuf;
  int ntiles = (MAT_R / TILE) * (MAT_C / TILE);
  CU(cuMemAlloc(&tab_sig, 4 * ntiles));
  CU(cuMemAlloc(&tab_rank, 4 * ntiles));
  unsigned long long *w = (unsigned long long *)(uintptr_t)wrong;
  /* The same random sequence on every rank (sizes must agree); rank data differs by PAT. */
  unsigned long long x = (seed / 1000003ull) | 1;
  int rounds = 6;
  unsigned long long tile_base_aff = 0, tile_base_tab = 0, pc_base = 0;
  for (unsigned long long e = 1; e <= (unsigned long long)rounds; e++) {
    unsigned long long n = 1 + test_rand(&x) % (e < 3 ? 5000 : MAXN);
    unsigned long long off = test_rand(&x) % 17;
    int g = (int)((e - 1) % 4);
    unsigned char *dst = sym + off, *srcp = (unsigned char *)(uintptr_t)local + off;
    unsigned long long *wp = w + W_PUT;
    void *fa[] = {&srcp, &n, &me, &e};
    run("fill", 1, fa);
    CU(cuMemsetD8((CUdeviceptr)(uintptr_t)dst, 0xEE, n)); /* poison, finished before peers may put */
    CU(cuStreamSynchronize(NULL));
    OK(weft_comm_barrier(comm));
    void *pa[] = {&dst, &srcp, &n, &sig, &e, &g, &wp};
    run("put", 1, pa);
    /* get: fill my sym with my pattern, barrier, pull next's */
    void *fs[] = {&dst, &n, &me, &e};
    run("fill", 1, fs);
    OK(weft_stream_barrier(comm, NULL));
    unsigned char *o = (unsigned char *)(uintptr_t)out;
    int gg = g % 3;
    unsigned long long *wg = w + W_GET;
    CU(cuMemsetD8(out, 0xEE, n));
    void *ga[] = {&o, &dst, &n, &e, &gg, &wg};
    run("get", 1, ga);
    unsigned long long *ws = w + W_SIG;
    void *sa[] = {&sigs, &e, &ws};
    run("signals", 1, sa);
    int count = 1 + (int)(test_rand(&x) % 4000);
    unsigned long long *wf = w + W_FENCE;
    void *fo[] = {&words, &flag, &count, &e, &wf};
    run("fence_order", 1, fo);
    /* broadcast from a rotating root */
    int root = (int)(e % (unsigned long long)np);
    unsigned long long bn = 1 + test_rand(&x) % 100000;
    unsigned long long *wb = w + W_BCAST;
    void *fb[] = {&srcp, &bn, &me, &e};
    run("fill", 1, fb);
    CU(cuMemsetD8((CUdeviceptr)(uintptr_t)sym, 0xEE, bn));
    OK(weft_stream_barrier(comm, NULL));
    void *ba[] = {&sym, &srcp, &bn, &root, &e, &wb};
    run("bcast", 1, ba);
    int bytes = 1 + (int)(test_rand(&x) % 4000);
    unsigned long long bb = (unsigned long long)bytes;
    void *fw[] = {&srcp, &bb, &me, &e};
    run("fill", 1, fw);
    unsigned long long *ww = w + W_WAIT;
    unsigned long long *nsig = sigs + 16;
    void *wa2[] = {&slots, &srcp, &bytes, &nsig, &e, &ww};
    run("waitnotify", 1, wa2);
    /* tiles: my tile source holds the global pattern for my tiles */
    {
      int R = MAT_R, C = MAT_C, T = TILE;
      int *hm = malloc(sizeof(int) * R * C);
      for (int i = 0; i < R * C; i++) hm[i] = (int)(e * 7777u) ^ 0 ^ i; /* owner bits added below */
      /* affine: owner = t / (ntiles / np); table: a random owner and a random signal */
      weft_tile_map_t aff = weft_tile_map_affine(2, 0, (ntiles + np - 1) / np);
      int *ts = malloc(4 * ntiles), *tr = malloc(4 * ntiles);
      for (int t = 0; t < ntiles; t++) ts[t] = t, tr[t] = (int)(test_rand(&x) % (unsigned long long)np);
      for (int t = ntiles - 1; t > 0; t--) { /* shuffle the signal table */
        int j = (int)(test_rand(&x) % (unsigned long long)(t + 1)), v = ts[t];
        ts[t] = ts[j], ts[j] = v;
      }
      CU(cuMemcpyHtoD(tab_sig, ts, 4 * ntiles));
      CU(cuMemcpyHtoD(tab_rank, tr, 4 * ntiles));
      weft_tile_map_t tab = weft_tile_map_table((const int *)(uintptr_t)tab_sig, (const int *)(uintptr_t)tab_rank);
      for (int which = 0; which < 2; which++) {
        weft_tile_map_t *m = which ? &tab : &aff;
        for (int i = 0; i < R * C; i++) {
          int t = (i / C / T) * (C / T) + (i % C) / T;
          int owner = which ? tr[t] : t / aff.tiles_per_rank;
          hm[i] = (int)(e * 7777u) ^ (owner << 20) ^ i;
        }
        CU(cuMemcpyHtoD(mine, hm, sizeof(int) * R * C));
        CU(cuMemsetD8((CUdeviceptr)(uintptr_t)mat, 0xEE, sizeof(int) * R * C));
        OK(weft_stream_barrier(comm, NULL));
        unsigned long long *sg = tsigs + (which ? 512 : 0);
        /* each signal collects one notify per covered tile per round: affine 2 tiles, table 1 */
        unsigned long long base = which ? tile_base_tab : tile_base_aff;
        unsigned long long per = which ? 1 : 2;
        unsigned long long expect_base = base + per - 1;
        unsigned long long *wt = w + (which ? W_TILE_TAB : W_TILE_AFF);
        void *ta[] = {&mat, &mine, &sg, m, &R, &C, &T, &expect_base, &e, &wt};
        run("tiles", 1, ta);
        if (which) tile_base_tab += per; else tile_base_aff += per;
        if (which) {
          unsigned long long *wpl = w + W_PULL, *wrc = w + W_RANKCOPY;
          int *lm = (int *)(uintptr_t)mine;
          void *pl[] = {&lm, &mat, &R, &C, &T, &e, m, &wpl, &wrc};
          run("pull", 1, pl);
        }
      }
      free(hm);
      free(ts);
      free(tr);
    }
    /* producer/consumer on one GPU: 2 blocks */
    {
      int nt = 32, te = 1024;
      unsigned long long *wpc = w + W_PRODCONS, *ps = (unsigned long long *)(uintptr_t)pcsig;
      unsigned long long b = pc_base;
      void *pc[] = {&pcbuf, &ps, &nt, &te, &b, &e, &wpc};
      run("prodcons", 2, pc);
      pc_base += 1;
    }
    /* LL: n rounded to 8 bytes */
    {
      unsigned long long ln = ((1 + test_rand(&x) % (MAXN / 2)) + 7) & ~7ull;
      unsigned char *lsrc = (unsigned char *)(uintptr_t)local;
      void *fl[] = {&lsrc, &ln, &me, &e};
      run("fill", 1, fl);
      unsigned long long *wl = w + W_LL;
      void *la[] = {&llbuf, &lsrc, &o, &ln, &e, &wl};
      run("ll", 1, la);
    }
    OK(weft_stream_synchronize(comm, NULL));
    printf("[%d] round %llu: n %llu off %llu granularity %d ok so far\n", me, e, n, off, g);
  }
  /* atomics: 256 threads x 100 adds from every rank; CAS lock x 100 per rank */
  int reps = 100;
  void *aa[] = {&ctr, &lock, &plain, &reps};
  run("atomics", 1, aa);
  OK(weft_stream_synchronize(comm, NULL));
  unsigned long long hw[W_COUNT];
  CU(cuMemcpyDtoH(hw, wrong, sizeof hw));
  if (me == 0) {
    unsigned long long c, pl;
    CU(cuMemcpyDtoH(&c, (CUdeviceptr)(uintptr_t)ctr, 8));
    CU(cuMemcpyDtoH(&pl, (CUdeviceptr)(uintptr_t)plain, 8));
    if (c != (unsigned long long)np * 256 * reps) hw[W_ATOMIC]++, printf("[0] atomic_add: %llu, want %d\n", c, np * 256 * reps);
    if (pl != (unsigned long long)np * reps) hw[W_ATOMIC]++, printf("[0] cas lock: %llu, want %d\n", pl, np * reps);
  }
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
