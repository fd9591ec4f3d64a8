/*
 * bench_collectives.c — the machinery every collective suite shares (NCCL beside weft in the same
 * process and run, nccl-tests columns: see bench.h), and the suites `weft-bench allgather`,
 * `reduce_scatter`, `allreduce`, `alltoall` and `alltoallv`. For every size both ops are checked once on fresh data
 * (outputs poisoned first), then timed interleaved. Sizes are totals (the gathered array, the
 * reduced array, the scattered sendbuf), as nccl-tests prints them.
 */
#include <math.h>
#include <string.h>

#include <nccl.h>

#include "bench.h"

/* ---- shared by the collective suites (bench.h) --------------------------------------------- */

ncclComm_t bench_nccl_init(bench_t *b) {
  /* NCCL creates NVLink multicast objects unless told not to; weft keeps them off
   * (docs/architecture.md, "NVLink multicast is off"). */
  const char *mc = getenv("WEFT_ENABLE_MULTICAST");
  if (!mc || strcmp(mc, "1")) setenv("NCCL_NVLS_ENABLE", "0", 1);
  ncclUniqueId *ids = bench_calloc((size_t)b->world, sizeof *ids);
  if (b->rank == 0) NCCL_OK(ncclGetUniqueId(&ids[0]));
  OK(weft_bootstrap_allgather(b->comm->bootstrap, ids, sizeof *ids));
  ncclComm_t nc;
  NCCL_OK(ncclCommInitRank(&nc, b->world, ids[0], b->rank));
  free(ids);
  return nc;
}

weft_algo_t bench_parse_algo(const char *a) {
  static const struct {
    const char *name;
    weft_algo_t algo;
  } algos[] = {{"auto", WEFT_ALGO_AUTO}, {"ce", WEFT_ALGO_COPY_ENGINE}, {"sm", WEFT_ALGO_SM},
               {"ll", WEFT_ALGO_LL}, {"two_shot", WEFT_ALGO_TWO_SHOT},
               {"ring", WEFT_ALGO_RING}, {"seq", WEFT_ALGO_SEQUENTIAL}};
  if (!a) return WEFT_ALGO_AUTO;
  for (size_t i = 0; i < sizeof algos / sizeof algos[0]; i++)
    if (!strcmp(a, algos[i].name)) return algos[i].algo;
  fprintf(stderr, "weft-bench: unknown algorithm '%s' (-a takes", a);
  for (size_t i = 0; i < sizeof algos / sizeof algos[0]; i++) fprintf(stderr, " %s", algos[i].name);
  fprintf(stderr, ")\n");
  exit(2);
}

void bench_parse_dtype(const char *name, weft_dtype_t *wt, ncclDataType_t *nt) {
  static const struct {
    const char *name;
    weft_dtype_t w;
    ncclDataType_t n;
  } types[] = {{"uint8", WEFT_DTYPE_UINT8, ncclUint8}, {"int32", WEFT_DTYPE_INT32, ncclInt32},
               {"fp16", WEFT_DTYPE_FP16, ncclFloat16}, {"bf16", WEFT_DTYPE_BF16, ncclBfloat16},
               {"fp32", WEFT_DTYPE_FP32, ncclFloat32}, {"fp64", WEFT_DTYPE_FP64, ncclFloat64}};
  for (size_t i = 0; i < sizeof types / sizeof types[0]; i++)
    if (!strcmp(name, types[i].name)) {
      *wt = types[i].w;
      *nt = types[i].n;
      return;
    }
  fprintf(stderr, "weft-bench: unknown dtype '%s' (uint8 int32 fp16 bf16 fp32 fp64)\n", name);
  exit(2);
}

void bench_parse_op(const char *name, weft_red_op_t *wo, ncclRedOp_t *no) {
  /* weft_red_op_t and ncclRedOp_t list the operators in the same order */
  static const char *names[] = {"sum", "prod", "max", "min", "avg"};
  static const ncclRedOp_t nccl[] = {ncclSum, ncclProd, ncclMax, ncclMin, ncclAvg};
  for (int i = 0; i < WEFT_RED_OP_COUNT; i++)
    if (!strcmp(name ? name : "sum", names[i])) {
      *wo = (weft_red_op_t)i;
      *no = nccl[i];
      return;
    }
  fprintf(stderr, "weft-bench: -o takes sum, prod, max, min or avg, not '%s'\n", name);
  exit(2);
}

void bench_fill(void *h, size_t n, unsigned seed) {
  unsigned char *p = h;
  unsigned long long x = 0x9e3779b97f4a7c15ull ^ ((unsigned long long)seed << 17);
  for (size_t i = 0; i < n; i++) x ^= x << 13, x ^= x >> 7, x ^= x << 17, p[i] = (unsigned char)(x >> 24);
}

void bench_time_pairs(bench_t *b, bench_call_fn call, void *ctx, int in_place,
                      bench_coll_pair_t *p) {
  double us[4];
  bench_time_runs(b, in_place ? 4 : 2, call, ctx, 1, us);
  for (int f = 0; f <= in_place; f++) p[f].us_w = us[BENCH_WHICH(f, 0)], p[f].us_n = us[BENCH_WHICH(f, 1)];
}

void bench_call_pair_once(bench_t *b, bench_call_fn call, void *ctx, int in_place) {
  CU(cuStreamSynchronize(NULL));
  OK(weft_comm_barrier(b->comm));
  call(b, ctx, BENCH_WHICH(in_place, 0));
  call(b, ctx, BENCH_WHICH(in_place, 1));
  OK(weft_stream_synchronize(b->comm, b->stream));
}

/* What a row's JSON and the header name the run by: the algorithm, and the reduction operator
 * where -o gave one other than sum ("auto max"). */
static const char *bench_coll_variant(const bench_t *b) {
  static char v[64];
  const char *algo = b->opt.algo ? b->opt.algo : "auto";
  if (!b->opt.op || !strcmp(b->opt.op, "sum")) return algo;
  snprintf(v, sizeof v, "%s %s", algo, b->opt.op);
  return v;
}

void bench_coll_header(bench_t *b, const char *suite, int in_place) {
  if (b->rank) return;
  printf("#\n# %s, algorithm %s; size in bytes as nccl-tests prints it; times in us%s\n"
         "#%12s %12s %6s | %9s %8s %8s %6s | %9s %8s %8s %6s | %7s",
         suite, bench_coll_variant(b), in_place ? "; out of place, then in place" : "", "size",
         "count", "type", "weft", "algbw", "busbw", "#wrong", "nccl", "algbw", "busbw", "#wrong",
         "speedup");
  if (in_place)
    printf(" || %9s %8s %6s | %9s %8s %6s | %7s", "weft", "busbw", "#wrong", "nccl", "busbw",
           "#wrong", "speedup");
  printf("\n");
}

void bench_coll_row(bench_t *b, const char *suite, size_t bytes, size_t count, const char *type,
                    double bus_factor, const bench_coll_pair_t *oop, const bench_coll_pair_t *ip) {
  const bench_coll_pair_t *f[2] = {oop, ip};
  int ww[2] = {0, 0}, wn[2] = {0, 0};
  for (int k = 0; k < 2 && f[k]; k++) {
    b->wrong += f[k]->wrong_w;
    ww[k] = (int)bench_max_across_ranks(b, f[k]->wrong_w);
    wn[k] = (int)bench_max_across_ranks(b, f[k]->wrong_n);
  }
  if (b->rank) return;
  double aw = bytes / oop->us_w / 1e3, an = bytes / oop->us_n / 1e3;
  b->busbw_sum[0] += aw * bus_factor, b->busbw_sum[1] += an * bus_factor, b->busbw_rows++;
  char sw[16], sn[16];
  printf(" %12zu %12zu %6s | %9.2f %8.2f %8.2f %6s | %9.2f %8.2f %8.2f %6s | %7.2f", bytes, count,
         type, oop->us_w, aw, aw * bus_factor, bench_wrong_text(b, ww[0], sw), oop->us_n, an,
         an * bus_factor, bench_wrong_text(b, wn[0], sn), oop->us_n / oop->us_w);
  const char *k[13] = {"bytes", "weft_us", "weft_busbw", "nccl_us", "nccl_busbw", "speedup", "wrong"};
  double v[13] = {(double)bytes, oop->us_w, aw * bus_factor, oop->us_n, an * bus_factor,
                  oop->us_n / oop->us_w, bench_wrong_json(b, ww[0])};
  int nk = 7;
  if (ip) {
    double bw = bytes / ip->us_w / 1e3 * bus_factor, bn = bytes / ip->us_n / 1e3 * bus_factor;
    printf(" || %9.2f %8.2f %6s | %9.2f %8.2f %6s | %7.2f", ip->us_w, bw,
           bench_wrong_text(b, ww[1], sw), ip->us_n, bn, bench_wrong_text(b, wn[1], sn),
           ip->us_n / ip->us_w);
    const char *ki[] = {"ip_weft_us", "ip_weft_busbw", "ip_nccl_us", "ip_nccl_busbw", "ip_speedup",
                        "ip_wrong"};
    double vi[] = {ip->us_w, bw, ip->us_n, bn, ip->us_n / ip->us_w, bench_wrong_json(b, ww[1])};
    for (int i = 0; i < 6; i++) k[nk] = ki[i], v[nk++] = vi[i];
  }
  printf("\n");
  bench_json_row(b, suite, bench_coll_variant(b), nk, k, v);
}

/* ---- allgather ------------------------------------------------------------------------------- */

typedef struct ag_ctx {
  ncclComm_t nc;
  weft_algo_t algo;
  unsigned char *recv;     /* weft's, symmetric */
  CUdeviceptr send, nrecv; /* the out-of-place input (both libraries'), NCCL's output */
  size_t per;              /* bytes a rank */
} ag_ctx_t;

/* In place, each library's input is this rank's slot of its own output. */
static void ag_call(bench_t *b, void *ctx, int which) {
  ag_ctx_t *x = ctx;
  size_t mine = (size_t)b->rank * x->per;
  int ip = BENCH_WHICH_IN_PLACE(which);
  if (!BENCH_WHICH_NCCL(which)) {
    const void *in = ip ? (const void *)(x->recv + mine) : (const void *)(uintptr_t)x->send;
    OK(weft_allgather(b->comm, in, x->recv, x->per, WEFT_DTYPE_UINT8, x->algo, b->stream));
  } else {
    CUdeviceptr in = ip ? x->nrecv + mine : x->send;
    NCCL_OK(ncclAllGather((void *)(uintptr_t)in, (void *)(uintptr_t)x->nrecv, x->per, ncclUint8,
                          x->nc, b->stream));
  }
}

int main_allgather(int argc, char **argv) {
  bench_t b;
  bench_parse(&b, argc, argv, 8, 256 << 20);
  bench_init(&b, "allgather");
  ag_ctx_t x = {bench_nccl_init(&b), bench_parse_algo(b.opt.algo), NULL, 0, 0, 0};
  size_t maxb = b.opt.max_bytes;
  OK(weft_malloc(b.comm, maxb, (void **)&x.recv));
  CU(cuMemAlloc(&x.send, maxb / b.world + 64));
  CU(cuMemAlloc(&x.nrecv, maxb));
  unsigned char *hsend = bench_calloc(1, maxb / b.world + 64), *hrecv = bench_calloc(1, maxb),
                *want = bench_calloc(1, maxb);
  bench_coll_header(&b, "allgather", 1);
  unsigned round = 0;
  for (size_t total = b.opt.min_bytes; total <= maxb; total = (size_t)(total * b.opt.factor) > total ? (size_t)(total * b.opt.factor) : total + 1) {
    size_t per = total / (size_t)b.world;
    if (per == 0) continue;
    size_t tot = per * (size_t)b.world, mine = (size_t)b.rank * per;
    x.per = per;
    bench_coll_pair_t p[2];
    memset(p, 0, sizeof p);
    /* -c calls of both, out of place and in place: fresh data, poisoned outputs (in place all
     * but the input slot) */
    for (int ip = 0; ip < 2; ip++)
      for (int c = 0; c < b.opt.check; c++, round++) {
        for (int r = 0; r < b.world; r++) bench_fill(want + (size_t)r * per, per, (unsigned)(r * 131 + round));
        memcpy(hsend, want + mine, per);
        CU(cuMemcpyHtoD(x.send, hsend, per));
        CU(cuMemsetD8((CUdeviceptr)(uintptr_t)x.recv, 0xEE, tot));
        CU(cuMemsetD8(x.nrecv, 0xEE, tot));
        if (ip) {
          CU(cuMemcpyHtoD((CUdeviceptr)(uintptr_t)(x.recv + mine), hsend, per));
          CU(cuMemcpyHtoD(x.nrecv + mine, hsend, per));
        }
        bench_call_pair_once(&b, ag_call, &x, ip);
        CU(cuMemcpyDtoH(hrecv, (CUdeviceptr)(uintptr_t)x.recv, tot));
        for (size_t i = 0; i < tot; i++) p[ip].wrong_w += hrecv[i] != want[i];
        CU(cuMemcpyDtoH(hrecv, x.nrecv, tot));
        for (size_t i = 0; i < tot; i++) p[ip].wrong_n += hrecv[i] != want[i];
      }
    bench_time_pairs(&b, ag_call, &x, 1, p);
    bench_coll_row(&b, "allgather", tot, tot, "uint8", (double)(b.world - 1) / b.world, &p[0], &p[1]);
  }
  ncclCommDestroy(x.nc);
  CU(cuMemFree(x.send));
  CU(cuMemFree(x.nrecv));
  OK(weft_free(b.comm, x.recv));
  free(hsend), free(hrecv), free(want);
  bench_finish(&b);
  return 0;
}

/* ---- reduce_scatter and allreduce ------------------------------------------------------------ */

/* Inputs are small integers (-2 .. 2, from a hash of rank, element and round), so that every
 * sum, product, maximum and minimum is exact in fp16, bf16 and fp32 whatever the order: both
 * weft's and NCCL's outputs must equal the expected values (a zero product may come out -0, as
 * IEEE multiplication signs it, so values are compared, not bits). An average is not exact:
 * it may be 2 ulps off the float64 one (nccl-tests' tolerance for float averages; NCCL
 * multiplies the inputs by 1 / world, weft the sum). Sizes are totals: the AllReduce array, the
 * ReduceScatter sendbuf (world segments), as nccl-tests prints them. */

static int red_val(int rank, size_t i, unsigned round) {
  unsigned long long x = (unsigned long long)i * 0x9E3779B97F4A7C15ull ^
                         (unsigned long long)(rank + 1) * 0xC2B2AE3D27D4EB4Full ^ round;
  x ^= x >> 31, x *= 0xBF58476D1CE4E5B9ull, x ^= x >> 29;
  return (int)(x % 5) - 2;
}

/* The bits of small integer v (|v| < 2048) as dtype. */
static unsigned red_bits(int v, weft_dtype_t dt) {
  float f = (float)v;
  unsigned u;
  memcpy(&u, &f, 4);
  if (dt == WEFT_DTYPE_FP32) return u;
  if (dt == WEFT_DTYPE_BF16) return u >> 16;
  if (v == 0) return 0;
  unsigned m = (unsigned)(v < 0 ? -v : v), e = 0;
  while ((m >> e) > 1) e++;
  return (v < 0 ? 0x8000u : 0) | (e + 15) << 10 | ((m << (10 - e)) & 0x3ffu);
}

/* The value of dtype's bits (fp32 holds every fp16 and bf16 value exactly). */
static double red_value(unsigned bits, weft_dtype_t dt) {
  float f;
  if (dt == WEFT_DTYPE_FP32 || dt == WEFT_DTYPE_BF16) {
    unsigned u = dt == WEFT_DTYPE_BF16 ? bits << 16 : bits;
    memcpy(&f, &u, 4);
    return f;
  }
  int e = (int)(bits >> 10 & 31), m = (int)(bits & 1023);
  /* (e = 31, infinity or NaN, is only the outputs' poison: as a large finite value it equals no
   * expected value either) */
  double v = e ? ldexp(1024 + m, e - 25) : ldexp(m, -24);
  return bits & 0x8000u ? -v : v;
}

/* op over the ranks' inputs of element i in round `round`, in float64 (exact but for AVG). */
static double red_want(int world, size_t i, unsigned round, weft_red_op_t op) {
  int r = red_val(0, i, round);
  for (int q = 1; q < world; q++) {
    int v = red_val(q, i, round);
    r = op == WEFT_RED_OP_PROD ? r * v
        : op == WEFT_RED_OP_MAX ? (v > r ? v : r)
        : op == WEFT_RED_OP_MIN ? (v < r ? v : r)
                                : r + v;
  }
  return op == WEFT_RED_OP_AVG ? (double)r / world : r;
}

/* Whether got (dtype's bits) is want: the value itself (a product's zero may be -0), or for AVG
 * within 2 ulps of dtype at want. */
static int red_right(unsigned got, double want, weft_red_op_t op, weft_dtype_t dt) {
  if (op != WEFT_RED_OP_AVG) return red_value(got, dt) == want;
  int mant = dt == WEFT_DTYPE_FP32 ? 23 : dt == WEFT_DTYPE_BF16 ? 7 : 10, e = 0;
  frexp(fabs(want), &e);
  if (dt == WEFT_DTYPE_FP16 && e < -13) e = -13; /* fp16's subnormals: a fixed ulp */
  return fabs(red_value(got, dt) - want) <= 2 * ldexp(1.0, e - 1 - mant);
}

static void red_put(void *h, size_t i, unsigned bits, size_t elem) {
  if (elem == 4) ((unsigned *)h)[i] = bits;
  else ((unsigned short *)h)[i] = (unsigned short)bits;
}
static unsigned red_get(const void *h, size_t i, size_t elem) {
  return elem == 4 ? ((const unsigned *)h)[i] : ((const unsigned short *)h)[i];
}

typedef struct red_ctx {
  ncclComm_t nc;
  weft_algo_t algo;
  weft_dtype_t wt;
  ncclDataType_t nt;
  weft_red_op_t op;
  ncclRedOp_t nop;
  int allreduce;
  char *wsend, *wrecv;
  CUdeviceptr nsend, nrecv;
  size_t count; /* AllReduce: count; ReduceScatter: recvcount */
} red_ctx_t;

/* Where a library's output lies: out of place its recv; in place its send itself (AllReduce) or
 * this rank's segment of it (ReduceScatter). */
static char *red_out(const bench_t *b, const red_ctx_t *x, char *send, char *recv, int in_place) {
  if (!in_place) return recv;
  return x->allreduce ? send : send + (size_t)b->rank * x->count * weft_dtype_size(x->wt);
}

static void red_call(bench_t *b, void *ctx, int which) {
  red_ctx_t *x = ctx;
  int ip = BENCH_WHICH_IN_PLACE(which), nccl = BENCH_WHICH_NCCL(which);
  char *send = nccl ? (char *)(uintptr_t)x->nsend : x->wsend;
  char *out = red_out(b, x, send, nccl ? (char *)(uintptr_t)x->nrecv : x->wrecv, ip);
  if (x->allreduce && nccl)
    NCCL_OK(ncclAllReduce(send, out, x->count, x->nt, x->nop, x->nc, b->stream));
  else if (x->allreduce)
    OK(weft_allreduce(b->comm, send, out, x->count, x->wt, x->op, x->algo, b->stream));
  else if (nccl)
    NCCL_OK(ncclReduceScatter(send, out, x->count, x->nt, x->nop, x->nc, b->stream));
  else
    OK(weft_reduce_scatter(b->comm, send, out, x->count, x->wt, x->op, x->algo, b->stream));
}

static int red_main(int argc, char **argv, int allreduce) {
  const char *suite = allreduce ? "allreduce" : "reduce_scatter";
  bench_t b;
  bench_parse(&b, argc, argv, 8, 256 << 20);
  red_ctx_t x;
  memset(&x, 0, sizeof x);
  bench_parse_dtype(b.opt.dtype, &x.wt, &x.nt);
  if (x.wt != WEFT_DTYPE_FP16 && x.wt != WEFT_DTYPE_BF16 && x.wt != WEFT_DTYPE_FP32) {
    fprintf(stderr, "weft-bench %s: -d takes fp16, bf16 or fp32\n", suite);
    exit(2);
  }
  bench_parse_op(b.opt.op, &x.op, &x.nop);
  x.algo = bench_parse_algo(b.opt.algo);
  x.allreduce = allreduce;
  bench_init(&b, suite);
  x.nc = bench_nccl_init(&b);
  size_t elem = weft_dtype_size(x.wt), maxb = b.opt.max_bytes, world = (size_t)b.world;
  size_t out_max = allreduce ? maxb : maxb / world + 64;
  /* weft: sendbuf symmetric; recvbuf symmetric for AllReduce, ordinary memory for ReduceScatter */
  OK(weft_malloc(b.comm, maxb, (void **)&x.wsend));
  CUdeviceptr rs_recv = 0;
  if (allreduce) {
    OK(weft_malloc(b.comm, maxb, (void **)&x.wrecv));
  } else {
    CU(cuMemAlloc(&rs_recv, out_max));
    x.wrecv = (char *)(uintptr_t)rs_recv;
  }
  CU(cuMemAlloc(&x.nsend, maxb));
  CU(cuMemAlloc(&x.nrecv, out_max));
  unsigned char *hsend = bench_calloc(1, maxb);
  unsigned char *hout[2] = {bench_calloc(1, out_max), bench_calloc(1, out_max)}; /* weft, NCCL */
  /* in place too, except AllReduce's one-shot, which refuses it */
  int has_ip = !(allreduce && x.algo == WEFT_ALGO_SM);
  bench_coll_header(&b, suite, has_ip);
  const char *tname = x.wt == WEFT_DTYPE_FP16 ? "fp16" : x.wt == WEFT_DTYPE_BF16 ? "bf16" : "fp32";
  unsigned round = 0;
  for (size_t total = b.opt.min_bytes; total <= maxb;
       total = (size_t)(total * b.opt.factor) > total ? (size_t)(total * b.opt.factor) : total + 1) {
    size_t count = allreduce ? total / elem : total / (elem * world);
    if (count == 0) continue;
    size_t in = allreduce ? count : count * world, out = count, tot = in * elem;
    if (x.algo == WEFT_ALGO_LL && out * elem > WEFT_ALLREDUCE_LL_MAX_BYTES(world)) break;
    size_t first = allreduce ? 0 : (size_t)b.rank * count; /* input index of my output's first */
    x.count = count;
    bench_coll_pair_t p[2];
    memset(p, 0, sizeof p);
    /* -c calls of both, out of place and in place: fresh inputs, poisoned outputs (in place the
     * output is the input) */
    for (int ip = 0; ip <= has_ip; ip++)
      for (int c = 0; c < b.opt.check; c++, round++) {
        for (size_t i = 0; i < in; i++) red_put(hsend, i, red_bits(red_val(b.rank, i, round), x.wt), elem);
        CU(cuMemcpyHtoD((CUdeviceptr)(uintptr_t)x.wsend, hsend, tot));
        CU(cuMemcpyHtoD(x.nsend, hsend, tot));
        CU(cuMemsetD8((CUdeviceptr)(uintptr_t)x.wrecv, 0xFF, out * elem));
        CU(cuMemsetD8(x.nrecv, 0xFF, out * elem));
        bench_call_pair_once(&b, red_call, &x, ip);
        CU(cuMemcpyDtoH(hout[0], (CUdeviceptr)(uintptr_t)red_out(&b, &x, x.wsend, x.wrecv, ip),
                        out * elem));
        CU(cuMemcpyDtoH(hout[1],
                        (CUdeviceptr)(uintptr_t)red_out(&b, &x, (char *)(uintptr_t)x.nsend,
                                                        (char *)(uintptr_t)x.nrecv, ip),
                        out * elem));
        for (size_t i = 0; i < out; i++) { /* each expected value once, for both outputs */
          double want = red_want(b.world, first + i, round, x.op);
          p[ip].wrong_w += !red_right(red_get(hout[0], i, elem), want, x.op, x.wt);
          p[ip].wrong_n += !red_right(red_get(hout[1], i, elem), want, x.op, x.wt);
        }
      }
    bench_time_pairs(&b, red_call, &x, has_ip, p);
    double factor = allreduce ? 2.0 * (b.world - 1) / b.world : (double)(b.world - 1) / b.world;
    bench_coll_row(&b, suite, tot, in, tname, factor, &p[0], has_ip ? &p[1] : NULL);
  }
  ncclCommDestroy(x.nc);
  CU(cuMemFree(x.nsend));
  CU(cuMemFree(x.nrecv));
  if (rs_recv) {
    CU(cuMemFree(rs_recv));
  } else {
    OK(weft_free(b.comm, x.wrecv));
  }
  OK(weft_free(b.comm, x.wsend));
  free(hsend), free(hout[0]), free(hout[1]);
  bench_finish(&b);
  return 0;
}

int main_reduce_scatter(int argc, char **argv) { return red_main(argc, argv, 0); }
int main_allreduce(int argc, char **argv) { return red_main(argc, argv, 1); }

/* ---- alltoall and alltoallv ------------------------------------------------------------------ */

/* Sizes are the bytes each rank sends (its whole sendbuf, own chunk included), as nccl-tests'
 * alltoall prints them; busbw = algbw (n - 1) / n. NCCL's AllToAll is grouped ncclSend/ncclRecv,
 * one pair per peer, at the same displacements. alltoallv: the per-pair counts of a size are a
 * circulant matrix, C[q][p] = c[(p - q) mod world], with c drawn once per size (weights 0 to 4:
 * zeros and 4:1 skews between pairs, as a MoE router makes them) and summing to the size, so that
 * every rank sends and receives exactly the size while its pairs differ. */

typedef struct a2a_ctx {
  ncclComm_t nc;
  weft_algo_t algo;
  weft_dtype_t wt;
  ncclDataType_t nt;
  size_t elem;
  int v;
  void *wsend, *wrecv; /* weft: sendbuf (any memory), recvbuf (symmetric) */
  CUdeviceptr nsend, nrecv;
  size_t *scount, *sdispl, *rcount, *rdispl; /* [world], elements */
} a2a_ctx_t;

static void a2a_call(bench_t *b, void *ctx, int which) {
  a2a_ctx_t *x = ctx;
  if (which == 0) {
    if (x->v)
      OK(weft_alltoallv(b->comm, x->wsend, x->scount, x->sdispl, x->wrecv, x->rcount, x->rdispl,
                        x->wt, x->algo, b->stream));
    else
      OK(weft_alltoall(b->comm, x->wsend, x->wrecv, x->scount[0], x->wt, x->algo, b->stream));
    return;
  }
  char *ns = (char *)(uintptr_t)x->nsend, *nr = (char *)(uintptr_t)x->nrecv;
  NCCL_OK(ncclGroupStart());
  for (int p = 0; p < b->world; p++) {
    NCCL_OK(ncclSend(ns + x->sdispl[p] * x->elem, x->scount[p], x->nt, p, x->nc, b->stream));
    NCCL_OK(ncclRecv(nr + x->rdispl[p] * x->elem, x->rcount[p], x->nt, p, x->nc, b->stream));
  }
  NCCL_OK(ncclGroupEnd());
}

/* The counts of one size, n elements per rank (a multiple of world for alltoall): alltoall
 * n / world per pair; alltoallv the circulant matrix above. Displacements pack the chunks in rank
 * order. */
static void a2a_counts(a2a_ctx_t *x, int rank, int world, size_t n, unsigned round) {
  unsigned long long *c = bench_calloc((size_t)world, sizeof *c),
                     *w = bench_calloc((size_t)world, sizeof *w);
  unsigned long long wsum = 0, acc = 0;
  for (int j = 0; j < world; j++) {
    unsigned long long h = (unsigned long long)(j + 1) * 0x9E3779B97F4A7C15ull ^ round * 0xC2B2AE3D27D4EB4Full;
    h ^= h >> 29, h *= 0xBF58476D1CE4E5B9ull, h ^= h >> 32;
    w[j] = x->v ? h % 5 + (j == 0) : 1; /* c[0] > 0: the weights never all vanish */
    wsum += w[j];
  }
  for (int j = 0; j < world; j++) { /* differences of rounded prefixes: they add up to n */
    unsigned long long lo = n * acc / wsum;
    acc += w[j];
    c[j] = n * acc / wsum - lo;
  }
  size_t so = 0, ro = 0;
  for (int p = 0; p < world; p++) {
    x->scount[p] = c[((p - rank) % world + world) % world];
    x->rcount[p] = c[((rank - p) % world + world) % world];
    x->sdispl[p] = so, so += x->scount[p];
    x->rdispl[p] = ro, ro += x->rcount[p];
  }
  free(c), free(w);
}

static int a2a_main(int argc, char **argv, int v) {
  const char *suite = v ? "alltoallv" : "alltoall";
  bench_t b;
  bench_parse(&b, argc, argv, 8, 256 << 20);
  bench_init(&b, suite);
  size_t world = (size_t)b.world, maxb = b.opt.max_bytes;
  a2a_ctx_t x, peer; /* this rank's calls; a peer's counts, to know what it sent here */
  memset(&x, 0, sizeof x);
  x.nc = bench_nccl_init(&b);
  x.algo = bench_parse_algo(b.opt.algo);
  x.v = v;
  bench_parse_dtype(b.opt.dtype, &x.wt, &x.nt);
  x.elem = weft_dtype_size(x.wt);
  size_t *arrays = bench_calloc(8 * world, sizeof *arrays);
  x.scount = arrays, x.sdispl = arrays + world, x.rcount = arrays + 2 * world, x.rdispl = arrays + 3 * world;
  peer = x;
  peer.scount = arrays + 4 * world, peer.sdispl = arrays + 5 * world;
  peer.rcount = arrays + 6 * world, peer.rdispl = arrays + 7 * world;
  CUdeviceptr wsend;
  CU(cuMemAlloc(&wsend, maxb));
  x.wsend = (void *)(uintptr_t)wsend;
  OK(weft_malloc(b.comm, maxb, &x.wrecv));
  CU(cuMemAlloc(&x.nsend, maxb));
  CU(cuMemAlloc(&x.nrecv, maxb));
  unsigned char *hsend = bench_calloc(1, maxb), *hpeer = bench_calloc(1, maxb),
                *hout[2] = {bench_calloc(1, maxb), bench_calloc(1, maxb)};
  bench_coll_header(&b, suite, 0); /* (no in-place form) */
  unsigned round = 0;
  for (size_t total = b.opt.min_bytes; total <= maxb;
       total = (size_t)(total * b.opt.factor) > total ? (size_t)(total * b.opt.factor) : total + 1) {
    size_t n = total / x.elem; /* elements this rank sends */
    if (!v) n = n / world * world;
    if (n == 0) continue;
    size_t bytes = n * x.elem, largest = 0;
    a2a_counts(&x, b.rank, b.world, n, round);
    for (int p = 0; p < b.world; p++) largest = x.scount[p] > largest ? x.scount[p] : largest;
    if (x.algo == WEFT_ALGO_LL && largest * x.elem > WEFT_ALLTOALL_LL_MAX_BYTES) break; /* alike on all ranks */
    bench_coll_pair_t p;
    memset(&p, 0, sizeof p);
    int *wrong[2] = {&p.wrong_w, &p.wrong_n};
    /* -c calls of both: fresh data (the counts stay this size's round's), poisoned outputs */
    for (int c = 0; c < b.opt.check; c++) {
      unsigned draw = round * 1024u + (unsigned)c;
      bench_fill(hsend, bytes, (unsigned)b.rank * 131 + draw);
      CU(cuMemcpyHtoD(wsend, hsend, bytes));
      CU(cuMemcpyHtoD(x.nsend, hsend, bytes));
      CU(cuMemsetD8((CUdeviceptr)(uintptr_t)x.wrecv, 0xEE, bytes));
      CU(cuMemsetD8(x.nrecv, 0xEE, bytes));
      bench_call_pair_once(&b, a2a_call, &x, 0);
      CU(cuMemcpyDtoH(hout[0], (CUdeviceptr)(uintptr_t)x.wrecv, bytes));
      CU(cuMemcpyDtoH(hout[1], x.nrecv, bytes));
      for (int q = 0; q < b.world; q++) { /* rank q's chunk for this rank, element by element */
        a2a_counts(&peer, q, b.world, n, round);
        bench_fill(hpeer, bytes, (unsigned)q * 131 + draw);
        const unsigned char *want = hpeer + peer.sdispl[b.rank] * x.elem;
        for (int which = 0; which < 2; which++)
          for (size_t i = 0; i < x.rcount[q]; i++)
            *wrong[which] += memcmp(hout[which] + (x.rdispl[q] + i) * x.elem, want + i * x.elem, x.elem) != 0;
      }
    }
    round++;
    bench_time_pairs(&b, a2a_call, &x, 0, &p);
    bench_coll_row(&b, suite, bytes, n, b.opt.dtype, (double)(b.world - 1) / b.world, &p, NULL);
  }
  ncclCommDestroy(x.nc);
  CU(cuMemFree(wsend));
  CU(cuMemFree(x.nsend));
  CU(cuMemFree(x.nrecv));
  OK(weft_free(b.comm, x.wrecv));
  free(hsend), free(hpeer), free(hout[0]), free(hout[1]), free(arrays);
  bench_finish(&b);
  return 0;
}

int main_alltoall(int argc, char **argv) { return a2a_main(argc, argv, 0); }
int main_alltoallv(int argc, char **argv) { return a2a_main(argc, argv, 1); }
