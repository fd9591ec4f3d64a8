/*
 * test_allgather.c — weft_allgather bit for bit: every algorithm (copy engine, SM, LL, ring, auto),
 * sizes from 1 element to 256 MB in total including odd ones, odd offsets of both buffers,
 * in place, every dtype's element size, CUDA-graph capture and replay, and 1,000 back-to-back
 * calls with random per-rank delays and no host synchronisation. Data is a function of (rank,
 * call, byte), the output is poisoned before every call, every byte of every rank is checked.
 */
// weft-test: ranks=2,4 timeout=300
#include "gpu_test.h"

static const char *src =
    "#include <weft/device.cuh>\n"
    "#define PAT(r, c, i) ((unsigned char)((((i) + 1) * 0x9E3779B1u) ^ ((r) * 0x85EBCA6Bu) ^ ((c) * 0xC2B2AE35u)) >> 3)\n"
    "extern \"C\" __global__ void fill(unsigned char *p, unsigned long long n, int r, unsigned c) {\n"
    "  for (unsigned long long i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)\n"
    "    p[i] = PAT(r, c, (unsigned)i);\n"
    "}\n"
    "extern \"C\" __global__ void check(const unsigned char *recv, unsigned long long n, int world,\n"
    "                                 unsigned c, unsigned long long *wrong) {\n"
    "  for (unsigned long long i = blockIdx.x * blockDim.x + threadIdx.x; i < n * world; i += gridDim.x * blockDim.x)\n"
    "    if (recv[i] != PAT((int)(i / n), c, (unsigned)(i % n))) atomicAdd(wrong, 1ull);\n"
    "}\n"
    "extern \"C\" __global__ void delay(unsigned long long ns) {\n"
    "  unsigned long long t0 = weft_globaltimer();\n"
    "  while (weft_globaltimer() - t0 < ns) {}\n"
    "}\n";

static weft_comm_t *comm;
static weft_kernel_t *k_fill, *k_check, *k_delay;
static CUdeviceptr wrong;

static void launch(weft_kernel_t *k, unsigned grid, void **args, CUstream s) {
  weft_launch_config_t c = WEFT_LAUNCH_CONFIG_INIT;
  c.grid[0] = grid;
  c.block[0] = 256;
  OK(weft_kernel_launch(k, &c, args, s));
}

/* One checked call: fill my chunk, poison recv, all-gather, check every rank's chunk. */
static void one(unsigned char *recv, unsigned char *send, size_t count, weft_dtype_t dt,
                weft_algo_t algo, unsigned call, CUstream s) {
  unsigned long long n = count * weft_dtype_size(dt);
  int me = comm->rank, world = comm->world;
  void *fa[] = {&send, &n, &me, &call};
  launch(k_fill, 264, fa, s);
  int in_place = send == recv + (size_t)me * n;
  if (!in_place) CU(cuMemsetD8Async((CUdeviceptr)(uintptr_t)recv, 0xEE, n * world, s));
  OK(weft_allgather(comm, send, recv, count, dt, algo, s));
  void *ca[] = {&recv, &n, &world, &call, &wrong};
  launch(k_check, 264, ca, s);
}

int main(void) {
  setenv("WEFT_HEAP_SIZE", "1G", 0);
  test_precompile(src, "test_allgather.cu");
  comm = test_init();
  unsigned long long seed = test_seed(comm);
  weft_module_t *mod;
  OK(weft_module_load(comm, src, "test_allgather.cu", NULL, 0, &mod));
  k_fill = test_kernel(mod, "fill");
  k_check = test_kernel(mod, "check");
  k_delay = test_kernel(mod, "delay");
  int world = comm->world, me = comm->rank;
  size_t total_max = 256u << 20;
  unsigned char *recv;
  OK(weft_malloc(comm, total_max + 4096, (void **)&recv));
  CUdeviceptr sendd;
  CU(cuMemAlloc(&sendd, total_max / world + 4096));
  CU(cuMemAlloc(&wrong, 8));
  CU(cuMemsetD8(wrong, 0, 8));
  CUstream s;
  CU(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
  unsigned call = 0;
  int fails = 0;
  unsigned long long x = (seed / 1000003ull) | 1; /* same on every rank: sizes agree */
  const weft_algo_t algos[] = {WEFT_ALGO_COPY_ENGINE, WEFT_ALGO_SM, WEFT_ALGO_LL, WEFT_ALGO_RING,
                               WEFT_ALGO_AUTO};
  const char *anames[] = {"copy engine", "SM", "LL", "ring", "auto"};
  enum { NALGOS = 5 };
  const weft_dtype_t dts[] = {WEFT_DTYPE_UINT8, WEFT_DTYPE_FP16, WEFT_DTYPE_FP32, WEFT_DTYPE_FP64};

  /* Sizes: powers of 4 from 4 B to 256 MB in total, plus odd ones; each with every algorithm
   * that takes it, random dtype, random offsets. */
  for (size_t total = 4; total <= total_max; total *= 4) {
    for (int odd = 0; odd < 2; odd++) {
      weft_dtype_t dt = dts[test_rand(&x) % 4];
      size_t elem = weft_dtype_size(dt);
      size_t per = total / (size_t)world / elem;
      if (odd) per = per + 1 + test_rand(&x) % 7;
      if (per == 0) per = 1;
      size_t roff = odd ? (test_rand(&x) % 64) * elem : 0, soff = odd ? 1 + test_rand(&x) % 63 : 0;
      for (int a = 0; a < NALGOS; a++) {
        if (algos[a] == WEFT_ALGO_LL && per * elem > WEFT_ALLGATHER_LL_MAX_BYTES(world)) continue;
        if (per * elem * world + roff > total_max + 4096) continue;
        unsigned long long before = 0, after = 0;
        CU(cuMemcpyDtoH(&before, wrong, 8));
        one(recv + roff, (unsigned char *)(uintptr_t)sendd + soff, per, dt, algos[a], ++call, s);
        OK(weft_stream_synchronize(comm, s));
        CU(cuMemcpyDtoH(&after, wrong, 8));
        if (after != before) {
          fails++;
          printf("[%d] FAIL %s: %zu x %zu B (recv +%zu, send +%zu): %llu wrong bytes\n", me,
                 anames[a], per, elem, roff, soff, after - before);
        }
      }
    }
  }
  printf("[%d] sizes 4 B .. 256 MB, every algorithm: %s\n", me, fails ? "FAILED" : "ok");

  /* In place: my chunk already at recv + rank * bytes. */
  for (int a = 0; a < NALGOS; a++) {
    size_t per = 40000 + 3;
    unsigned char *mine = recv + (size_t)me * per;
    one(recv, mine, per, WEFT_DTYPE_UINT8, algos[a], ++call, s);
  }
  OK(weft_stream_synchronize(comm, s));
  unsigned long long w;
  CU(cuMemcpyDtoH(&w, wrong, 8));
  if (w) fails++, printf("[%d] FAIL in place: %llu wrong\n", me, w);

  /* Graph: capture 4 calls (one per explicit algorithm) with their fill and check, replay 20 times.
   * Every replay runs new epochs from device memory; the call number is baked in, so the
   * check still holds. */
  {
    CUgraph g;
    CUgraphExec ge;
    size_t per = 5000;
    CU(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL));
    for (int a = 0; a < NALGOS - 1; a++)
      one(recv, (unsigned char *)(uintptr_t)sendd, per, WEFT_DTYPE_FP32, algos[a], ++call, s);
    CU(cuStreamEndCapture(s, &g));
    CU(cuGraphInstantiateWithFlags(&ge, g, 0));
    for (int r = 0; r < 20; r++) CU(cuGraphLaunch(ge, s));
    OK(weft_stream_synchronize(comm, s));
    CU(cuMemcpyDtoH(&w, wrong, 8));
    if (w) fails++, printf("[%d] FAIL graph replay: %llu wrong\n", me, w);
    CU(cuGraphExecDestroy(ge));
    CU(cuGraphDestroy(g));
  }

  /* 1,000 back-to-back calls, random sizes and algorithms, random host and GPU delays. */
  {
    unsigned long long y = seed; /* per rank: delays differ */
    uint64_t t0 = weft_now_ns();
    for (int i = 0; i < 1000; i++) {
      size_t per = 1 + test_rand(&x) % 20000;
      weft_algo_t a = algos[test_rand(&x) % NALGOS];
      usleep((useconds_t)(test_rand(&y) % 1000));
      unsigned long long ns = test_rand(&y) % 30000;
      void *da[] = {&ns};
      launch(k_delay, 1, da, s);
      one(recv, (unsigned char *)(uintptr_t)sendd, per, WEFT_DTYPE_UINT8, a, ++call, s);
    }
    OK(weft_stream_synchronize(comm, s));
    CU(cuMemcpyDtoH(&w, wrong, 8));
    printf("[%d] 1000 calls with stragglers in %.2f s: %llu wrong\n", me,
           (double)(weft_now_ns() - t0) / 1e9, w);
    if (w) fails++;
  }
  CU(cuStreamDestroy(s));
  CU(cuMemFree(sendd));
  CU(cuMemFree(wrong));
  OK(weft_free(comm, recv));
  weft_module_unload(mod);
  OK(weft_comm_destroy(comm));
  printf("[%d] %s\n", me, fails ? "FAILED" : "ok");
  return fails ? 1 : 0;
}
