/*
 * test_barrier.c — barrier_all 10,000 times back to back in one kernel and as 10,000 stream
 * barriers, with its meaning checked each time: before barrier i every rank writes i into its
 * slot on every peer; after it, every slot here must hold i (parity-alternating slot arrays, so
 * a fast peer's next write cannot land before a slow rank has checked). Ranks that share a GPU
 * (WEFT_SHARE_GPUS) take turns on it, each barrier a round of time slices: 1,000 times there.
 */
// weft-test: ranks=2,4 timeout=180
#include "gpu_test.h"

#define ITERS 10000

static const char *src =
    "#include <weft/device.cuh>\n"
    "extern \"C\" __global__ void many(unsigned long long *slots, int iters, unsigned long long base,\n"
    "                                unsigned long long *wrong) {\n"
    "  int n = weft_n_pes(), me = weft_my_pe();\n"
    "  for (int i = 0; i < iters; i++) {\n"
    "    unsigned long long v = base + i;\n"
    "    unsigned long long *arr = slots + (v & 1) * 64;\n"
    "    for (int p = threadIdx.x; p < n; p += blockDim.x)\n"
    "      *(volatile unsigned long long *)weft_remote_ptr(arr + me, p) = v;\n"
    "    weft_barrier_all_block();\n"
    "    for (int p = threadIdx.x; p < n; p += blockDim.x)\n"
    "      if (((volatile unsigned long long *)arr)[p] != v) atomicAdd(wrong, 1ull);\n"
    "  }\n"
    "}\n";

int main(void) {
  test_precompile(src, "test_barrier.cu");
  weft_comm_t *comm = test_init();
  weft_module_t *mod;
  OK(weft_module_load(comm, src, "test_barrier.cu", NULL, 0, &mod));
  weft_kernel_t *k = test_kernel(mod, "many");
  unsigned long long *slots;
  OK(weft_malloc(comm, 2 * 64 * 8, (void **)&slots));
  CUdeviceptr wrong;
  CU(cuMemAlloc(&wrong, 8));
  CU(cuMemsetD8(wrong, 0, 8));
  weft_launch_config_t c = WEFT_LAUNCH_CONFIG_INIT;
  c.block[0] = 64;
  const int n_iters = comm->gpu_shared ? ITERS / 10 : ITERS;
  int iters = n_iters;
  unsigned long long base = 1;
  void *args[] = {&slots, &iters, &base, &wrong};
  uint64_t t0 = weft_now_ns();
  OK(weft_kernel_launch(k, &c, args, NULL));
  OK(weft_stream_synchronize(comm, NULL));
  double in_kernel = (double)(weft_now_ns() - t0) / n_iters / 1e3;
  /* The same check as 10,000 separate launches, each ending in its own barrier. */
  iters = 1;
  t0 = weft_now_ns();
  for (int i = 0; i < n_iters; i++) {
    base = 1 + n_iters + (unsigned long long)i;
    OK(weft_kernel_launch(k, &c, args, NULL));
  }
  OK(weft_stream_synchronize(comm, NULL));
  double per_launch = (double)(weft_now_ns() - t0) / n_iters / 1e3;
  t0 = weft_now_ns();
  for (int i = 0; i < n_iters; i++) OK(weft_stream_barrier(comm, NULL));
  OK(weft_stream_synchronize(comm, NULL));
  double stream = (double)(weft_now_ns() - t0) / n_iters / 1e3;
  unsigned long long w;
  CU(cuMemcpyDtoH(&w, wrong, 8));
  printf("[%d] %d barriers: %.2f us each in one kernel, %.2f us per launch, %.2f us per "
         "weft_stream_barrier; %llu wrong slots\n", comm->rank, n_iters, in_kernel, per_launch,
         stream, w);
  CU(cuMemFree(wrong));
  OK(weft_free(comm, slots));
  weft_module_unload(mod);
  int rank = comm->rank;
  OK(weft_comm_destroy(comm));
  printf("[%d] %s\n", rank, w ? "FAILED" : "ok");
  return w ? 1 : 0;
}
