/*
 * dev/gemm/gemm_dev.cu — research driver for kernels/gemm/gemm.cu (not the product).
 *
 * Compiles kernels/gemm/gemm.cu with NVRTC at run time (the way libweft will) for any -D
 * specialisation, builds TMA descriptors with cuTensorMapEncodeTiled, checks results and times
 * weft against cuBLAS interleaved in the same run (medians of many samples after warm-up, fresh
 * random data, output poisoned with NaN before every checked run).
 *
 * Checks: against a float64 GPU reference on moderate shapes (every element; normalised error
 * ||out-ref||/||ref|| <= 1e-4 for fp32 out, <= 5e-3 for 16-bit out), against cuBLAS on the big
 * perf shapes (every element, the 16-bit bound), hooks on vs off bit-identical, notify counters
 * exact, and (suite timeout) the wait's deadline firing with the error record filled.
 *
 *   gemm_dev --suite compile|correct|perf|small|hooks|variants|timeout|all
 *   gemm_dev --m M --n N --k K [--dtype bf16|fp16] [--out bf16|fp16|f32] [--layout nk|kn]
 *            [--cfg BM=128,BN=256,ST=4,CL=2,EPI=2,G=8,KS=1,TABLE=0,WAIT=0,NOTIFY=0,X_NAME=v]...
 *            [--check] [--trace]   (several --cfg: timed interleaved; X_: -DWEFT_GEMM_NAME=v)
 *   common: --src kernels/gemm/gemm.cu --inc include --root . --samples 15 --json file
 *   (run from the repository root: the kernel includes its headers as kernels/gemm/..., found
 *   under --root, and the device library under --inc)
 */
#include <cublas_v2.h>
#include <cuda.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <nvrtc.h>

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <algorithm>
#include <map>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "kernels/gemm/order.h"
#include "weft/state.h"

#define DEV_CHECK_EXIT 2
#include "../cuda_check.h"

#define CB(x)                                                                                    \
  do {                                                                                           \
    cublasStatus_t s_ = (x);                                                                     \
    if (s_ != CUBLAS_STATUS_SUCCESS) {                                                           \
      fprintf(stderr, "%s:%d %s: cublas status %d\n", __FILE__, __LINE__, #x, (int)s_);          \
      exit(2);                                                                                   \
    }                                                                                            \
  } while (0)
#define NV(x)                                                                                    \
  do {                                                                                           \
    nvrtcResult r_ = (x);                                                                        \
    if (r_ != NVRTC_SUCCESS) {                                                                   \
      fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, nvrtcGetErrorString(r_));        \
      exit(2);                                                                                   \
    }                                                                                            \
  } while (0)

enum { DT_BF16 = 0, DT_FP16 = 1, DT_F32 = 2 };
static const char *dt_name[] = {"bf16", "fp16", "f32"};
static int dt_size(int dt) { return dt == DT_F32 ? 4 : 2; }

/* ------------------------------------------------------------------------------------------ */
/* configuration                                                                               */
/* ------------------------------------------------------------------------------------------ */

struct Cfg {
  int bm = 128, bn = 256, stages = 4, cluster = 2, epi = 2, group = 8;
  int splitk = 0, ks = 1;  /* split-K kernel, number of splits */
  int arows = 0;           /* rows of A per stage (0: BM; decode: WEFT_GEMM_A_ROWS) */
  int table = 0;           /* 0 device grouped order, 1 Hilbert table */
  int wait = 0, notify = 0;
  int grid = 0;            /* 0: all co-resident CTAs */
  int lcl = 0;             /* LCL=n: launch in clusters of n CTAs although the kernel has none */
  int mnswap = 0;          /* debug: swap LBO/SBO of N-major B */
  int timeout_printf = 0;
  std::string extra;       /* experiments: X_NAME=v items, passed as -DWEFT_GEMM_NAME=v */
};

struct Prob {
  int M, N, K;
  int din = DT_BF16, dout = DT_BF16;
  int bkmajor = 1; /* 1: B [N,K]; 0: B [K,N] */
};

static std::string cfg_str(const Cfg &c) {
  char b[256];
  snprintf(b, sizeof b, "BM=%d,BN=%d,ST=%d,CL=%d,EPI=%d,G=%d,KS=%d%s%s%s%s", c.bm, c.bn, c.stages,
           c.cluster, c.epi, c.group, c.splitk ? c.ks : 0, c.table ? ",TABLE=1" : "",
           c.wait ? ",WAIT=1" : "", c.notify ? ",NOTIFY=1" : "",
           c.mnswap ? ",MNSWAP=1" : "");
  std::string r = b;
  if (c.arows) r += ",AR=" + std::to_string(c.arows);
  if (c.lcl) r += ",LCL=" + std::to_string(c.lcl);
  for (size_t i = 0; i < c.extra.size();) { /* -DWEFT_GEMM_NAME=v -> ,X_NAME=v */
    size_t e = c.extra.find(' ', i);
    r += ",X_" + c.extra.substr(i + 12, e - i - 12);
    i = e + 1;
  }
  return r;
}

static void parse_cfg(Cfg &c, const char *s) {
  char buf[512];
  snprintf(buf, sizeof buf, "%s", s);
  for (char *tok = strtok(buf, ","); tok; tok = strtok(NULL, ",")) {
    char key[32];
    int v;
    if (sscanf(tok, "%31[^=]=%d", key, &v) != 2) {
      fprintf(stderr, "bad --cfg item %s\n", tok);
      exit(2);
    }
    std::string k = key;
    if (k == "BM") c.bm = v;
    else if (k == "BN") c.bn = v;
    else if (k == "AR") c.arows = v;
    else if (k == "ST") c.stages = v;
    else if (k == "CL") c.cluster = v;
    else if (k == "EPI") c.epi = v;
    else if (k == "G") c.group = v;
    else if (k == "KS") { c.ks = v; c.splitk = v > 0; if (v == 0) c.ks = 1; }
    else if (k == "TABLE") c.table = v;
    else if (k == "WAIT") c.wait = v;
    else if (k == "NOTIFY") c.notify = v;
    else if (k == "GRID") c.grid = v;
    else if (k == "LCL") c.lcl = v;
    else if (k == "MNSWAP") c.mnswap = v;
    else if (k.compare(0, 2, "X_") == 0) c.extra += "-DWEFT_GEMM_" + k.substr(2) + "=" + std::to_string(v) + " ";
    else { fprintf(stderr, "unknown --cfg key %s\n", key); exit(2); }
  }
}

static int g_sms = 132;

/* The decode and large-m heuristic as first measured here (README.md); the library's, refitted
 * since, is src/ops/gemm/config.c weft_gemm_config_choose. */
/* Small M (decode) streams B from HBM: what matters is how many SMs stream it and how little
 * work is left after the stream (split-K reduction). The H100 sweeps (dev/gemm/README.md) found
 * the best at about 45-130 CTAs: for M <= 16 BM=64 BN=128 with splits up to the SMs; above, the
 * largest tile that still gives enough tiles (three quarters of the SMs for M <= 64, half for
 * M <= 128), then splits up to about two thirds of the SMs.
 * [K,N] B has no 32-column warpgroup tiles (BM=64 BN=64). */
static Cfg choose_config(const Prob &p) {
  Cfg c;
  if (p.M <= 128) {
    static const int small[][2] = {{64, 128}, {64, 64}}, mid[][2] = {{128, 128}, {128, 64}, {64, 64}};
    const int(*cand)[2] = p.M <= 64 ? small : mid;
    /* M <= 16 is pure streaming: one tile shape, splits up to all the SMs */
    int ncand = p.M <= 16 ? 1 : p.M <= 64 ? 2 : 3;
    int enough = p.M <= 64 ? 3 * g_sms / 4 : g_sms / 2, target = p.M <= 16 ? g_sms : 2 * g_sms / 3;
    if (!p.bkmajor && ncand > 1) ncand--; /* drop BM=64 BN=64 */
    int tiles = 0;
    for (int i = 0; i < ncand; i++) {
      c.bm = cand[i][0], c.bn = cand[i][1];
      tiles = ((p.M + c.bm - 1) / c.bm) * ((p.N + c.bn - 1) / c.bn);
      if (tiles >= enough) break;
    }
    int nkb = (p.K + 63) / 64;
    int ks = (target + tiles / 2) / tiles;
    if (ks > nkb / 16) ks = nkb / 16;
    if (ks < 1) ks = 1;
    c.ks = ks;
    /* 32-column warpgroup tiles exist only in the direct-store (split-K) kernel */
    c.splitk = ks > 1 || c.bn / (c.bm == 128 ? 1 : 2) == 32;
    c.cluster = 1;
    c.stages = c.bm == 128 && c.bn == 128 ? 6 : 8;
    return c;
  }
  c.bm = 128;
  c.bn = 256;
  c.stages = 4;
  c.cluster = 2;
  c.epi = 2;
  return c;
}

static size_t smem_bytes(const Cfg &c) {
  size_t stage = (size_t)(c.arows ? c.arows : c.bm) * 64 * 2 + (size_t)c.bn * 64 * 2;
  return c.stages * stage + (c.splitk ? 0 : 2 * c.epi * 8192) + 16 * c.stages + 112 + 1024;
}

/* EPI_BUFS must divide the warpgroup's output boxes (rounded up, as the kernel counts them: a
 * width between multiples of the box ends in an overlapping box); as many stages as asked for
 * that fit */
static Cfg fix_cfg(Cfg c, const Prob &p) {
  int wgn = c.bm == 128 ? c.bn : c.bn / 2;
  int boxes = (wgn * dt_size(p.dout) + 127) / 128;
  if (!c.splitk && boxes >= 1) { /* the direct-store epilogue has no staging boxes */
    if (c.epi > boxes) c.epi = boxes;
    while (boxes % c.epi) c.epi--;
  }
  while (smem_bytes(c) > 232448 && c.stages > 2) c.stages--;
  return c;
}

/* ------------------------------------------------------------------------------------------ */
/* NVRTC                                                                                       */
/* ------------------------------------------------------------------------------------------ */

static std::string g_src_path = "kernels/gemm/gemm.cu", g_inc = "include", g_root = ".";
static std::string g_source;

struct Kern {
  CUmodule mod;
  CUfunction fn;
  int regs;
  double compile_s;
  int max_clusters;
};
static std::map<std::string, Kern> g_kern;

static std::vector<std::string> defines(const Cfg &c, const Prob &p) {
  std::vector<std::string> d;
  char b[96];
#define D(name, val)                                 \
  snprintf(b, sizeof b, "-DWEFT_GEMM_%s=%d", name, (int)(val)); \
  d.push_back(b);
  D("BM", c.bm) D("BN", c.bn) D("A_ROWS", c.arows ? c.arows : c.bm) D("STAGES", c.stages) D("DTYPE_IN", p.din) D("OUT", p.dout)
  D("B_KMAJOR", p.bkmajor) D("CLUSTER_M", c.cluster) D("GROUP", c.group) D("EPI_BUFS", c.epi)
  D("ORDER_TABLE", c.table) D("HOOK_WAIT", c.wait) D("HOOK_NOTIFY", c.notify)
  D("SPLITK", c.splitk) D("MN_SWAP", c.mnswap) D("TIMEOUT_PRINTF", c.timeout_printf)
#undef D
  for (size_t i = 0; i < c.extra.size();) {
    size_t e = c.extra.find(' ', i);
    d.push_back(c.extra.substr(i, e - i));
    i = e + 1;
  }
  return d;
}

static bool g_compile_only = false;

static bool g_dry = false; /* --dry: the suites only compile their kernels (no GPU needed) */

static Kern *get_kernel(const Cfg &c0, const Prob &p, bool verbose) {
  Cfg c = fix_cfg(c0, p);
  std::vector<std::string> d = defines(c, p);
  std::string key;
  for (auto &s : d) key += s + " ";
  auto it = g_kern.find(key);
  if (it != g_kern.end()) return &it->second;
  if (smem_bytes(c) > 232448) {
    fprintf(stderr, "config %s needs %zu bytes of shared memory (> 232448)\n", cfg_str(c).c_str(),
            smem_bytes(c));
    exit(2);
  }
  std::vector<std::string> opts = {"--gpu-architecture=sm_90a", "-I" + g_inc, "-I" + g_root, "-default-device",
                                   "--ptxas-options=--verbose", "--ptxas-options=--warn-on-local-memory-usage",
                                   "-std=c++17"};
  for (auto &s : d) opts.push_back(s);
  std::vector<const char *> o;
  for (auto &s : opts) o.push_back(s.c_str());
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  nvrtcProgram prog;
  NV(nvrtcCreateProgram(&prog, g_source.c_str(), "gemm.cu", 0, NULL, NULL));
  nvrtcResult res = nvrtcCompileProgram(prog, (int)o.size(), o.data());
  size_t logn;
  NV(nvrtcGetProgramLogSize(prog, &logn));
  std::string log(logn, '\0');
  NV(nvrtcGetProgramLog(prog, &log[0]));
  clock_gettime(CLOCK_MONOTONIC, &t1);
  if (res != NVRTC_SUCCESS) {
    fprintf(stderr, "NVRTC failed (%s) for %s\n%s\n", nvrtcGetErrorString(res), key.c_str(),
            log.c_str());
    exit(2);
  }
  /* C7508 (setmaxnreg ignored), C7510/C7511/C7515 (wgmma serialised), local memory: failures */
  const char *bad[] = {"C7508", "C7510", "C7511", "C7515", "Local memory", "spill stores"};
  for (const char *b : bad) {
    const char *hit = strstr(log.c_str(), b);
    if (hit && !(strcmp(b, "spill stores") == 0 && strstr(log.c_str(), " 0 bytes spill stores"))) {
      if (strcmp(b, "C7510") == 0 && c.timeout_printf) continue; /* expected: printf is a call */
      fprintf(stderr, "ptxas problem (%s) for %s:\n%s\n", b, key.c_str(), log.c_str());
      exit(2);
    }
  }
  int regs = -1;
  const char *ent = strstr(log.c_str(), "Function properties for weft_gemm\n");
  const char *u = ent ? strstr(ent, "Used ") : NULL;
  if (u) sscanf(u, "Used %d registers", &regs);
  size_t n;
  NV(nvrtcGetCUBINSize(prog, &n));
  std::vector<char> cubin(n);
  NV(nvrtcGetCUBIN(prog, cubin.data()));
  NV(nvrtcDestroyProgram(&prog));
  if (const char *dir = getenv("GEMM_DEV_CUBIN_DIR")) {
    /* for cuobjdump -sass: one file per specialisation, named by its position */
    std::string path = std::string(dir) + "/k" + std::to_string(g_kern.size()) + ".cubin";
    FILE *cf = fopen(path.c_str(), "wb");
    if (cf) {
      fwrite(cubin.data(), 1, n, cf);
      fclose(cf);
      printf("cubin %s: %s\n", path.c_str(), key.c_str());
    }
  }
  Kern k;
  k.regs = regs;
  k.compile_s = (t1.tv_sec - t0.tv_sec) + 1e-9 * (t1.tv_nsec - t0.tv_nsec);
  k.max_clusters = 0;
  if (verbose || g_compile_only || g_dry)
    printf("compiled %-60s regs %d smem %zu  %.2f s\n", cfg_str(c).c_str(), regs, smem_bytes(c),
           k.compile_s);
  if (!g_compile_only && !g_dry) {
    CU(cuModuleLoadData(&k.mod, cubin.data()));
    CU(cuModuleGetFunction(&k.fn, k.mod, "weft_gemm"));
    CU(cuFuncSetAttribute(k.fn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                          (int)smem_bytes(c)));
    if (c.cluster > 1)
      CU(cuFuncSetAttribute(k.fn, CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED, 0));
    CUlaunchConfig lc;
    memset(&lc, 0, sizeof lc);
    CUlaunchAttribute at[1];
    at[0].id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
    at[0].value.clusterDim.x = c.cluster;
    at[0].value.clusterDim.y = 1;
    at[0].value.clusterDim.z = 1;
    lc.gridDimX = g_sms;
    lc.gridDimY = lc.gridDimZ = 1;
    lc.blockDimX = 384;
    lc.blockDimY = lc.blockDimZ = 1;
    lc.sharedMemBytes = (unsigned)smem_bytes(c);
    lc.attrs = at;
    lc.numAttrs = 1;
    int nc = 0;
    CU(cuOccupancyMaxActiveClusters(&nc, k.fn, &lc));
    k.max_clusters = nc;
    if (verbose) printf("  max active clusters %d (x%d CTAs)\n", nc, c.cluster);
  }
  return &(g_kern[key] = k);
}

/* ------------------------------------------------------------------------------------------ */
/* data, reference, error                                                                      */
/* ------------------------------------------------------------------------------------------ */

__device__ __forceinline__ float to_f(const __nv_bfloat16 *p, size_t i) { return __bfloat162float(p[i]); }
__device__ __forceinline__ float to_f(const __half *p, size_t i) { return __half2float(p[i]); }
__device__ __forceinline__ float to_f(const float *p, size_t i) { return p[i]; }

__device__ __forceinline__ uint32_t hash32(uint64_t x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdULL;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ULL;
  x ^= x >> 33;
  return (uint32_t)x;
}

/* uniform in [-1, 1], never exactly zero */
__global__ void fill_random(void *p, int dt, size_t n, uint64_t seed) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
       i += (size_t)gridDim.x * blockDim.x) {
    float v = ((hash32(seed * 0x9E3779B97F4A7C15ULL + i) >> 8) + 0.5f) * (2.0f / 16777216.0f) - 1.0f;
    if (dt == DT_BF16) ((__nv_bfloat16 *)p)[i] = __float2bfloat16(v);
    else if (dt == DT_FP16) ((__half *)p)[i] = __float2half(v);
    else ((float *)p)[i] = v;
  }
}

__global__ void fill_u16(uint16_t *p, size_t n, uint16_t v) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
       i += (size_t)gridDim.x * blockDim.x)
    p[i] = v;
}

/* float64 reference, 16x16 outputs per block through shared-memory tiles (coalesced for both
 * B layouts) */
template <typename T>
__global__ void ref_gemm(const T *A, const T *B, double *C, int M, int N, int K, int bkmajor) {
  __shared__ float As[16][17], Bs[16][17];
  int tx = threadIdx.x, ty = threadIdx.y;
  int m = blockIdx.y * 16 + ty, n = blockIdx.x * 16 + tx;
  double s = 0;
  for (int k0 = 0; k0 < K; k0 += 16) {
    int am = blockIdx.y * 16 + ty, ak = k0 + tx;
    As[ty][tx] = (am < M && ak < K) ? to_f(A, (size_t)am * K + ak) : 0.f;
    if (bkmajor) { /* B[n][k]: tx along k */
      int bn = blockIdx.x * 16 + ty, bk = k0 + tx;
      Bs[ty][tx] = (bn < N && bk < K) ? to_f(B, (size_t)bn * K + bk) : 0.f; /* Bs[n][k] */
    } else {        /* B[k][n]: tx along n */
      int bk = k0 + ty, bn = blockIdx.x * 16 + tx;
      Bs[tx][ty] = (bn < N && bk < K) ? to_f(B, (size_t)bk * N + bn) : 0.f;
    }
    __syncthreads();
#pragma unroll
    for (int kk = 0; kk < 16; kk++) s += (double)As[ty][kk] * (double)Bs[tx][kk];
    __syncthreads();
  }
  if (m < M && n < N) C[(size_t)m * N + n] = s;
}

/* sums (out-ref)^2, ref^2, and counts non-finite outputs */
template <typename TO, typename TR>
__global__ void err_kernel(const TO *out, const TR *ref, size_t n, double *acc,
                           unsigned long long *bad) {
  double e = 0, r = 0;
  unsigned long long b = 0;
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
       i += (size_t)gridDim.x * blockDim.x) {
    double o = to_f(out, i);
    double x;
    if constexpr (std::is_same<TR, double>::value) x = ref[i];
    else x = to_f(ref, i);
    if (!isfinite(o)) b++;
    else e += (o - x) * (o - x);
    r += x * x;
  }
  for (int off = 16; off; off >>= 1) {
    e += __shfl_down_sync(~0u, e, off);
    r += __shfl_down_sync(~0u, r, off);
    b += __shfl_down_sync(~0u, b, off);
  }
  if ((threadIdx.x & 31) == 0) {
    atomicAdd(&acc[0], e);
    atomicAdd(&acc[1], r);
    atomicAdd(bad, b);
  }
}

/* bit-exact compare */
__global__ void diff_bytes(const uint32_t *a, const uint32_t *b, size_t n, unsigned long long *cnt) {
  unsigned long long c = 0;
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
       i += (size_t)gridDim.x * blockDim.x)
    c += a[i] != b[i];
  atomicAdd(cnt, c);
}

static double *g_acc;
static unsigned long long *g_bad;

static double norm_err(const void *out, int dout, const void *ref, int dref, size_t n,
                       unsigned long long *nbad) {
  CK(cudaMemset(g_acc, 0, 2 * sizeof(double)));
  CK(cudaMemset(g_bad, 0, sizeof *g_bad));
  dim3 g(1024), b(256);
#define E(TO, TR) err_kernel<TO, TR><<<g, b>>>((const TO *)out, (const TR *)ref, n, g_acc, g_bad)
  if (dref == 3) { /* double */
    if (dout == DT_BF16) E(__nv_bfloat16, double);
    else if (dout == DT_FP16) E(__half, double);
    else E(float, double);
  } else {
    if (dout == DT_BF16) E(__nv_bfloat16, __nv_bfloat16);
    else if (dout == DT_FP16) E(__half, __half);
    else E(float, float);
  }
#undef E
  CK(cudaGetLastError());
  double h[2];
  CK(cudaMemcpy(h, g_acc, sizeof h, cudaMemcpyDeviceToHost));
  CK(cudaMemcpy(nbad, g_bad, sizeof *nbad, cudaMemcpyDeviceToHost));
  return sqrt(h[0]) / sqrt(h[1]);
}

/* ------------------------------------------------------------------------------------------ */
/* a problem instance on the GPU                                                               */
/* ------------------------------------------------------------------------------------------ */

struct Inst {
  Prob p;
  void *A, *B, *C, *C2, *Cref;
  float *ws;
  unsigned *ctrs;
  int *table;
  unsigned long long *sig, *notif;
  size_t ws_floats;
  int n_sig, n_notif;
  std::vector<void *> Bs; /* extra copies of B, rotated through so that B is not L2-resident */
  size_t rot = 0;
};

/* a cold-L2 measurement for memory-bound shapes: the timed calls cycle through copies of B
 * whose total exceeds the L2 (same rotation for weft and cuBLAS) */
static void inst_rotate_setup(Inst &I, size_t min_bytes) {
  if (g_dry) return;
  size_t b = (size_t)I.p.N * I.p.K * 2;
  int n = (int)((min_bytes + b - 1) / b);
  if (n > 16) n = 16;
  I.Bs.push_back(I.B);
  for (int i = 1; i < n; i++) {
    void *q;
    CK(cudaMalloc(&q, b));
    CK(cudaMemcpy(q, I.B, b, cudaMemcpyDeviceToDevice));
    I.Bs.push_back(q);
  }
}
static void inst_rotate_next(Inst &I) {
  if (I.Bs.size() > 1) I.B = I.Bs[I.rot++ % I.Bs.size()];
}

struct Maps {
  CUtensorMap a, b, c;
};
/* encoded once per (buffers, shape, tile config): the launcher would cache them the same way */
static std::map<std::string, Maps> g_maps;

static uint64_t g_seed;

static void inst_alloc(Inst &I, const Prob &p) {
  I.p = p;
  if (g_dry) return;
  size_t a = (size_t)p.M * p.K, b = (size_t)p.N * p.K, c = (size_t)p.M * p.N;
  CK(cudaMalloc(&I.A, a * 2));
  CK(cudaMalloc(&I.B, b * 2));
  CK(cudaMalloc(&I.C, c * dt_size(p.dout)));
  CK(cudaMalloc(&I.C2, c * dt_size(p.dout)));
  CK(cudaMalloc(&I.Cref, c * dt_size(p.dout)));
  fill_random<<<1024, 256>>>(I.A, p.din, a, ++g_seed + (uint64_t)time(NULL) * 1000003ULL);
  fill_random<<<1024, 256>>>(I.B, p.din, b, ++g_seed + (uint64_t)time(NULL) * 1000003ULL);
  CK(cudaGetLastError());
  I.ws_floats = 0;
  I.ws = NULL;
  I.ctrs = NULL;
  int tiles = ((p.M + 63) / 64) * ((p.N + 127) / 128) + 64;
  CK(cudaMalloc(&I.ctrs, tiles * sizeof(unsigned)));
  CK(cudaMemset(I.ctrs, 0, tiles * sizeof(unsigned)));
  CK(cudaMalloc(&I.table, (size_t)tiles * sizeof(int)));
  I.n_sig = (p.M + 127) / 128 + 1;
  I.n_notif = I.n_sig;
  CK(cudaMalloc(&I.sig, I.n_sig * 8));
  CK(cudaMalloc(&I.notif, I.n_notif * 8));
  CK(cudaMemset(I.notif, 0, I.n_notif * 8));
  std::vector<unsigned long long> s(I.n_sig, 7); /* "already set": epoch 7 >= expected 5 */
  CK(cudaMemcpy(I.sig, s.data(), I.n_sig * 8, cudaMemcpyHostToDevice));
}

static void inst_free(Inst &I) {
  if (g_dry) return;
  g_maps.clear();
  if (!I.Bs.empty()) {
    I.B = I.Bs[0];
    for (size_t i = 1; i < I.Bs.size(); i++) CK(cudaFree(I.Bs[i]));
  }
  cudaFree(I.A), cudaFree(I.B), cudaFree(I.C), cudaFree(I.C2), cudaFree(I.Cref);
  if (I.ws) cudaFree(I.ws);
  cudaFree(I.ctrs), cudaFree(I.table), cudaFree(I.sig), cudaFree(I.notif);
}

static CUtensorMap make_map(void *ptr, int dt, uint64_t inner, uint64_t outer, uint32_t box0,
                            uint32_t box1) {
  CUtensorMap m;
  cuuint64_t dims[2] = {inner, outer};
  cuuint64_t strides[1] = {inner * dt_size(dt)};
  cuuint32_t box[2] = {box0, box1};
  cuuint32_t es[2] = {1, 1};
  CUtensorMapDataType t = dt == DT_BF16   ? CU_TENSOR_MAP_DATA_TYPE_BFLOAT16
                          : dt == DT_FP16 ? CU_TENSOR_MAP_DATA_TYPE_FLOAT16
                                          : CU_TENSOR_MAP_DATA_TYPE_FLOAT32;
  CU(cuTensorMapEncodeTiled(&m, t, 2, ptr, dims, strides, box, es, CU_TENSOR_MAP_INTERLEAVE_NONE,
                            CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                            CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE));
  return m;
}

static weft_device_error_t *g_err_host, *g_err_dev;

/* one launch of weft on instance I writing `out` */
static void run_weft(Inst &I, const Cfg &c0, Kern *k, void *out, cudaStream_t st) {
  const Prob &p = I.p;
  Cfg c = fix_cfg(c0, p);
  char key[256];
  snprintf(key, sizeof key, "%p %p %p %d %d %d %d %d %d %d %d %d %d %d", I.A, I.B, out, p.M, p.N,
           p.K, p.din, p.dout, p.bkmajor, c.bm, c.bn, c.cluster, c.splitk, c.arows);
  auto mit = g_maps.find(key);
  if (mit == g_maps.end()) {
    Maps m;
    m.a = make_map(I.A, p.din, p.K, p.M, 64, c.arows ? c.arows : c.bm);
    m.b = p.bkmajor ? make_map(I.B, p.din, p.K, p.N, 64, c.bn / c.cluster)
                    : make_map(I.B, p.din, p.N, p.K, 64, 64);
    m.c = c.splitk ? m.a : make_map(out, p.dout, p.N, p.M, 128 / dt_size(p.dout), 64);
    mit = g_maps.insert(std::make_pair(std::string(key), m)).first;
  }
  CUtensorMap ta = mit->second.a, tb = mit->second.b, tc = mit->second.c;
  int tiles_m = (p.M + c.bm - 1) / c.bm, tiles_n = (p.N + c.bn - 1) / c.bn;
  int ctm = (tiles_m + c.cluster - 1) / c.cluster;
  int ks = c.splitk ? c.ks : 1;
  int work = ctm * tiles_n * ks;
  size_t need_ws = c.splitk ? (size_t)ks * tiles_m * c.bm * tiles_n * c.bn : 0;
  if (need_ws > I.ws_floats) {
    if (I.ws) CK(cudaFree(I.ws));
    CK(cudaMalloc(&I.ws, need_ws * 4));
    I.ws_floats = need_ws;
  }
  int clusters = c.grid ? c.grid / c.cluster : k->max_clusters;
  if (clusters > work) clusters = work;
  void *c_ptr = out;
  int *tab = c.table ? I.table : NULL;
  int rot = 0;
  int rps = 128, nrpc = 128;
  unsigned long long expected = 5, timeout = 2000000000ULL;
  float *ws = I.ws;
  unsigned *ctr = I.ctrs;
  int M = p.M, N = p.N, K = p.K;
  weft_device_error_t *err = g_err_dev;
  long long ldc = N, peer_stride = 0;
  int tail = 0; /* the split tail (WEFT_GEMM_TAIL) is measured through weft-bench gemm (TS=) */
  const unsigned long long *ll_epoch = NULL; /* the LL epilogue: weft-bench gemm_ar -a ll */
  unsigned long long ll_slot = 0;
  int ll_rank = 0, ll_world = 1;
  int own_row0 = 0, own_rows = 0; /* WEFT_GEMM_A_OWN: weft-bench ag_gemm */
  const char *ar_staging = NULL; /* WEFT_GEMM_AR_OWN: weft-bench gemm_ar */
  unsigned long long ar_slot = 0;
  const unsigned long long *ar_flags = NULL;
  int ar_row0 = 0, ar_rows = 0, ar_chunk = 1;
  char *ar_c = NULL; /* WEFT_GEMM_AR_SUMMERS */
  int a_tail_rows = 0; /* no partial-row A map here (weft-bench gemm measures that path) */
  void *args[] = {&ta,  &tb,      &tc,   &c_ptr, &M,    &N,  &K,   &tab, &rot, &I.sig,
                  &rps, &expected, &timeout, &I.notif, &nrpc, &ws, &ctr, &ks,  &err, &ldc,
                  &peer_stride, &tail, &ll_epoch, &ll_slot, &ll_rank, &ll_world, &ta, &own_row0,
                  &own_rows, &ta, &ar_staging, &ar_slot, &ar_flags, &ar_row0, &ar_rows,
                  &ar_chunk, &ar_c, &ta, &a_tail_rows};
  CUlaunchConfig lc;
  memset(&lc, 0, sizeof lc);
  CUlaunchAttribute at[1];
  at[0].id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
  at[0].value.clusterDim.x = c.cluster;
  at[0].value.clusterDim.y = 1;
  at[0].value.clusterDim.z = 1;
  lc.gridDimX = clusters * c.cluster;
  if (c.lcl > 1 && c.cluster == 1) { /* the unclustered kernel, launched in clusters */
    at[0].value.clusterDim.x = c.lcl;
    lc.gridDimX = (clusters + c.lcl - 1) / c.lcl * c.lcl;
  }
  lc.gridDimY = lc.gridDimZ = 1;
  lc.blockDimX = 384;
  lc.blockDimY = lc.blockDimZ = 1;
  lc.sharedMemBytes = (unsigned)smem_bytes(c);
  lc.hStream = (CUstream)st;
  lc.attrs = at;
  lc.numAttrs = 1;
  CU(cuLaunchKernelEx(&lc, k->fn, args, NULL));
}

static void prepare_table(Inst &I, const Cfg &c) {
  if (!c.table) return;
  const Prob &p = I.p;
  int tiles_m = (p.M + c.bm - 1) / c.bm, tiles_n = (p.N + c.bn - 1) / c.bn;
  int ctm = (tiles_m + c.cluster - 1) / c.cluster;
  std::vector<int> t((size_t)ctm * tiles_n);
  weft_gemm_order_hilbert_fill(ctm, tiles_n, t.data());
  CK(cudaMemcpy(I.table, t.data(), t.size() * sizeof(int), cudaMemcpyHostToDevice));
}

static cublasHandle_t g_blas;

static void run_cublas(Inst &I, void *out, cudaStream_t st) {
  const Prob &p = I.p;
  float one = 1.f, zero = 0.f;
  cudaDataType ti = p.din == DT_BF16 ? CUDA_R_16BF : CUDA_R_16F;
  cudaDataType to = p.dout == DT_BF16 ? CUDA_R_16BF : p.dout == DT_FP16 ? CUDA_R_16F : CUDA_R_32F;
  CB(cublasSetStream(g_blas, st));
  /* row-major C[M,N] = A[M,K] op(B)  <=>  column-major C^T[N,M] = op(B)^T A^T */
  if (p.bkmajor)
    CB(cublasGemmEx(g_blas, CUBLAS_OP_T, CUBLAS_OP_N, p.N, p.M, p.K, &one, I.B, ti, p.K, I.A, ti,
                    p.K, &zero, out, to, p.N, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
  else
    CB(cublasGemmEx(g_blas, CUBLAS_OP_N, CUBLAS_OP_N, p.N, p.M, p.K, &one, I.B, ti, p.N, I.A, ti,
                    p.K, &zero, out, to, p.N, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
}

static void poison(void *p, size_t bytes) {
  fill_u16<<<1024, 256>>>((uint16_t *)p, bytes / 2, 0xFFFF); /* NaN as bf16, fp16 and fp32 */
  CK(cudaGetLastError());
}

/* ------------------------------------------------------------------------------------------ */
/* checks and timing                                                                           */
/* ------------------------------------------------------------------------------------------ */

static int g_fail = 0;
static FILE *g_json = NULL;

static const char *shape_str(const Prob &p) {
  static char b[128];
  snprintf(b, sizeof b, "%dx%dx%d %s->%s B%s", p.M, p.N, p.K, dt_name[p.din], dt_name[p.dout],
           p.bkmajor ? "[N,K]" : "[K,N]");
  return b;
}

/* against float64: every element */
static bool check_ref64(Inst &I, const Cfg &c) {
  const Prob &p = I.p;
  Kern *k = get_kernel(c, p, false);
  if (g_dry) return true;
  prepare_table(I, c);
  size_t n = (size_t)p.M * p.N;
  double *ref;
  CK(cudaMalloc(&ref, n * 8));
  dim3 g((p.N + 15) / 16, (p.M + 15) / 16), tb(16, 16);
  if (p.din == DT_BF16)
    ref_gemm<<<g, tb>>>((const __nv_bfloat16 *)I.A, (const __nv_bfloat16 *)I.B, ref, p.M, p.N,
                         p.K, p.bkmajor);
  else
    ref_gemm<<<g, tb>>>((const __half *)I.A, (const __half *)I.B, ref, p.M, p.N, p.K, p.bkmajor);
  CK(cudaGetLastError());
  bool ok = true;
  for (int rep = 0; rep < 2; rep++) { /* twice: split-K counters must have reset themselves */
    poison(I.C, n * dt_size(p.dout));
    run_weft(I, c, k, I.C, 0);
    CK(cudaDeviceSynchronize());
    unsigned long long bad;
    double e = norm_err(I.C, p.dout, ref, 3, n, &bad);
    double tol = p.dout == DT_F32 ? 1e-4 : 5e-3;
    bool pass = bad == 0 && e <= tol && isfinite(e);
    if (rep == 1 || !pass)
      printf("  check %-34s %-48s err %.3e (tol %.0e) nonfinite %llu  %s\n", shape_str(p),
             cfg_str(c).c_str(), e, tol, bad, pass ? "ok" : "FAIL");
    ok &= pass;
  }
  CK(cudaFree(ref));
  if (!ok) g_fail++;
  return ok;
}

static double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

static int g_samples = 15;

/* times several runners interleaved (sample i of every runner before sample i+1 of any), each
 * sample in a fresh random order: in a fixed order a runner's speed depends on the one before it
 * (weft-bench: up to 3% on a long GEMM, tools/bench.h) */
struct Runner {
  std::string name;
  Cfg cfg;
  bool blas;
  Kern *k;
  std::vector<double> ms;
};

static void time_interleaved(Inst &I, std::vector<Runner> &rs) {
  cudaEvent_t e0, e1;
  CK(cudaEventCreate(&e0));
  CK(cudaEventCreate(&e1));
  double flops = 2.0 * I.p.M * I.p.N * I.p.K;
  (void)flops;
  /* warm-up and per-call estimate */
  int reps = 1;
  {
    for (auto &r : rs) {
      if (!r.blas) prepare_table(I, r.cfg);
      for (int i = 0; i < 3 * (int)std::max<size_t>(1, I.Bs.size()); i++) {
        inst_rotate_next(I);
        r.blas ? run_cublas(I, I.C2, 0) : run_weft(I, r.cfg, r.k, I.C, 0);
      }
    }
    CK(cudaEventRecord(e0));
    run_cublas(I, I.C2, 0);
    CK(cudaEventRecord(e1));
    CK(cudaEventSynchronize(e1));
    float ms;
    CK(cudaEventElapsedTime(&ms, e0, e1));
    reps = (int)ceil(0.5 / (ms > 1e-3 ? ms : 1e-3)); /* ~0.5 ms per sample */
    if (reps < 1) reps = 1;
    if (reps > 200) reps = 200;
  }
  std::vector<size_t> order(rs.size());
  std::mt19937 rng(12345);
  for (int s = 0; s < g_samples; s++) {
    std::iota(order.begin(), order.end(), 0);
    std::shuffle(order.begin(), order.end(), rng);
    for (size_t o : order) {
      Runner &r = rs[o];
      if (!r.blas && r.cfg.table) prepare_table(I, r.cfg);
      CK(cudaEventRecord(e0));
      for (int i = 0; i < reps; i++) {
        inst_rotate_next(I);
        r.blas ? run_cublas(I, I.C2, 0) : run_weft(I, r.cfg, r.k, I.C, 0);
      }
      CK(cudaEventRecord(e1));
      CK(cudaEventSynchronize(e1));
      float ms;
      CK(cudaEventElapsedTime(&ms, e0, e1));
      r.ms.push_back(ms / reps);
    }
  }
  CK(cudaEventDestroy(e0));
  CK(cudaEventDestroy(e1));
}

/* perf of `cfgs` vs cuBLAS on one shape; also checks weft's output against cuBLAS (every
 * element, 16-bit bound). Returns the best ratio. */
static double perf_shape(const Prob &p, std::vector<Cfg> cfgs, const char *tag,
                         bool cold_l2 = false) {
  Inst I;
  if (g_dry) {
    for (auto &c : cfgs) get_kernel(c, p, false);
    return 1.0;
  }
  inst_alloc(I, p);
  if (cold_l2) inst_rotate_setup(I, (size_t)200 << 20);
  size_t n = (size_t)p.M * p.N;
  std::vector<Runner> rs;
  for (auto &c : cfgs) {
    Runner r;
    r.name = cfg_str(c);
    r.cfg = c;
    r.blas = false;
    r.k = get_kernel(c, p, false);
    rs.push_back(r);
  }
  Runner b;
  b.name = "cublas";
  b.blas = true;
  b.k = NULL;
  rs.push_back(b);
  /* correctness vs cuBLAS first */
  poison(I.C2, n * dt_size(p.dout));
  run_cublas(I, I.C2, 0);
  for (auto &r : rs) {
    if (r.blas) continue;
    prepare_table(I, r.cfg);
    poison(I.C, n * dt_size(p.dout));
    run_weft(I, r.cfg, r.k, I.C, 0);
    CK(cudaDeviceSynchronize());
    unsigned long long bad;
    double e = norm_err(I.C, p.dout, I.C2, p.dout, n, &bad);
    if (bad || !(e <= 5e-3)) {
      printf("  FAIL vs cublas %s %s err %.3e nonfinite %llu\n", shape_str(p), r.name.c_str(), e,
             bad);
      g_fail++;
    }
  }
  time_interleaved(I, rs);
  double flops = 2.0 * p.M * p.N * p.K;
  double tb = median(rs.back().ms);
  double best = 0;
  for (auto &r : rs) {
    double t = median(r.ms);
    double ratio = tb / t;
    if (!r.blas && ratio > best) best = ratio;
    printf("  %-6s %-34s %-50s %9.1f us %7.1f TFLOP/s  x%.3f\n", tag, shape_str(p), r.name.c_str(),
           t * 1e3, flops / (t * 1e-3) / 1e12, ratio);
    if (g_json)
      fprintf(g_json,
              "{\"tag\":\"%s\",\"M\":%d,\"N\":%d,\"K\":%d,\"din\":\"%s\",\"dout\":\"%s\",\"b\":\"%s\","
              "\"impl\":\"%s\",\"us\":%.3f,\"tflops\":%.2f,\"ratio_vs_cublas\":%.4f}\n",
              tag, p.M, p.N, p.K, dt_name[p.din], dt_name[p.dout], p.bkmajor ? "nk" : "kn",
              r.name.c_str(), t * 1e3, flops / (t * 1e-3) / 1e12, ratio);
  }
  fflush(stdout);
  inst_free(I);
  return best;
}

/* ------------------------------------------------------------------------------------------ */
/* suites                                                                                      */
/* ------------------------------------------------------------------------------------------ */

static const int big_shapes[][3] = {
    /* TP=4 AG+GEMM */ {8192, 2752, 4096}, {8192, 3584, 4096}, {8192, 7168, 8192},
    {8192, 13312, 16384}, {8192, 7392, 8192},
    /* TP=4 GEMM+RS */ {8192, 4096, 2752}, {8192, 4096, 3584}, {8192, 8192, 7168},
    {8192, 16384, 13312}, {8192, 8192, 7392},
    /* TP=8 */ {8192, 1376, 4096}, {8192, 1792, 4096}, {8192, 3584, 8192}, {8192, 6656, 16384},
    {8192, 3696, 8192}, {8192, 4096, 1376}, {8192, 4096, 1792}, {8192, 8192, 3584},
    {8192, 16384, 6656}, {8192, 8192, 3696},
    /* square */ {8192, 8192, 8192}};
static const int nk_small[][2] = {{2752, 4096}, {7168, 8192}, {4096, 3584}, {16384, 13312},
                                  {8192, 7168}, {1376, 4096}};

static void suite_compile(void) {
  /* every specialisation the heuristic can choose, plus the hook and layout variants */
  g_compile_only = true;
  for (int din = 0; din < 2; din++)
    for (int dout = 0; dout < 3; dout++)
      for (int bk = 0; bk < 2; bk++) {
        Prob p = {8192, 8192, 8192, din, dout, bk};
        Cfg c = choose_config(p);
        get_kernel(c, p, true);
        c.wait = c.notify = 1;
        get_kernel(c, p, true);
        Prob s = {16, 8192, 8192, din, dout, bk};
        get_kernel(choose_config(s), s, true);
        Prob s2 = {128, 8192, 8192, din, dout, bk};
        get_kernel(choose_config(s2), s2, true);
      }
  g_compile_only = false;
}

static void suite_correct(void) {
  printf("== correctness vs float64 (every element)\n");
  const int shapes[][3] = {{1000, 1000, 1000}, {257, 520, 136},  {128, 256, 64},
                           {1, 264, 520},      {77, 1032, 2056}, {1999, 776, 1288},
                           {512, 2048, 8}};
  for (auto &s : shapes)
    for (int din = 0; din < 2; din++)
      for (int dout = 0; dout < 3; dout++)
        for (int bk = 0; bk < 2; bk++) {
          if (din == 1 && dout == 0) continue; /* fp16 -> bf16 is not a real combination */
          Prob p = {s[0], s[1], s[2], din, dout, bk};
          Inst I;
          inst_alloc(I, p);
          Cfg c = choose_config(p);
          check_ref64(I, c);
          if (!bk && s[0] == 1000 && din == 0 && dout == 0) { /* probe: the other LBO/SBO order */
            Cfg cs = c;
            cs.mnswap = 1;
            int f = g_fail;
            bool ok = check_ref64(I, cs);
            printf("  probe (not counted): N-major B with LBO/SBO swapped %s\n",
                   ok ? "ALSO PASSES" : "fails (expected)");
            g_fail = f;
          }
          if (p.M > 128) { /* also the non-cluster and BN=128 variants */
            Cfg c2 = c;
            c2.cluster = 1;
            c2.bn = 128;
            c2.stages = 6;
            check_ref64(I, c2);
          } else { /* small M: the other epilogues of the same tile */
            Cfg c2 = c; /* the workspace reduction (two splits) or the direct store (one) */
            c2.splitk = 1;
            c2.ks = c.ks > 1 || (p.K + 63) / 64 < 2 ? 1 : 2;
            check_ref64(I, c2);
            if (c.bn / (c.bm == 128 ? 1 : 2) >= 64) { /* the TMA-store kernel */
              Cfg c3 = c;
              c3.splitk = 0;
              c3.ks = 1;
              check_ref64(I, c3);
            }
          }
          inst_free(I);
        }
}

/* a few configurations on one shape: run first, so that a broken build stops the run early */
static void suite_smoke(void) {
  printf("== smoke\n");
  Prob p = {1000, 1000, 1000, DT_BF16, DT_BF16, 1};
  Inst I;
  inst_alloc(I, p);
  Cfg c = choose_config(p);
  check_ref64(I, c);
  c.cluster = 1;
  check_ref64(I, c);
  Prob q = {16, 1000, 1000, DT_BF16, DT_BF16, 1};
  Inst J;
  inst_alloc(J, q);
  check_ref64(J, choose_config(q));
  inst_free(I);
  inst_free(J);
}

static void suite_hooks(void) {
  printf("== hooks: on vs off bit-identical, notify counts, cost\n");
  const int shapes[][3] = {{1000, 1000, 1000}, {16, 1000, 2048}, {100, 520, 4096},
                           {8192, 8192, 8192}, {8192, 3584, 8192}};
  for (auto &s : shapes) {
    Prob p = {s[0], s[1], s[2], DT_BF16, DT_BF16, 1};
    Inst I;
    inst_alloc(I, p);
    Cfg c = choose_config(p), h = c, hd = c;
    h.wait = h.notify = 1;
    hd.wait = hd.notify = 1;
    hd.extra += "-DWEFT_GEMM_NOTIFY_SYS=1 "; /* the overlapped ops' scope */
    size_t n = (size_t)p.M * p.N;
    Kern *k = get_kernel(c, p, false), *kh = get_kernel(h, p, false),
         *khd = get_kernel(hd, p, false);
    if (g_dry) continue;
    /* expected counters: +1 per 64-row (or BN/2-col) sub-tile inside the matrix */
    std::vector<unsigned long long> want(I.n_notif, 0), got(I.n_notif);
    int tm = (p.M + c.bm - 1) / c.bm, tn = (p.N + c.bn - 1) / c.bn;
    tm = (tm + c.cluster - 1) / c.cluster * c.cluster;
    for (int i = 0; i < tm; i++)
      for (int j = 0; j < tn; j++)
        for (int w = 0; w < 2; w++) {
          int r0 = i * c.bm + (c.bm == 128 ? w * 64 : 0);
          int c0 = j * c.bn + (c.bm == 128 ? 0 : w * c.bn / 2);
          if (r0 < p.M && c0 < p.N) want[r0 / 128]++;
        }
    poison(I.C, n * dt_size(p.dout));
    run_weft(I, c, k, I.C, 0);
    for (int v = 0; v < 2; v++) {
      poison(I.C2, n * dt_size(p.dout));
      CK(cudaMemset(I.notif, 0, I.n_notif * 8));
      run_weft(I, v ? hd : h, v ? khd : kh, I.C2, 0);
      CK(cudaDeviceSynchronize());
      CK(cudaMemset(g_bad, 0, 8));
      diff_bytes<<<1024, 256>>>((const uint32_t *)I.C, (const uint32_t *)I.C2, n / 2, g_bad);
      CK(cudaGetLastError());
      unsigned long long nd;
      CK(cudaMemcpy(&nd, g_bad, 8, cudaMemcpyDeviceToHost));
      CK(cudaMemcpy(got.data(), I.notif, I.n_notif * 8, cudaMemcpyDeviceToHost));
      bool cnt_ok = want == got;
      printf("  hooks %dx%dx%d %s: outputs differ in %llu words, notify counters %s\n", p.M, p.N,
             p.K, v ? "sys scope" : "gpu scope", nd, cnt_ok ? "exact" : "WRONG");
      if (nd || !cnt_ok) g_fail++;
    }
    if (p.M >= 4096) {
      std::vector<Runner> rs(4);
      rs[0].name = "weft";
      rs[0].cfg = c;
      rs[0].blas = false;
      rs[0].k = k;
      rs[1].name = "weft+hooks";
      rs[1].cfg = h;
      rs[1].blas = false;
      rs[1].k = kh;
      rs[2].name = "weft+hooks(sys-scope notify)";
      rs[2].cfg = hd;
      rs[2].blas = false;
      rs[2].k = khd;
      rs[3].name = "cublas";
      rs[3].blas = true;
      rs[3].k = NULL;
      time_interleaved(I, rs);
      double t0 = median(rs[0].ms), t1 = median(rs[1].ms), t2 = median(rs[2].ms),
             tb = median(rs[3].ms);
      double fl = 2.0 * p.M * p.N * p.K;
      printf("  hooks %dx%dx%d: weft %.1f TFLOP/s | +wait+notify %.1f (%+.2f%%) | +wait+sys-scope "
             "notify %.1f (%+.2f%%) | cublas %.1f\n",
             p.M, p.N, p.K, fl / t0 / 1e9, fl / t1 / 1e9, (t1 / t0 - 1) * 100, fl / t2 / 1e9,
             (t2 / t0 - 1) * 100, fl / tb / 1e9);
      if (g_json)
        fprintf(g_json,
                "{\"tag\":\"hooks\",\"M\":%d,\"N\":%d,\"K\":%d,\"us\":%.3f,\"us_hooks\":%.3f,"
                "\"us_hooks_sys\":%.3f,\"us_cublas\":%.3f}\n",
                p.M, p.N, p.K, t0 * 1e3, t1 * 1e3, t2 * 1e3, tb * 1e3);
    }
    inst_free(I);
  }
}

static void suite_perf(void) {
  printf("== perf vs cuBLAS (bf16, B [N,K]; medians of %d interleaved samples)\n", g_samples);
  std::vector<double> ratios;
  for (auto &s : big_shapes) {
    Prob p = {s[0], s[1], s[2], DT_BF16, DT_BF16, 1};
    Cfg c = choose_config(p);
    Cfg c2 = c;
    c2.bn = 128;
    c2.stages = 6;
    ratios.push_back(perf_shape(p, {c, c2}, "big"));
  }
  double mn = *std::min_element(ratios.begin(), ratios.end());
  printf("  big shapes: min best ratio %.3f\n", mn);
}

static void suite_layouts(void) {
  printf("== perf of other dtypes/layouts at 8192^3 and one TP shape\n");
  const int shapes[][3] = {{8192, 8192, 8192}, {8192, 3584, 8192}};
  for (auto &s : shapes)
    for (int v = 0; v < 3; v++) {
      Prob p = {s[0], s[1], s[2], v == 1 ? DT_FP16 : DT_BF16,
                v == 1 ? DT_FP16 : (v == 2 ? DT_F32 : DT_BF16), 1};
      perf_shape(p, {choose_config(p)}, "dtype");
      p.bkmajor = 0;
      perf_shape(p, {choose_config(p)}, "dtype");
    }
}

static void suite_small(void) {
  printf("== small M vs cuBLAS\n");
  const int ms[] = {1, 16, 64, 128};
  for (auto &nk : nk_small)
    for (int m : ms) {
      Prob p = {m, nk[0], nk[1], DT_BF16, DT_BF16, 1};
      /* what the heuristic picks, alone: the figure weft_gemm gives (smallsweep explores) */
      perf_shape(p, {choose_config(p)}, "small", true);
    }
}

/* small M: a wide sweep (BM, BN, stages, splits) per decode shape, to set choose_config() */
static void suite_smallsweep(void) {
  printf("== small M sweep (cold B)\n");
  const int ms[] = {1, 16, 64, 128};
  for (auto &nk : nk_small)
    for (int m : ms) {
      Prob p = {m, nk[0], nk[1], DT_BF16, DT_BF16, 1};
      std::vector<Cfg> v;
      int nkb = (p.K + 63) / 64;
      for (int bm : {64, 128})
        for (int bn : {64, 128, 256}) {
          if (bm == 128 && m <= 64 && bn != 128) continue;
          int tiles = ((m + bm - 1) / bm) * ((p.N + bn - 1) / bn);
          for (int ks : {1, 2, 3, 4, 6, 8, 12, 16}) {
            if (ks > 1 && (ks > nkb / 2 || tiles * ks > 2 * g_sms)) continue;
            if (ks == 1 && tiles > 4 * g_sms) continue;
            /* ks == 1: both epilogues (TMA store; direct stores of the split-K kernel) */
            for (int direct = ks > 1 || (bm == 64 && bn == 64); direct <= 1; direct++)
              /* 2x1 clusters (B multicast) where there are two M tiles */
              for (int cl = 1; cl <= (bm == 64 && m > 64 ? 2 : 1); cl++) {
                Cfg c;
                c.bm = bm, c.bn = bn, c.cluster = cl, c.ks = ks, c.splitk = direct;
                size_t stage = (size_t)bm * 128 + (size_t)bn * 128;
                int epi = c.splitk ? 0 : 2 * 2 * 8192;
                c.stages = (int)std::min<size_t>(8, (232448 - 1024 - 64 - epi) / stage);
                v.push_back(c);
              }
          }
        }
      perf_shape(p, v, "sweep", true);
    }
}

/* Large M: the tile width against wave quantisation (tiles / SMs just above a whole number
 * leaves most SMs idle in the last wave) on the layers' per-GPU shapes, 128x256 against 128x192
 * and 128x128 tiles. */
static void suite_largesweep(void) {
  static const int shapes[][3] = {{8192, 2752, 4096}, {8192, 1792, 4096}, {8192, 3696, 8192},
                                  {8192, 7392, 8192}, {8192, 13312, 16384}, {8192, 1376, 4096},
                                  {8192, 4096, 2752}, {8192, 8192, 8192}};
  static const char *cfgs[] = {"BM=128,BN=256,ST=4,CL=2,EPI=2", "BM=128,BN=192,ST=4,CL=2,EPI=3",
                               "BM=128,BN=192,ST=5,CL=2,EPI=1", "BM=128,BN=128,ST=6,CL=2,EPI=2",
                               "BM=128,BN=256,ST=4,CL=2,EPI=2,G=16", "BM=128,BN=256,ST=4,CL=1,EPI=2"};
  for (auto &s : shapes) {
    Prob p;
    p.M = s[0], p.N = s[1], p.K = s[2];
    std::vector<Cfg> cs;
    for (const char *c : cfgs) {
      Cfg x;
      parse_cfg(x, c);
      cs.push_back(x);
    }
    perf_shape(p, cs, "large");
  }
}

/* What each hook costs with its signals already set: the wait, the notify (made by the storer
 * threads) at gpu and sys scope, and both. Shapes: those where the hooks cost most on
 * H100 (few k-blocks per tile, or 128-column tiles), and 8192^3. */
static void suite_hookcost(void) {
  /* each with the tile the library's wave estimate picks for it */
  static const struct { int m, n, k; const char *cfg; } shapes[] = {
      {8192, 2752, 4096, "BN=128,ST=6"}, {8192, 1792, 4096, "BN=128,ST=6"},
      {8192, 4096, 1376, "BN=256,ST=4"}, {8192, 4096, 1792, "BN=256,ST=4"},
      {8192, 8192, 3584, "BN=256,ST=4"}, {8192, 8192, 8192, "BN=256,ST=4"}};
  static const char *hooks[] = {"WAIT=1", "NOTIFY=1", "NOTIFY=1,X_NOTIFY_SYS=1",
                                "WAIT=1,NOTIFY=1,X_NOTIFY_SYS=1"};
  for (auto &s : shapes) {
    Prob p = {s.m, s.n, s.k, DT_BF16, DT_BF16, 1};
    std::vector<Cfg> cs(1, choose_config(p));
    parse_cfg(cs[0], s.cfg);
    for (const char *h : hooks) {
      Cfg x = cs[0];
      parse_cfg(x, h);
      cs.push_back(x);
    }
    perf_shape(p, cs, "hookcost");
  }
}

/* --trace: one launch (after warm-up, so L2 holds what fits, as in back-to-back calls) of the
 * kernel built with WEFT_GEMM_TRACE=1; per CTA %globaltimer stamps, in us: entry after the first
 * CTA's, entry to the first full stage, the mainloop(s), the last epilogue; medians and maxima. */
static void trace_run(const Prob &p, Cfg c) {
  c.extra += "-DWEFT_GEMM_TRACE=1 ";
  Inst I;
  inst_alloc(I, p);
  Kern *k = get_kernel(c, p, false);
  const int cap = 4 * 1024;
  unsigned long long *buf, *save = I.notif;
  CK(cudaMalloc(&buf, cap * 8));
  I.notif = buf;
  for (int i = 0; i < 5; i++) run_weft(I, c, k, I.C, 0);
  CK(cudaMemset(buf, 0, cap * 8));
  run_weft(I, c, k, I.C, 0);
  CK(cudaDeviceSynchronize());
  std::vector<unsigned long long> t(cap);
  CK(cudaMemcpy(t.data(), buf, cap * 8, cudaMemcpyDeviceToHost));
  unsigned long long t0 = ~0ull;
  int n = 0;
  for (int i = 0; i < cap / 4 && t[4 * i]; i++, n++) t0 = std::min(t0, t[4 * i]);
  std::vector<double> v[5];
  for (int i = 0; i < n; i++) {
    const unsigned long long *q = &t[4 * i];
    if (!q[1] || !q[2] || !q[3]) continue; /* a CTA without work */
    v[0].push_back((q[0] - t0) * 1e-3);
    v[1].push_back((q[1] - q[0]) * 1e-3);
    v[2].push_back(((long long)q[2] - (long long)q[1]) * 1e-3);
    v[3].push_back(((long long)q[3] - (long long)q[2]) * 1e-3);
    v[4].push_back((q[3] - t0) * 1e-3);
  }
  auto mx = [](std::vector<double> x) { return x.empty() ? 0.0 : *std::max_element(x.begin(), x.end()); };
  printf("  trace %-26s %-44s %d CTAs (%zu with work): entry +%.2f/%.2f | first data %.2f/%.2f | "
         "mainloops %.2f/%.2f | last epilogue %.2f/%.2f | end %.2f/%.2f us (median/max)\n",
         shape_str(p), cfg_str(c).c_str(), n, v[0].size(), median(v[0]), mx(v[0]), median(v[1]),
         mx(v[1]), median(v[2]), mx(v[2]), median(v[3]), mx(v[3]), median(v[4]), mx(v[4]));
  I.notif = save;
  CK(cudaFree(buf));
  inst_free(I);
}

static void suite_variants(void) {
  printf("== variant ladder at 8192^3 and 8192x3584x8192\n");
  const int shapes[][3] = {{8192, 8192, 8192}, {8192, 3584, 8192}};
  for (auto &s : shapes) {
    Prob p = {s[0], s[1], s[2], DT_BF16, DT_BF16, 1};
    Cfg base = choose_config(p);
    std::vector<Cfg> v;
    Cfg c;
    c = base; c.cluster = 1; v.push_back(c);            /* no cluster */
    c = base; v.push_back(c);                           /* recommended */
    c = base; c.stages = 3; c.epi = 4; v.push_back(c);  /* 3 stages, one epilogue round */
    c = base; c.table = 1; v.push_back(c);              /* Hilbert table */
    c = base; c.group = 4; v.push_back(c);
    c = base; c.group = 16; v.push_back(c);
    c = base; c.bn = 128; c.stages = 6; v.push_back(c);
    perf_shape(p, v, "ladder");
  }
}

static void suite_timeout(void) {
  printf("== timeout: a wait on a signal that never arrives must trap with the record filled\n");
  Prob p = {1024, 1024, 1024, DT_BF16, DT_BF16, 1};
  Inst I;
  inst_alloc(I, p);
  Cfg c = choose_config(p);
  c.wait = 1;
  Kern *k = get_kernel(c, p, false);
  if (g_dry) return;
  std::vector<unsigned long long> s(I.n_sig, 7);
  s[3] = 2; /* rows 384..511 never ready */
  CK(cudaMemcpy(I.sig, s.data(), I.n_sig * 8, cudaMemcpyHostToDevice));
  memset(g_err_host, 0, sizeof *g_err_host);
  run_weft(I, c, k, I.C, 0); /* timeout 2 s */
  cudaError_t e = cudaDeviceSynchronize();
  printf("  kernel ended with: %s\n", cudaGetErrorString(e));
  printf("  record: status %u op \"%s\" signal %llu expected %llu observed %llu\n",
         g_err_host->status, g_err_host->op, (unsigned long long)g_err_host->signal_index,
         (unsigned long long)g_err_host->expected, (unsigned long long)g_err_host->observed);
  bool ok = e != cudaSuccess && g_err_host->status == WEFT_DEVICE_ERROR_TIMEOUT &&
            g_err_host->signal_index == 3 && g_err_host->expected == 5 &&
            g_err_host->observed == 2 && strncmp(g_err_host->op, "gemm tile ", 10) == 0;
  printf("  timeout path %s\n", ok ? "ok" : "FAIL");
  if (!ok) g_fail++;
  /* the context is dead now: exit */
  printf("%s\n", g_fail ? "FAILED" : "ALL OK");
  exit(g_fail ? 1 : 0);
}

int main(int argc, char **argv) {
  std::string suite;
  Prob p = {0, 0, 0, DT_BF16, DT_BF16, 1};
  std::vector<Cfg> cfgs;
  bool check = false, trace = false;
  const char *json = NULL;
  for (int i = 1; i < argc; i++) {
    std::string a = argv[i];
    auto nx = [&]() -> const char * {
      if (i + 1 >= argc) { fprintf(stderr, "%s needs a value\n", a.c_str()); exit(2); }
      return argv[++i];
    };
    auto dt = [](const char *s) { return !strcmp(s, "fp16") ? DT_FP16 : !strcmp(s, "f32") ? DT_F32 : DT_BF16; };
    if (a == "--suite") suite = nx();
    else if (a == "--m") p.M = atoi(nx());
    else if (a == "--n") p.N = atoi(nx());
    else if (a == "--k") p.K = atoi(nx());
    else if (a == "--dtype") p.din = dt(nx());
    else if (a == "--out") p.dout = dt(nx());
    else if (a == "--layout") p.bkmajor = strcmp(nx(), "kn") != 0;
    else if (a == "--cfg") { cfgs.push_back(Cfg()); parse_cfg(cfgs.back(), nx()); }
    else if (a == "--trace") trace = true;
    else if (a == "--check") check = true;
    else if (a == "--src") g_src_path = nx();
    else if (a == "--inc") g_inc = nx();
    else if (a == "--root") g_root = nx();
    else if (a == "--samples") g_samples = atoi(nx());
    else if (a == "--json") json = nx();
    else if (a == "--compile-only") g_compile_only = true;
    else if (a == "--dry") g_dry = true;
    else { fprintf(stderr, "unknown argument %s\n", a.c_str()); return 2; }
  }
  FILE *f = fopen(g_src_path.c_str(), "rb");
  if (!f) { fprintf(stderr, "cannot open %s\n", g_src_path.c_str()); return 2; }
  fseek(f, 0, SEEK_END);
  long sz = ftell(f);
  fseek(f, 0, SEEK_SET);
  g_source.resize(sz);
  if (fread(&g_source[0], 1, sz, f) != (size_t)sz) return 2;
  fclose(f);
  int nvm, nvn;
  NV(nvrtcVersion(&nvm, &nvn));
  printf("weft gemm_dev: NVRTC %d.%d, source %s\n", nvm, nvn, g_src_path.c_str());

  if (suite == "compile" || g_compile_only) {
    suite_compile();
    if (p.M) {
      g_compile_only = true;
      if (cfgs.empty()) cfgs.push_back(choose_config(p));
      for (auto &c : cfgs) get_kernel(c, p, true);
    }
    printf("%s\n", g_fail ? "FAILED" : "ALL OK");
    return g_fail ? 1 : 0;
  }
  if (g_dry) {
    if (suite == "all" || suite.empty()) suite = "smoke correct hooks variants perf layouts small timeout";
    for (const char *su : {"smoke", "correct", "hooks", "variants", "perf", "layouts", "small",
                           "timeout"})
      if (suite.find(su) != std::string::npos) {
        printf("== dry: %s\n", su);
        if (!strcmp(su, "smoke")) suite_smoke();
        if (!strcmp(su, "correct")) suite_correct();
        if (!strcmp(su, "hooks")) suite_hooks();
        if (!strcmp(su, "variants")) suite_variants();
        if (!strcmp(su, "largesweep")) suite_largesweep();
        if (!strcmp(su, "perf")) suite_perf();
        if (!strcmp(su, "layouts")) suite_layouts();
        if (!strcmp(su, "small")) suite_small();
        if (!strcmp(su, "timeout")) suite_timeout();
      }
    printf("dry: %zu kernels compiled, ALL OK\n", g_kern.size());
    return 0;
  }
  CK(cudaFree(0));
  cudaDeviceProp prop;
  CK(cudaGetDeviceProperties(&prop, 0));
  g_sms = prop.multiProcessorCount;
  int drv, rt;
  CK(cudaDriverGetVersion(&drv));
  CK(cudaRuntimeGetVersion(&rt));
  CB(cublasCreate(&g_blas));
  void *blas_ws; /* the workspace weft-bench gives cuBLAS (tools/bench.h); freed at exit */
  CK(cudaMalloc(&blas_ws, 32u << 20));
  CB(cublasSetWorkspace(g_blas, blas_ws, 32u << 20));
  int cbv;
  CB(cublasGetVersion(g_blas, &cbv));
  printf("device %s, %d SMs, driver %d, runtime %d, cuBLAS %d\n", prop.name, g_sms, drv, rt, cbv);
  CK(cudaMalloc(&g_acc, 2 * sizeof(double)));
  CK(cudaMalloc(&g_bad, sizeof *g_bad));
  CK(cudaHostAlloc((void **)&g_err_host, sizeof *g_err_host, cudaHostAllocMapped));
  memset(g_err_host, 0, sizeof *g_err_host);
  CK(cudaHostGetDevicePointer((void **)&g_err_dev, g_err_host, 0));
  g_seed = (uint64_t)time(NULL);
  if (json) g_json = fopen(json, "w");

  if (p.M) {
    if (cfgs.empty()) cfgs.push_back(choose_config(p));
    for (auto &c : cfgs) {
      get_kernel(c, p, true);
      if (check) {
        Inst I;
        inst_alloc(I, p);
        check_ref64(I, c);
        inst_free(I);
      }
    }
    perf_shape(p, cfgs, "one");
    if (trace)
      for (auto &c : cfgs) trace_run(p, c);
  }
  if (suite == "timeout") suite_timeout();
  if (suite == "smoke") suite_smoke();
  if (suite == "correct" || suite == "all") suite_correct();
  if (suite == "hooks" || suite == "all") suite_hooks();
  if (suite == "variants" || suite == "all") suite_variants();
  if (suite == "perf" || suite == "all") suite_perf();
  if (suite == "layouts" || suite == "all") suite_layouts();
  if (suite == "small" || suite == "all") suite_small();
  if (suite == "smallsweep") suite_smallsweep();
  if (suite == "largesweep") suite_largesweep();
  if (suite == "hookcost") suite_hookcost();
  if (g_json) fclose(g_json);
  printf("%s\n", g_fail ? "FAILED" : "ALL OK");
  return g_fail ? 1 : 0;
}
