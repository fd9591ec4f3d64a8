/*
 * test_stream.c — the host stream API across ranks, bit for bit: copy-engine put and get of
 * random data at odd sizes and offsets, put-with-signal followed by the peer's stream wait (the
 * data must be complete when the wait passes), signal add from every rank, the stream barrier,
 * and all of it captured in a CUDA graph and replayed (epochs in device memory, nothing reset).
 */
// weft-test: ranks=2,4 timeout=120
#include "gpu_test.h"

#define MAXB (4u << 20)

static const char *src =
    "#include <weft/device.cuh>\n"
    /* Counts bytes of buf that differ from the expected pattern of (rank, round). */
    "extern \"C\" __global__ void check(const unsigned char *buf, unsigned long long n, int from,\n"
    "                                 unsigned long long round, unsigned long long *wrong) {\n"
    "  for (unsigned long long i = blockIdx.x * blockDim.x + threadIdx.x; i < n;\n"
    "       i += gridDim.x * blockDim.x) {\n"
    "    unsigned long long x = (i * 2654435761ull) ^ ((unsigned long long)from << 40) ^ (round << 20);\n"
    "    if (buf[i] != (unsigned char)(x ^ (x >> 13))) atomicAdd(wrong, 1ull);\n"
    "  }\n"
    "}\n"
    "extern \"C\" __global__ void fill(unsigned char *buf, unsigned long long n, int from,\n"
    "                                unsigned long long round) {\n"
    "  for (unsigned long long i = blockIdx.x * blockDim.x + threadIdx.x; i < n;\n"
    "       i += gridDim.x * blockDim.x) {\n"
    "    unsigned long long x = (i * 2654435761ull) ^ ((unsigned long long)from << 40) ^ (round << 20);\n"
    "    buf[i] = (unsigned char)(x ^ (x >> 13));\n"
    "  }\n"
    "}\n"
    /* Busy until the host sets *go (or 30 s pass): a user's long kernel. */
    "extern \"C\" __global__ void busy(const volatile unsigned *go) {\n"
    "  unsigned long long t0, t;\n"
    "  asm volatile(\"mov.u64 %0, %%globaltimer;\" : \"=l\"(t0));\n"
    "  do asm volatile(\"mov.u64 %0, %%globaltimer;\" : \"=l\"(t));\n"
    "  while (!*go && t - t0 < 30000000000ull);\n"
    "}\n";

static weft_kernel_t *k_check, *k_fill, *k_busy;

static void launch(weft_kernel_t *k, void **args, CUstream s) {
  weft_launch_config_t c = WEFT_LAUNCH_CONFIG_INIT;
  c.grid[0] = 64;
  c.block[0] = 256;
  OK(weft_kernel_launch(k, &c, args, s));
}

/* One round on stream s: fill my source, put it into the next rank at an offset, signal;
 * wait for the previous rank's signal, check what it put into me. All without host sync. */
static void round_(weft_comm_t *comm, unsigned char *sym, unsigned char *local, uint64_t *sig,
                   unsigned long long *wrong, size_t bytes, size_t off, unsigned long long round,
                   CUstream s) {
  int next = (comm->rank + 1) % comm->world, prev = (comm->rank + comm->world - 1) % comm->world;
  unsigned long long n = bytes;
  int me = comm->rank;
  void *fa[] = {&local, &n, &me, &round};
  launch(k_fill, fa, s);
  OK(weft_stream_put_signal(comm, sym + off, local, bytes, sig, round, next, s));
  OK(weft_stream_signal_wait(comm, sig, WEFT_CMP_GE, round, s));
  unsigned char *mine = sym + off;
  void *ca[] = {&mine, &n, &prev, &round, &wrong};
  launch(k_check, ca, s);
  /* The next round overwrites what the next rank checks: meet first. */
  OK(weft_stream_barrier(comm, s));
}

int main(void) {
  test_precompile(src, "test_stream.cu");
  weft_comm_t *comm = test_init();
  unsigned long long seed = test_seed(comm);
  weft_module_t *mod;
  OK(weft_module_load(comm, src, "test_stream.cu", NULL, 0, &mod));
  k_check = test_kernel(mod, "check");
  k_fill = test_kernel(mod, "fill");
  k_busy = test_kernel(mod, "busy");
  unsigned char *sym;
  uint64_t *sig, *counter;
  OK(weft_malloc(comm, MAXB + 64, (void **)&sym));
  OK(weft_malloc(comm, 8, (void **)&sig));
  OK(weft_malloc(comm, 8, (void **)&counter));
  CUdeviceptr local, wrong;
  CU(cuMemAlloc(&local, MAXB + 64));
  CU(cuMemAlloc(&wrong, 8));
  CU(cuMemsetD8(wrong, 0, 8));
  CUstream s;
  CU(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
  int fails = 0;

  /* Sizes that are not multiples of anything, at odd offsets; same sequence on every rank. */
  unsigned long long x = seed / 1000003ull * 1000003ull + 7; /* the rank-independent part */
  unsigned long long round = 0;
  for (int i = 0; i < 40; i++) {
    size_t bytes = 1 + test_rand(&x) % (i < 20 ? 4096 : MAXB);
    size_t off = test_rand(&x) % 64;
    round_(comm, sym, (unsigned char *)local, sig, (unsigned long long *)wrong, bytes, off, ++round, s);
  }
  /* get: pull the previous rank's region back into local and check it as the previous's data */
  OK(weft_stream_synchronize(comm, s));
  unsigned long long w = 0;
  CU(cuMemcpyDtoH(&w, wrong, 8));
  if (w) fails++, printf("[%d] FAIL put/put_signal: %llu wrong bytes\n", comm->rank, w);

  {
    int prev = (comm->rank + comm->world - 1) % comm->world;
    unsigned long long n = 100003, r = 999;
    int me = comm->rank;
    void *fa[] = {&local, &n, &me, &r};
    launch(k_fill, fa, s);
    OK(weft_stream_put(comm, sym, (void *)local, n, comm->rank, s)); /* into my own copy */
    OK(weft_stream_barrier(comm, s));
    CUdeviceptr got;
    CU(cuMemAlloc(&got, n));
    OK(weft_stream_get(comm, (void *)got, sym, n, prev, s));
    void *ca[] = {&got, &n, &prev, &r, &wrong};
    launch(k_check, ca, s);
    OK(weft_stream_barrier(comm, s));
    OK(weft_stream_synchronize(comm, s));
    CU(cuMemcpyDtoH(&w, wrong, 8));
    if (w) fails++, printf("[%d] FAIL get: %llu wrong bytes\n", comm->rank, w);
    CU(cuMemFree(got));
  }

  /* signal_add: every rank adds (its rank + 1) to every rank's counter, 10 times. */
  for (int t = 0; t < 10; t++)
    for (int p = 0; p < comm->world; p++)
      OK(weft_stream_signal_add(comm, counter, (uint64_t)comm->rank + 1, p, s));
  OK(weft_stream_barrier(comm, s));
  OK(weft_stream_synchronize(comm, s));
  uint64_t c = 0, want = 10ull * (uint64_t)comm->world * (uint64_t)(comm->world + 1) / 2;
  CU(cuMemcpyDtoH(&c, (CUdeviceptr)(uintptr_t)counter, 8));
  if (c != want) fails++, printf("[%d] FAIL signal_add: %llu, want %llu\n", comm->rank,
                                 (unsigned long long)c, (unsigned long long)want);

  /* A graph of one round with a signal_add-based epoch is not replayable with set values, so
   * capture a round that waits with GE on a counter raised by add: replay k times. */
  {
    CUgraph g;
    CUgraphExec ge;
    uint64_t *gsig;
    OK(weft_malloc(comm, 8, (void **)&gsig));
    int next = (comm->rank + 1) % comm->world;
    CU(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL));
    OK(weft_stream_put(comm, sym, (void *)local, 65536, next, s));
    OK(weft_stream_signal_add(comm, gsig, 1, next, s));
    OK(weft_stream_barrier(comm, s));
    CU(cuStreamEndCapture(s, &g));
    CU(cuGraphInstantiate(&ge, g, 0));
    for (int k = 0; k < 50; k++) CU(cuGraphLaunch(ge, s));
    OK(weft_stream_synchronize(comm, s));
    CU(cuMemcpyDtoH(&c, (CUdeviceptr)(uintptr_t)gsig, 8));
    if (c != 50) fails++, printf("[%d] FAIL graph replay: signal %llu, want 50\n", comm->rank, (unsigned long long)c);
    CU(cuGraphExecDestroy(ge));
    CU(cuGraphDestroy(g));
    OK(weft_free(comm, gsig));
  }
  /* A user's kernel still running on a blocking stream (which the legacy stream waits for)
   * holds neither weft_malloc nor weft_free: their zeroing and waits are weft's own. */
  {
    CUstream u;
    unsigned *go;
    CUdeviceptr go_dev;
    CU(cuStreamCreate(&u, CU_STREAM_DEFAULT));
    CU(cuMemHostAlloc((void **)&go, 4, CU_MEMHOSTALLOC_DEVICEMAP));
    *go = 0;
    CU(cuMemHostGetDevicePointer(&go_dev, go, 0));
    void *ba[] = {&go_dev};
    weft_launch_config_t c = WEFT_LAUNCH_CONFIG_INIT;
    OK(weft_kernel_launch(k_busy, &c, ba, u));
    void *extra;
    OK(weft_malloc(comm, 1 << 20, &extra));
    OK(weft_free(comm, extra));
    int still = weft_cu.cuStreamQuery(u) == CUDA_ERROR_NOT_READY;
    __atomic_store_n(go, 1u, __ATOMIC_RELEASE);
    CU(cuStreamSynchronize(u));
    if (!still) fails++, printf("[%d] FAIL weft_malloc waited for a user kernel on a blocking stream\n", comm->rank);
    CU(cuStreamDestroy(u));
    CU(cuMemFreeHost(go));
  }
  CU(cuStreamDestroy(s));
  CU(cuMemFree(local));
  CU(cuMemFree(wrong));
  weft_module_unload(mod);
  OK(weft_free(comm, counter));
  OK(weft_free(comm, sig));
  OK(weft_free(comm, sym));
  int rank = comm->rank;
  OK(weft_comm_destroy(comm));
  printf("[%d] %s\n", rank, fails ? "FAILED" : "ok");
  return fails ? 1 : 0;
}
