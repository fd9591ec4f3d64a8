/*
 * 02_allgather.c — a one-sided intra-node AllGather in one kernel: every rank pushes its chunk
 * into slot `rank` of every peer's output with weft_putmem_signal_block (data, then a signal with
 * release), then waits until every peer's signal for this call has arrived.
 *
 *   weftrun -n 4 ./tutorial_02_allgather
 *
 * Epochs: each call passes a number that rises by one per call; a signal equal to it means "this
 * call's chunk is here". Nothing is reset between calls, so the kernel could be captured in a
 * CUDA graph if the epoch lived in device memory (weft's collectives do that).
 */
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <weft.h>

#define CHECK(call)                                                                       \
  do {                                                                                    \
    weft_status_t s_ = (call);                                                            \
    if (s_ != WEFT_STATUS_SUCCESS) {                                                      \
      fprintf(stderr, "%s: %s\n", #call, weft_get_last_error());                          \
      exit(s_ == WEFT_STATUS_NO_DEVICE ? 77 : 1);                                         \
    }                                                                                     \
  } while (0)

static const char *program =
    "#include <weft/device.cuh>\n"
    "/* out: [world][n] floats, symmetric; sigs: [world] signals, symmetric; one block per peer */\n"
    "extern \"C\" __global__ void allgather(float *out, const float *in, unsigned long long n,\n"
    "                                     unsigned long long *sigs, unsigned long long epoch) {\n"
    "  int me = weft_my_pe(), peer = blockIdx.x;\n"
    "  weft_putmem_signal_block(out + me * n, in, n * sizeof(float), sigs + me, epoch,\n"
    "                           WEFT_SIGNAL_SET, peer);\n"
    "  if (threadIdx.x == 0) weft_signal_wait_until(sigs + peer, WEFT_CMP_GE, epoch);\n"
    "}\n";

int main(void) {
  weft_comm_t *comm;
  CHECK(weft_comm_init(&comm, NULL));
  int rank, world;
  CHECK(weft_comm_rank(comm, &rank));
  CHECK(weft_comm_size(comm, &world));
  const unsigned long long n = 1 << 20; /* floats per rank */
  float *in, *out;
  unsigned long long *sigs;
  CHECK(weft_malloc(comm, n * sizeof(float), (void **)&in));
  CHECK(weft_malloc(comm, (size_t)world * n * sizeof(float), (void **)&out));
  CHECK(weft_malloc(comm, (size_t)world * sizeof *sigs, (void **)&sigs));
  weft_module_t *mod;
  weft_kernel_t *ag;
  CHECK(weft_module_load(comm, program, "allgather.cu", NULL, 0, &mod));
  CHECK(weft_module_get_kernel(mod, "allgather", &ag));
  float *host = malloc((size_t)world * n * sizeof(float));
  int wrong = 0;
  for (unsigned long long epoch = 1; epoch <= 3; epoch++) {
    for (unsigned long long i = 0; i < n; i++) host[i] = (float)(rank * 1000003ull + epoch * 7 + i);
    cudaMemcpy(in, host, n * sizeof(float), cudaMemcpyHostToDevice);
    CHECK(weft_comm_barrier(comm)); /* every rank has its input before anyone reads it */
    weft_launch_config_t cfg = WEFT_LAUNCH_CONFIG_INIT;
    cfg.grid[0] = (unsigned)world; /* block p pushes to rank p and waits for rank p */
    cfg.block[0] = 512;
    void *args[] = {&out, &in, (void *)&n, &sigs, &epoch};
    CHECK(weft_kernel_launch(ag, &cfg, args, NULL));
    CHECK(weft_stream_synchronize(comm, NULL));
    cudaMemcpy(host, out, (size_t)world * n * sizeof(float), cudaMemcpyDeviceToHost);
    for (int r = 0; r < world; r++)
      for (unsigned long long i = 0; i < n; i++)
        wrong += host[r * n + i] != (float)(r * 1000003ull + epoch * 7 + i);
    CHECK(weft_comm_barrier(comm)); /* nobody overwrites out before everyone checked it */
  }
  printf("rank %d: allgather of %d x %llu floats, 3 calls: %s (%d wrong)\n", rank, world, n,
         wrong ? "WRONG" : "ok", wrong);
  free(host);
  weft_module_unload(mod);
  CHECK(weft_free(comm, sigs));
  CHECK(weft_free(comm, out));
  CHECK(weft_free(comm, in));
  CHECK(weft_comm_destroy(comm));
  return wrong ? 1 : 0;
}
