/*
 * test_alltoall.c — weft_alltoall and weft_alltoallv bit for bit, every byte checked on the host
 * against data the host computes:
 *   - SM, LL and AUTO in turn (LL where the chunks fit it);
 *   - AllToAll from 4 B to 64 MB per rank, exact and odd counts, every element size, unaligned
 *     buffers, a different recvbuf address on every rank;
 *   - AllToAllv with random per-pair counts from one matrix that every rank draws alike (zeros
 *     included; all zero; a rank that takes no part and passes NULL buffers), each rank's chunks
 *     in its own random order with gaps;
 *   - counts that disagree: WEFT_STATUS_MISMATCH on the two ranks of the pair and success on the
 *     others, the smaller count moved, no hang, and the communicator usable after;
 *   - CUDA-graph capture of both calls (the count arrays scribbled over after capture) and 20
 *     replays, each moving new data;
 *   - 1,000 back-to-back calls of both with random per-rank host and GPU delays and no host
 *     synchronisation, each into its own area, checked at the end.
 * Data is drawn fresh each run (the seed is printed; WEFT_TEST_SEED replays it) and never holds
 * 0 or the poison byte, which fills every receive area before its call; afterwards everything
 * outside the chunks, GUARD bytes on either side included, must still be poison.
 */
// weft-test: ranks=2,4 timeout=600
#include "gpu_test.h"

#define POISON 0xEE
#define GUARD 256              /* poisoned bytes checked on either side of a receive layout */
#define MAX_BYTES (64u << 20)  /* per rank: the largest AllToAll */
#define CAP (MAX_BYTES + (1u << 20))
#define LOOP_CALLS 1000
#define LOOP_MAXC 512          /* elements per pair in the back-to-back calls */
#define MAXW WEFT_MAX_LOCAL_RANKS

static const char *src =
    "#include <weft/device.cuh>\n"
    "extern \"C\" __global__ void delay(unsigned long long ns) {\n"
    "  unsigned long long t0 = weft_globaltimer();\n"
    "  while (weft_globaltimer() - t0 < ns) {}\n"
    "}\n";

static const weft_algo_t algos[] = {WEFT_ALGO_SM, WEFT_ALGO_LL, WEFT_ALGO_AUTO};

/* every element size: 1, 2, 4, 8 bytes */
static const weft_dtype_t dts[] = {WEFT_DTYPE_UINT8, WEFT_DTYPE_FP16, WEFT_DTYPE_INT32,
                                   WEFT_DTYPE_FP64,  WEFT_DTYPE_BF16, WEFT_DTYPE_FP32};

static weft_comm_t *comm;
static int me, world;
static unsigned long long run_seed; /* the same on every rank */
static weft_kernel_t *k_delay;
static unsigned char *hsend, *hrecv; /* host images of the buffers, CAP bytes each */

/* One call as this rank makes it. */
typedef struct call {
  int v; /* 0: weft_alltoall(count), 1: weft_alltoallv */
  weft_dtype_t dt;
  weft_algo_t algo;
  size_t count;                                            /* weft_alltoall */
  size_t scount[MAXW], sdispl[MAXW], rcount[MAXW], rdispl[MAXW]; /* elements */
  size_t arrive[MAXW]; /* elements that land from each rank: rcount, or fewer where it sends fewer */
  size_t soff, roff;   /* bytes: where the send and receive layouts start in their areas */
  size_t sspan, rspan; /* bytes the layouts cover */
  unsigned id;         /* whose data it moves */
} call_t;

static unsigned long long mix(unsigned long long x) {
  x ^= x >> 33, x *= 0xff51afd7ed558ccdull, x ^= x >> 33, x *= 0xc4ceb9fe1a85ec53ull, x ^= x >> 33;
  return x;
}

/* Bytes [0, n) of the chunk rank q sends rank p in call id, never 0 nor POISON; a shorter chunk
 * is a prefix of a longer one. */
static void gen(unsigned char *out, size_t n, int q, int p, unsigned id) {
  unsigned long long key = mix(run_seed ^ mix((unsigned long long)id << 16 ^ (unsigned long long)q << 8 ^ (unsigned)p));
  for (size_t w = 0; w * 8 < n; w++) {
    unsigned long long h = mix(key + w);
    for (size_t b = 0; b < 8 && w * 8 + b < n; b++) {
      unsigned v = (unsigned)(h >> (8 * b)) % 254 + 1; /* 1 .. 254, then POISON skipped */
      out[w * 8 + b] = (unsigned char)(v >= POISON ? v + 1 : v);
    }
  }
}

static size_t not_poison(const unsigned char *h, size_t n) {
  size_t w = 0;
  for (size_t i = 0; i < n; i++) w += h[i] != POISON;
  return w;
}

/* Wrong bytes of got[0, n) against the chunk q sent p in call id. */
static size_t wrong_chunk(const unsigned char *got, size_t n, int q, int p, unsigned id) {
  static unsigned char *want;
  static size_t cap;
  if (cap < n) {
    free(want);
    want = malloc(cap = n);
  }
  gen(want, n, q, p, id);
  if (!memcmp(got, want, n)) return 0;
  size_t w = 0;
  for (size_t i = 0; i < n; i++) w += got[i] != want[i];
  return w;
}

static size_t elem_of(const call_t *c) { return weft_dtype_size(c->dt); }

/* Chunks of count[q] elements in a random order, each after a gap of 0 to 3 elements; returns
 * the elements covered. */
static size_t layout(const size_t *count, size_t *displ, unsigned long long *y) {
  int order[MAXW];
  for (int i = 0; i < world; i++) order[i] = i;
  for (int i = world - 1; i > 0; i--) {
    int j = (int)(test_rand(y) % (unsigned)(i + 1)), t = order[i];
    order[i] = order[j], order[j] = t;
  }
  size_t off = 0;
  for (int i = 0; i < world; i++) {
    off += test_rand(y) % 4;
    displ[order[i]] = off;
    off += count[order[i]];
  }
  return off;
}

/* The algorithms in turn by call id; LL only where every chunk fits it (largest: the largest
 * chunk in bytes, the same on every rank). */
static weft_algo_t pick_algo(unsigned id, size_t largest) {
  weft_algo_t a = algos[id % 3];
  return a == WEFT_ALGO_LL && largest > WEFT_ALLTOALL_LL_MAX_BYTES ? WEFT_ALGO_SM : a;
}

/* y: this rank's generator (offsets differ between ranks; unaligned when odd). */
static void make_alltoall(call_t *c, size_t count, weft_dtype_t dt, unsigned id, int odd,
                          unsigned long long *y) {
  memset(c, 0, sizeof *c);
  c->dt = dt, c->count = count, c->id = id;
  c->algo = pick_algo(id, count * weft_dtype_size(dt));
  for (int p = 0; p < world; p++) {
    c->scount[p] = c->rcount[p] = c->arrive[p] = count;
    c->sdispl[p] = c->rdispl[p] = (size_t)p * count;
  }
  c->sspan = c->rspan = (size_t)world * count * elem_of(c);
  c->soff = odd ? test_rand(y) % 64 : 0;
  c->roff = GUARD + (odd ? test_rand(y) % 64 : 0);
}

/* m[q * world + p]: the elements rank q sends rank p, the same matrix on every rank. */
static void make_alltoallv(call_t *c, const size_t *m, weft_dtype_t dt, unsigned id,
                           unsigned long long *y) {
  memset(c, 0, sizeof *c);
  c->v = 1, c->dt = dt, c->id = id;
  size_t largest = 0;
  for (int i = 0; i < world * world; i++) largest = m[i] > largest ? m[i] : largest;
  c->algo = pick_algo(id, largest * weft_dtype_size(dt));
  for (int p = 0; p < world; p++) {
    c->scount[p] = m[(size_t)me * world + p];
    c->rcount[p] = c->arrive[p] = m[(size_t)p * world + me];
  }
  c->sspan = layout(c->scount, c->sdispl, y) * elem_of(c);
  c->rspan = layout(c->rcount, c->rdispl, y) * elem_of(c);
  c->soff = test_rand(y) % 64;
  c->roff = GUARD + test_rand(y) % 64;
}

/* A count matrix: zero with probability 1/5, else 1 .. maxc (x: the shared generator). */
static void draw_matrix(size_t *m, size_t maxc, unsigned long long *x) {
  for (int i = 0; i < world * world; i++) m[i] = test_rand(x) % 5 == 0 ? 0 : 1 + test_rand(x) % maxc;
}

/* This rank's send image of c at h: filler in the gaps, its chunks in place. */
static void fill_send(const call_t *c, unsigned char *h) {
  memset(h, 0x5A, c->soff + c->sspan);
  for (int p = 0; p < world; p++)
    gen(h + c->soff + c->sdispl[p] * elem_of(c), c->scount[p] * elem_of(c), me, p, c->id);
}

/* Enqueues c with its areas at send and recv; a rank with nothing to send (receive) passes NULL. */
static void enqueue(const call_t *c, unsigned char *send, unsigned char *recv, CUstream s) {
  send += c->soff, recv += c->roff;
  if (!c->v) {
    OK(weft_alltoall(comm, send, recv, c->count, c->dt, c->algo, s));
    return;
  }
  size_t ns = 0, nr = 0;
  for (int p = 0; p < world; p++) ns += c->scount[p], nr += c->rcount[p];
  OK(weft_alltoallv(comm, ns ? send : NULL, c->scount, c->sdispl, nr ? recv : NULL, c->rcount,
                    c->rdispl, c->dt, c->algo, s));
}

/* Bytes of the receive area h (host image, poisoned before the call) that are wrong: each
 * chunk's against its sender's data, then, with the chunks blanked to POISON, the layout and
 * GUARD bytes on either side against the poison. */
static size_t check_recv(const call_t *c, unsigned char *h) {
  size_t wrong = 0, elem = elem_of(c);
  for (int q = 0; q < world; q++) {
    unsigned char *r = h + c->roff + c->rdispl[q] * elem;
    wrong += wrong_chunk(r, c->arrive[q] * elem, q, me, c->id);
    memset(r, POISON, c->arrive[q] * elem);
  }
  return wrong + not_poison(h + c->roff - GUARD, c->rspan + 2 * GUARD);
}

/* One call on its own, at the start of both buffers: upload, poison, call, synchronise (the
 * status goes to *st), download, check. Returns the wrong bytes. */
static size_t run_one(const call_t *c, unsigned char *send, unsigned char *recv, CUstream s,
                      weft_status_t *st) {
  size_t rtot = c->roff + c->rspan + GUARD;
  fill_send(c, hsend);
  CU(cuMemcpyHtoDAsync((CUdeviceptr)(uintptr_t)send, hsend, c->soff + c->sspan, s));
  CU(cuMemsetD8Async((CUdeviceptr)(uintptr_t)recv, POISON, rtot, s));
  enqueue(c, send, recv, s);
  *st = weft_stream_synchronize(comm, s);
  CU(cuMemcpyDtoH(hrecv, (CUdeviceptr)(uintptr_t)recv, rtot));
  return check_recv(c, hrecv);
}

static const char *algo_name(weft_algo_t a) {
  return a == WEFT_ALGO_SM ? "SM" : a == WEFT_ALGO_LL ? "LL" : "auto";
}

static int report(const char *what, const call_t *c, size_t wrong, weft_status_t st) {
  if (!wrong && st == WEFT_STATUS_SUCCESS) return 0;
  printf("[%d] FAIL %s (%s, %s, send +%zu, recv +%zu, %zu + %zu bytes): %zu wrong bytes, %s: %s\n", me,
         what, c->v ? "alltoallv" : "alltoall", algo_name(c->algo), c->soff,
         c->roff - GUARD, c->sspan, c->rspan, wrong, weft_get_error_string(st),
         weft_comm_get_last_error(comm));
  return 1;
}

int main(void) {
  setenv("WEFT_HEAP_SIZE", "1G", 0);
  test_precompile(src, "test_alltoall.cu");
  comm = test_init();
  unsigned long long seed = test_seed(comm);
  run_seed = seed / 1000003ull;
  me = comm->rank, world = comm->world;
  weft_module_t *mod;
  OK(weft_module_load(comm, src, "test_alltoall.cu", NULL, 0, &mod));
  k_delay = test_kernel(mod, "delay");
  unsigned char *recv, *send;
  OK(weft_malloc(comm, CAP, (void **)&recv));
  CUdeviceptr sendd;
  CU(cuMemAlloc(&sendd, CAP));
  send = (unsigned char *)(uintptr_t)sendd;
  hsend = malloc(CAP), hrecv = malloc(CAP);
  CUstream s;
  CU(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
  static size_t m[MAXW * MAXW];
  static call_t c;
  unsigned long long x = run_seed | 1; /* the same on every rank: counts agree */
  unsigned long long y = seed | 1;     /* this rank's: offsets, layouts, delays */
  unsigned id = 0;
  int fails = 0;
  weft_status_t st;

  /* AllToAll: 4 B .. 64 MB per rank, each also with an odd count and unaligned buffers. */
  {
    int i = 0, f = 0;
    for (size_t total = 4; total <= MAX_BYTES; total *= 4)
      for (int odd = 0; odd < 2; odd++, i++) {
        weft_dtype_t dt = dts[i % 6];
        size_t elem = weft_dtype_size(dt), count = total / (size_t)world / elem;
        if (odd) count += 1 + test_rand(&x) % 7;
        if (count == 0) count = 1;
        make_alltoall(&c, count, dt, ++id, odd, &y);
        size_t wrong = run_one(&c, send, recv, s, &st);
        f += report("alltoall sweep", &c, wrong, st);
      }
    OK(weft_alltoall(comm, NULL, NULL, 0, WEFT_DTYPE_FP32, WEFT_ALGO_AUTO, s)); /* 0: nothing */
    printf("[%d] alltoall 4 B .. 64 MB per rank, every element size: %s\n", me, f ? "FAILED" : "ok");
    fails += f;
  }

  /* AllToAllv: random matrices, from 1 to 1M elements per pair at the most. */
  {
    int f = 0;
    for (int round = 0; round < 48; round++) {
      weft_dtype_t dt = dts[test_rand(&x) % 6];
      size_t elem = weft_dtype_size(dt), maxc = (size_t)1 << (round % 21);
      size_t fit = (MAX_BYTES / 2) / ((size_t)world * elem); /* every layout within the buffers */
      draw_matrix(m, maxc < fit ? maxc : fit, &x);
      if (round == 0) memset(m, 0, sizeof m); /* nobody sends anything */
      if (round == 1 || round == 2) /* the last rank takes no part (NULL buffers) */
        for (int q = 0; q < world; q++)
          m[(size_t)q * world + world - 1] = m[(size_t)(world - 1) * world + q] = 0;
      make_alltoallv(&c, m, dt, ++id, &y);
      size_t wrong = run_one(&c, send, recv, s, &st);
      f += report("alltoallv random", &c, wrong, st);
    }
    printf("[%d] alltoallv, 48 random count matrices: %s\n", me, f ? "FAILED" : "ok");
    fails += f;
  }

  /* Counts that disagree: rank 0 sends rank 1 three elements more than rank 1 expects, and
   * expects two more from rank 1 than rank 1 sends. Ranks 0 and 1 must report a mismatch (under
   * LL each as the receiver of one of the two pairs), the others succeed; the smaller counts
   * land; nothing hangs; the next call works everywhere. Under SM, LL and AUTO (its chunks here
   * all in LL lines), then AUTO with rank 0's chunk for rank 1 over AUTO's LL limit while rank
   * 1 expects an LL-sized one (the sender stores, the receiver learns it from the header). */
  for (int a = 0; a < 4 && world >= 2; a++) {
    int f = 0;
    draw_matrix(m, 1000, &x);
    make_alltoallv(&c, m, WEFT_DTYPE_FP32, ++id, &y);
    c.algo = algos[a < 3 ? a : 2];
    if (me == 0) {
      c.scount[1] = a < 3 ? c.scount[1] + 3 : WEFT_ALLTOALL_LL_MAX_BYTES / 4 + 3;
      c.rcount[1] += 2; /* arrive[1] stays what rank 1 sends */
      c.sspan = layout(c.scount, c.sdispl, &y) * 4;
      c.rspan = layout(c.rcount, c.rdispl, &y) * 4;
    }
    size_t wrong = run_one(&c, send, recv, s, &st);
    weft_status_t want = me <= 1 ? WEFT_STATUS_MISMATCH : WEFT_STATUS_SUCCESS;
    const char *msg = weft_comm_get_last_error(comm);
    if (wrong || st != want || (me <= 1 && !strstr(msg, "alltoallv"))) {
      f++;
      printf("[%d] FAIL disagreeing counts (%s): %zu wrong bytes, %s (want %s): %s\n", me,
             algo_name(c.algo), wrong, weft_get_error_string(st), weft_get_error_string(want), msg);
    } else if (me <= 1) {
      printf("[%d] disagreeing counts (%s) reported: %s\n", me, algo_name(c.algo), msg);
    }
    make_alltoall(&c, 1234, WEFT_DTYPE_BF16, ++id, 1, &y);
    wrong = run_one(&c, send, recv, s, &st); /* (st read after the call, not as an argument beside it) */
    f += report("alltoall after a mismatch", &c, wrong, st);
    printf("[%d] disagreeing counts, %s%s: %s\n", me, algo_name(algos[a < 3 ? a : 2]),
           a == 3 ? " across the LL limit" : "", f ? "FAILED" : "ok");
    fails += f;
  }

  /* Graph: an AllToAll (LL) and an AllToAllv (SM) captured with the poisoning of their areas,
   * replayed 20 times with new data uploaded before each replay. The arrays the calls were
   * captured with are scribbled over after the capture: a replay must use the captured values. */
  {
    static call_t a, b, tmp;
    const size_t half = CAP / 2; /* b's areas */
    make_alltoall(&a, 3001, WEFT_DTYPE_FP16, ++id, 1, &y);
    draw_matrix(m, 5000, &x);
    make_alltoallv(&b, m, WEFT_DTYPE_INT32, ++id, &y);
    a.algo = WEFT_ALGO_LL, b.algo = WEFT_ALGO_SM;
    CUgraph g;
    CUgraphExec ge;
    CU(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL));
    CU(cuMemsetD8Async((CUdeviceptr)(uintptr_t)recv, POISON, a.roff + a.rspan + GUARD, s));
    CU(cuMemsetD8Async((CUdeviceptr)(uintptr_t)(recv + half), POISON, b.roff + b.rspan + GUARD, s));
    tmp = a;
    enqueue(&tmp, send, recv, s);
    memset(&tmp, 0xFF, sizeof tmp);
    tmp = b;
    enqueue(&tmp, send + half, recv + half, s);
    memset(&tmp, 0xFF, sizeof tmp);
    CU(cuStreamEndCapture(s, &g));
    CU(cuGraphInstantiateWithFlags(&ge, g, 0));
    size_t wrong = 0;
    for (int r = 0; r < 20; r++) {
      a.id = ++id, b.id = ++id;
      fill_send(&a, hsend);
      fill_send(&b, hsend + half);
      CU(cuMemcpyHtoDAsync((CUdeviceptr)(uintptr_t)send, hsend, a.soff + a.sspan, s));
      CU(cuMemcpyHtoDAsync((CUdeviceptr)(uintptr_t)(send + half), hsend + half, b.soff + b.sspan, s));
      CU(cuGraphLaunch(ge, s));
      OK(weft_stream_synchronize(comm, s));
      CU(cuMemcpyDtoH(hrecv, (CUdeviceptr)(uintptr_t)recv, a.roff + a.rspan + GUARD));
      wrong += check_recv(&a, hrecv);
      CU(cuMemcpyDtoH(hrecv, (CUdeviceptr)(uintptr_t)(recv + half), b.roff + b.rspan + GUARD));
      wrong += check_recv(&b, hrecv);
    }
    printf("[%d] graph capture, 20 replays: %zu wrong bytes\n", me, wrong);
    if (wrong) fails++;
    CU(cuGraphExecDestroy(ge));
    CU(cuGraphDestroy(g));
  }

  /* 1,000 back-to-back calls, each into its own area (so that all can be checked at the end):
   * random calls, dtypes and counts, random host and GPU delays per rank, no synchronisation. */
  {
    size_t slot = ((size_t)world * (LOOP_MAXC + 4) * 8 + 64 + 2 * GUARD + 255) & ~(size_t)255;
    int calls = (int)(CAP / slot < LOOP_CALLS ? CAP / slot : LOOP_CALLS);
    call_t *cs = malloc((size_t)calls * sizeof *cs);
    for (int i = 0; i < calls; i++) {
      weft_dtype_t dt = dts[test_rand(&x) % 6];
      if (test_rand(&x) % 2) {
        make_alltoall(&cs[i], 1 + test_rand(&x) % LOOP_MAXC, dt, ++id, 1, &y);
      } else {
        draw_matrix(m, LOOP_MAXC, &x);
        make_alltoallv(&cs[i], m, dt, ++id, &y);
      }
      fill_send(&cs[i], hsend + (size_t)i * slot);
    }
    CU(cuMemcpyHtoD(sendd, hsend, (size_t)calls * slot));
    CU(cuMemsetD8((CUdeviceptr)(uintptr_t)recv, POISON, (size_t)calls * slot));
    OK(weft_comm_barrier(comm));
    uint64_t t0 = weft_now_ns();
    for (int i = 0; i < calls; i++) {
      usleep((useconds_t)(test_rand(&y) % 1000));
      unsigned long long ns = test_rand(&y) % 30000;
      void *da[] = {&ns};
      weft_launch_config_t one = WEFT_LAUNCH_CONFIG_INIT;
      OK(weft_kernel_launch(k_delay, &one, da, s));
      enqueue(&cs[i], send + (size_t)i * slot, recv + (size_t)i * slot, s);
    }
    st = weft_stream_synchronize(comm, s);
    double secs = (double)(weft_now_ns() - t0) / 1e9;
    CU(cuMemcpyDtoH(hrecv, (CUdeviceptr)(uintptr_t)recv, (size_t)calls * slot));
    size_t wrong = 0;
    for (int i = 0; i < calls; i++) wrong += check_recv(&cs[i], hrecv + (size_t)i * slot);
    wrong += not_poison(hrecv, (size_t)calls * slot); /* nothing landed outside the chunks */
    printf("[%d] %d calls with stragglers in %.2f s: %s, %zu wrong bytes\n", me, calls, secs,
           weft_get_error_string(st), wrong);
    if (wrong || st != WEFT_STATUS_SUCCESS) fails++;
    free(cs);
  }

  CU(cuStreamDestroy(s));
  CU(cuMemFree(sendd));
  OK(weft_free(comm, recv));
  free(hsend), free(hrecv);
  weft_module_unload(mod);
  OK(weft_comm_destroy(comm));
  printf("[%d] %s\n", me, fails ? "FAILED" : "ok");
  return fails ? 1 : 0;
}
