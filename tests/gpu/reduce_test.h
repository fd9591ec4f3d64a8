/*
 * reduce_test.h — what test_allreduce.c and test_reduce_scatter.c share: inputs drawn on the GPU
 * from (seed, rank, call, index), so that every rank can recompute every other rank's inputs and
 * check its output against a float64 reference without moving data; NCCL on the same inputs;
 * guard zones; bitwise agreement across ranks.
 *
 * Check of one output element (the sum over ranks r of x_r, in fp16, bf16 or fp32):
 *   ref = sum of x_r in float64, S = sum of |x_r|, ulp(v) = the output type's ulp at |v|;
 *   weft:  |w - ref| <= world * 2^-24 * S + ulp(|ref| + world * 2^-24 * S) / 2
 *          (fp32 accumulation, then one rounding: what weft promises);
 *   NCCL:  |n - ref| <= world * 2^-24 * S + world * ulp(S) (NCCL may round after every step);
 *   both:  |w - n| within the sum of the two bounds.
 * The other operators (rt_t.op): MAX and MIN exactly (both); PROD |w - ref| <= world * 2^-24 *
 * |ref| + ulp(|ref|) / 2 (NCCL: + 2 world ulp(|ref|)); AVG the sum's bounds over world, plus
 * 2^-22 |ref| for the fp32 reciprocal and multiply (NCCL: + world ulp(S / world), its
 * pre-multiplied inputs).
 * A poisoned (NaN) or missing element fails all three. The largest |w - ref| / ulp(S) (PROD:
 * ulp(|ref|)) is kept (the normalised error).
 */
#ifndef WEFT_REDUCE_TEST_H
#define WEFT_REDUCE_TEST_H

#include <nccl.h>

#include "gpu_test.h"

static const char *reduce_test_src =
    "#include <weft/device.cuh>\n"
    "static __device__ unsigned t_hash(unsigned long long x) {\n"
    "  x ^= x >> 33; x *= 0xff51afd7ed558ccdull; x ^= x >> 33; x *= 0xc4ceb9fe1a85ec53ull; x ^= x >> 33;\n"
    "  return (unsigned)x;\n"
    "}\n"
    "static __device__ float t_round(float f, int dt) {\n"
    "  unsigned short h;\n"
    "  if (dt == 4) return f;\n"
    "  if (dt == 3) { asm(\"cvt.rn.bf16.f32 %0, %1;\" : \"=h\"(h) : \"f\"(f)); return __uint_as_float((unsigned)h << 16); }\n"
    "  asm(\"cvt.rn.f16.f32 %0, %1;\" : \"=h\"(h) : \"f\"(f));\n"
    "  float g; asm(\"cvt.f32.f16 %0, %1;\" : \"=f\"(g) : \"h\"(h)); return g;\n"
    "}\n"
    "static __device__ float t_load(const char *p, unsigned long long i, int dt) {\n"
    "  if (dt == 4) return ((const float *)p)[i];\n"
    "  unsigned short h = ((const unsigned short *)p)[i];\n"
    "  if (dt == 3) return __uint_as_float((unsigned)h << 16);\n"
    "  float g; asm(\"cvt.f32.f16 %0, %1;\" : \"=f\"(g) : \"h\"(h)); return g;\n"
    "}\n"
    "static __device__ void t_store(char *p, unsigned long long i, float f, int dt) {\n"
    "  unsigned short h;\n"
    "  if (dt == 4) { ((float *)p)[i] = f; return; }\n"
    "  if (dt == 3) asm(\"cvt.rn.bf16.f32 %0, %1;\" : \"=h\"(h) : \"f\"(f));\n"
    "  else asm(\"cvt.rn.f16.f32 %0, %1;\" : \"=h\"(h) : \"f\"(f));\n"
    "  ((unsigned short *)p)[i] = h;\n"
    "}\n"
    "/* rank r's element i in call c: uniform in [-1, 1), exactly representable in dt */\n"
    "static __device__ float t_val(unsigned long long seed, int r, unsigned c, unsigned long long i, int dt) {\n"
    "  unsigned h = t_hash(seed ^ (i * 0x9E3779B97F4A7C15ull) ^ ((unsigned long long)c * 0xC2B2AE3D27D4EB4Full)\n"
    "                      ^ ((unsigned long long)(r + 1) * 0x165667B19E3779F9ull));\n"
    "  return t_round((float)(h >> 8) * (1.0f / 8388608.0f) - 1.0f, dt);\n"
    "}\n"
    "/* ulp of the type dt at magnitude m (m >= 0) */\n"
    "static __device__ double t_ulp(double m, int dt) {\n"
    "  int mb = dt == 4 ? 23 : dt == 3 ? 7 : 10, emin = dt == 2 ? -14 : -126;\n"
    "  float f = (float)m;\n"
    "  int e = f > 0.f ? (int)((__float_as_uint(f) >> 23) & 0xff) - 127 : emin;\n"
    "  if (e < emin) e = emin;\n"
    "  double u = 1.0; int k = e - mb;\n"
    "  for (; k > 0; k--) u *= 2.0;\n"
    "  for (; k < 0; k++) u *= 0.5;\n"
    "  return u;\n"
    "}\n"
    "#define GRID_LOOP(i, n) for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; \\\n"
    "                             i < (n); i += gridDim.x * (unsigned long long)blockDim.x)\n"
    "extern \"C\" __global__ void fill(char *p, unsigned long long n, int dt, unsigned long long seed, int r,\n"
    "                                 unsigned c, unsigned long long i0) {\n"
    "  GRID_LOOP(i, n) t_store(p, i, t_val(seed, r, c, i0 + i, dt), dt);\n"
    "}\n"
    "/* stats: [0] weft vs float64, [1] weft vs NCCL, [2] NCCL vs float64 (counts), [3] the largest\n"
    "   normalised error of weft (double bits), [4] guard bytes changed, [5] bytes that differ from\n"
    "   the root rank's */\n"
    "extern \"C\" __global__ void check(const char *out, unsigned long long n, int dt, unsigned long long seed,\n"
    "                                  int world, unsigned c, unsigned long long i0, const char *nccl,\n"
    "                                  unsigned long long *stats, int op) {\n"
    "  GRID_LOOP(i, n) {\n"
    "    double ref = 0, s = 0, prod = 1, mx = -2, mn = 2;\n"
    "    for (int r = 0; r < world; r++) {\n"
    "      double x = t_val(seed, r, c, i0 + i, dt);\n"
    "      ref += x; s += x < 0 ? -x : x; prod *= x; mx = x > mx ? x : mx; mn = x < mn ? x : mn;\n"
    "    }\n"
    "    double acc = world * s / 16777216.0, bw, bn, unit = t_ulp(s, dt);\n"
    "    if (op == 2 || op == 3) { ref = op == 2 ? mx : mn; bw = bn = 0; }\n"
    "    else if (op == 1) {\n"
    "      double a = prod < 0 ? -prod : prod, e = world * a / 16777216.0;\n"
    "      ref = prod; unit = t_ulp(a, dt);\n"
    "      bw = (e + 0.5 * t_ulp(a + e, dt)) * 1.000001; bn = (e + 2 * world * unit) * 1.000001;\n"
    "    } else {\n"
    "      double aref = ref < 0 ? -ref : ref;\n"
    "      bw = (acc + 0.5 * t_ulp(aref + acc, dt)) * 1.000001, bn = (acc + world * t_ulp(s, dt)) * 1.000001;\n"
    "      if (op == 4) {\n"
    "        ref /= world; aref /= world; acc = acc / world + aref / 4194304.0;\n"
    "        bw = (acc + 0.5 * t_ulp(aref + acc, dt)) * 1.000001;\n"
    "        bn = bn / world + world * t_ulp(s / world, dt) + aref / 4194304.0;\n"
    "      }\n"
    "    }\n"
    "    double w = t_load(out, i, dt), ew = w - ref;\n"
    "    ew = ew < 0 ? -ew : ew;\n"
    "    if (!(ew <= bw)) atomicAdd(&stats[0], 1ull);\n"
    "    double ne = ew / unit;\n"
    "    if (ne == ne) atomicMax(&stats[3], (unsigned long long)__double_as_longlong(ne));\n"
    "    if (nccl) {\n"
    "      double v = t_load(nccl, i, dt), d = w - v, en = v - ref;\n"
    "      d = d < 0 ? -d : d; en = en < 0 ? -en : en;\n"
    "      if (!(d <= bw + bn)) atomicAdd(&stats[1], 1ull);\n"
    "      if (!(en <= bn)) atomicAdd(&stats[2], 1ull);\n"
    "    }\n"
    "  }\n"
    "}\n"
    "extern \"C\" __global__ void guard(const unsigned char *p, unsigned long long n, unsigned long long *stats) {\n"
    "  GRID_LOOP(i, n) if (p[i] != 0xFF) atomicAdd(&stats[4], 1ull);\n"
    "}\n"
    "/* mine is symmetric: compare it with the root rank's copy (after a barrier) */\n"
    "extern \"C\" __global__ void same(const unsigned char *mine, unsigned long long n, int root,\n"
    "                                 unsigned long long *stats) {\n"
    "  const unsigned char *theirs = (const unsigned char *)weft_remote_ptr(mine, root);\n"
    "  GRID_LOOP(i, n) if (mine[i] != theirs[i]) atomicAdd(&stats[5], 1ull);\n"
    "}\n"
    "extern \"C\" __global__ void delay(unsigned long long ns) {\n"
    "  unsigned long long t0 = weft_globaltimer();\n"
    "  while (weft_globaltimer() - t0 < ns) {}\n"
    "}\n";

#define RT_STATS 6

typedef struct rt {
  weft_comm_t *comm;
  weft_module_t *mod;
  weft_kernel_t *fill, *check, *guard, *same, *delay;
  CUdeviceptr stats; /* [RT_STATS] */
  ncclComm_t nc; /* NULL where ranks share a GPU (WEFT_SHARE_GPUS): NCCL refuses that */
  unsigned long long seed; /* per run, the same on every rank */
  int rank, world;
  weft_red_op_t op; /* what rt_check checks against (SUM unless a block sets another) */
} rt_t;

static inline void rt_init(rt_t *t, const char *name) {
  /* NCCL creates NVLink multicast objects unless told not to; the tests keep them off
   * (docs/architecture.md, "NVLink multicast is off"). */
  setenv("NCCL_NVLS_ENABLE", "0", 1);
  test_precompile(reduce_test_src, name);
  memset(t, 0, sizeof *t);
  t->comm = test_init();
  t->rank = t->comm->rank;
  t->world = t->comm->world;
  t->seed = test_seed(t->comm) / 1000003ull; /* the part every rank shares */
  OK(weft_module_load(t->comm, reduce_test_src, name, NULL, 0, &t->mod));
  t->fill = test_kernel(t->mod, "fill");
  t->check = test_kernel(t->mod, "check");
  t->guard = test_kernel(t->mod, "guard");
  t->same = test_kernel(t->mod, "same");
  t->delay = test_kernel(t->mod, "delay");
  CU(cuMemAlloc(&t->stats, RT_STATS * 8));
  CU(cuMemsetD8(t->stats, 0, RT_STATS * 8));
  if (t->comm->share_gpus) {
    printf("[%d] ranks share GPUs: checked against the float64 sum only (NCCL needs one GPU per "
           "rank)\n", t->rank);
    return;
  }
  ncclUniqueId *ids = calloc((size_t)t->world, sizeof *ids);
  if (t->rank == 0) NCCL_OK(ncclGetUniqueId(&ids[0]));
  OK(weft_bootstrap_allgather(t->comm->bootstrap, ids, sizeof *ids));
  NCCL_OK(ncclCommInitRank(&t->nc, t->world, ids[0], t->rank));
  free(ids);
}

static inline void rt_finish(rt_t *t) {
  if (t->nc) ncclCommDestroy(t->nc);
  CU(cuMemFree(t->stats));
  weft_module_unload(t->mod);
  OK(weft_comm_destroy(t->comm));
}

static inline ncclDataType_t rt_nccl_type(weft_dtype_t dt) {
  return dt == WEFT_DTYPE_FP16 ? ncclFloat16 : dt == WEFT_DTYPE_BF16 ? ncclBfloat16 : ncclFloat32;
}
static inline const char *rt_type_name(weft_dtype_t dt) {
  return dt == WEFT_DTYPE_FP16 ? "fp16" : dt == WEFT_DTYPE_BF16 ? "bf16" : "fp32";
}
/* weft_red_op_t and ncclRedOp_t list the operators in the same order */
static inline ncclRedOp_t rt_nccl_op(weft_red_op_t op) {
  static const ncclRedOp_t nccl[] = {ncclSum, ncclProd, ncclMax, ncclMin, ncclAvg};
  return nccl[op];
}
static inline const char *rt_op_name(weft_red_op_t op) {
  static const char *names[] = {"sum", "prod", "max", "min", "avg"};
  return names[op];
}

static inline void rt_launch(weft_kernel_t *k, unsigned long long n, void **args, CUstream s) {
  weft_launch_config_t c = WEFT_LAUNCH_CONFIG_INIT;
  unsigned long long g = (n + 255) / 256;
  c.grid[0] = g < 1 ? 1 : g > 1056 ? 1056 : (unsigned)g;
  c.block[0] = 256;
  OK(weft_kernel_launch(k, &c, args, s));
}

/* p[k] = rank r's input element i0 + k of call c, k < n */
static inline void rt_fill(rt_t *t, void *p, size_t n, weft_dtype_t dt, int r, unsigned c,
                           size_t i0, CUstream s) {
  unsigned long long nn = n, ii = i0;
  int d = (int)dt;
  void *a[] = {&p, &nn, &d, &t->seed, &r, &c, &ii};
  rt_launch(t->fill, nn, a, s);
}

/* out[k] (and nccl[k] unless NULL) against t->op over ranks of input element i0 + k of call c */
static inline void rt_check(rt_t *t, const void *out, size_t n, weft_dtype_t dt, unsigned c,
                            size_t i0, const void *nccl, CUstream s) {
  unsigned long long nn = n, ii = i0;
  int d = (int)dt, op = (int)t->op;
  void *a[] = {(void *)&out, &nn, &d, &t->seed, &t->world, &c, &ii, (void *)&nccl, &t->stats, &op};
  rt_launch(t->check, nn, a, s);
}

static inline void rt_guard(rt_t *t, const void *p, size_t n, CUstream s) {
  unsigned long long nn = n;
  void *a[] = {(void *)&p, &nn, &t->stats};
  rt_launch(t->guard, nn, a, s);
}

/* Bytes of my symmetric p that differ from rank root's (barriers around: peers have finished
 * writing, and nobody overwrites p before everyone compared). */
static inline void rt_same(rt_t *t, const void *p, size_t n, int root, CUstream s) {
  unsigned long long nn = n;
  void *a[] = {(void *)&p, &nn, &root, &t->stats};
  OK(weft_stream_barrier(t->comm, s));
  rt_launch(t->same, nn, a, s);
  OK(weft_stream_barrier(t->comm, s));
}

static inline void rt_delay(rt_t *t, unsigned long long ns, CUstream s) {
  void *a[] = {&ns};
  weft_launch_config_t c = WEFT_LAUNCH_CONFIG_INIT;
  OK(weft_kernel_launch(t->delay, &c, a, s));
}

/* Synchronises s and reads the counters. */
static inline void rt_stats(rt_t *t, CUstream s, unsigned long long st[RT_STATS]) {
  OK(weft_stream_synchronize(t->comm, s));
  CU(cuMemcpyDtoH(st, t->stats, RT_STATS * 8));
}

static inline double rt_maxerr(const unsigned long long st[RT_STATS]) {
  double d;
  memcpy(&d, &st[3], sizeof d);
  return d;
}

/* One checked call of the op under test on s: fill its input for call c, poison its output,
 * the call, the check queued. The graph and straggler blocks below drive it. */
typedef void (*rt_call_fn)(rt_t *t, size_t n, weft_dtype_t dt, weft_algo_t algo, unsigned c,
                           CUstream s);

/* nalgos calls of n elements (algos[a] with dts[(a + dt_shift) % 3]) captured once and replayed
 * 20 times: every replay runs new epochs from device memory. Returns 1 on a wrong value. */
static inline int rt_graph(rt_t *t, rt_call_fn one, size_t n, const weft_algo_t *algos, int nalgos,
                           const weft_dtype_t *dts, int dt_shift, unsigned *call, CUstream s) {
  CUgraph g;
  CUgraphExec ge;
  unsigned long long st[RT_STATS];
  CU(cuMemsetD8(t->stats, 0, RT_STATS * 8));
  CU(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL));
  for (int a = 0; a < nalgos; a++) one(t, n, dts[(a + dt_shift) % 3], algos[a], ++*call, s);
  CU(cuStreamEndCapture(s, &g));
  CU(cuGraphInstantiateWithFlags(&ge, g, 0));
  for (int r = 0; r < 20; r++) CU(cuGraphLaunch(ge, s));
  rt_stats(t, s, st);
  if (st[0]) printf("[%d] FAIL graph replay: %llu wrong\n", t->rank, st[0]);
  CU(cuGraphExecDestroy(ge));
  CU(cuGraphDestroy(g));
  return st[0] != 0;
}

/* 1,000 back-to-back calls: random counts in [1, max_n], dtypes and algorithms (from the shared
 * sequence x), random host and GPU delays per rank, one synchronisation at the end. Returns 1 on
 * a wrong value (a hang is a timeout, which fails the test). */
static inline int rt_stragglers(rt_t *t, rt_call_fn one, size_t max_n, const weft_algo_t *algos,
                                int nalgos, const weft_dtype_t *dts, unsigned long long *x,
                                unsigned *call, CUstream s) {
  unsigned long long y = t->seed * 1000003ull + (unsigned long long)t->rank, st[RT_STATS];
  uint64_t t0 = weft_now_ns();
  CU(cuMemsetD8(t->stats, 0, RT_STATS * 8));
  for (int i = 0; i < 1000; i++) {
    size_t n = 1 + test_rand(x) % max_n;
    weft_dtype_t dt = dts[test_rand(x) % 3];
    weft_algo_t a = algos[test_rand(x) % (unsigned)nalgos];
    usleep((useconds_t)(test_rand(&y) % 1000));
    rt_delay(t, test_rand(&y) % 30000, s);
    one(t, n, dt, a, ++*call, s);
  }
  rt_stats(t, s, st);
  printf("[%d] 1000 calls with stragglers in %.2f s: %llu wrong\n", t->rank,
         (double)(weft_now_ns() - t0) / 1e9, st[0]);
  return st[0] != 0;
}

#endif
