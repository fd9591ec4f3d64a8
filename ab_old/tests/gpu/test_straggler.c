/*
 * test_straggler.c — 1,000 iterations with no host synchronisation between them, each rank
 * delayed at random on the host (0-2 ms) and on the GPU (0-50 us): every iteration puts a block of
 * data into the next rank with put-with-signal, waits for the previous rank's, checks every word,
 * and meets at barrier_all. No hang, no wrong value.
 */
// weft-test: ranks=2,4 timeout=180
#include "gpu_test.h"

#define ITERS 1000
#define WORDS 8192

static const char *src =
    "#include <weft/device.cuh>\n"
    "extern \"C\" __global__ void step(unsigned int *buf, const unsigned int *mine_src,\n"
    "                                unsigned long long *sig, unsigned long long it,\n"
    "                                unsigned long long delay_ns, unsigned long long *wrong) {\n"
    "  int n = weft_n_pes(), me = weft_my_pe(), next = (me + 1) % n, prev = (me + n - 1) % n;\n"
    "  if (threadIdx.x == 0) {\n"
    "    unsigned long long t0 = weft_globaltimer();\n"
    "    while (weft_globaltimer() - t0 < delay_ns) {}\n"
    "  }\n"
    "  __syncthreads();\n"
    "  unsigned int *src = (unsigned int *)mine_src;\n"
    "  for (int i = threadIdx.x; i < " "8192" "; i += blockDim.x) src[i] = (unsigned)(it * 2654435761ull) ^ (me << 24) ^ i;\n"
    "  __syncthreads();\n"
    "  weft_putmem_signal_block(buf, src, 8192 * 4, sig, it, WEFT_SIGNAL_SET, next);\n"
    "  if (threadIdx.x == 0) weft_signal_wait_until(sig, WEFT_CMP_GE, it);\n"
    "  __syncthreads();\n"
    "  for (int i = threadIdx.x; i < 8192; i += blockDim.x)\n"
    "    if (((volatile unsigned int *)buf)[i] != ((unsigned)(it * 2654435761ull) ^ (prev << 24) ^ i))\n"
    "      atomicAdd(wrong, 1ull);\n"
    "  weft_barrier_all_block();\n"
    "}\n";

int main(void) {
  test_precompile(src, "test_straggler.cu");
  weft_comm_t *comm = test_init();
  unsigned long long seed = test_seed(comm);
  weft_module_t *mod;
  OK(weft_module_load(comm, src, "test_straggler.cu", NULL, 0, &mod));
  weft_kernel_t *k = test_kernel(mod, "step");
  unsigned int *buf;
  unsigned long long *sig;
  OK(weft_malloc(comm, WORDS * 4, (void **)&buf));
  OK(weft_malloc(comm, 8, (void **)&sig));
  CUdeviceptr srcbuf, wrong;
  CU(cuMemAlloc(&srcbuf, WORDS * 4));
  CU(cuMemAlloc(&wrong, 8));
  CU(cuMemsetD8(wrong, 0, 8));
  CUstream s;
  CU(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
  weft_launch_config_t c = WEFT_LAUNCH_CONFIG_INIT;
  c.block[0] = 256;
  uint64_t t0 = weft_now_ns();
  for (unsigned long long it = 1; it <= ITERS; it++) {
    unsigned long long delay = test_rand(&seed) % 50000;
    usleep((useconds_t)(test_rand(&seed) % 2000));
    void *args[] = {&buf, &srcbuf, &sig, &it, &delay, &wrong};
    OK(weft_kernel_launch(k, &c, args, s));
  }
  OK(weft_stream_synchronize(comm, s));
  unsigned long long w;
  CU(cuMemcpyDtoH(&w, wrong, 8));
  printf("[%d] %d iterations in %.2f s, %llu wrong words\n", comm->rank, ITERS,
         (double)(weft_now_ns() - t0) / 1e9, w);
  CU(cuStreamDestroy(s));
  CU(cuMemFree(srcbuf));
  CU(cuMemFree(wrong));
  OK(weft_free(comm, sig));
  OK(weft_free(comm, buf));
  weft_module_unload(mod);
  int rank = comm->rank;
  OK(weft_comm_destroy(comm));
  printf("[%d] %s\n", rank, w ? "FAILED" : "ok");
  return w ? 1 : 0;
}
