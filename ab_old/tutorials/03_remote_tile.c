/*
 * 03_remote_tile.c — your own tile program through weft's JIT: each rank's kernel reads a
 * 64 x 64 tile of its right-hand neighbour's matrix straight from that GPU's memory through
 * weft_remote_ptr, and transposes it into a local result. The tile size is a compile-time
 * constant passed as -DTILE=64 (weft's way to specialise: every -D set is its own cached cubin).
 *
 *   weftrun -n 2 ./tutorial_03_remote_tile
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
    "/* mat: [N][N] floats, symmetric. Block (bx, by) reads tile (bx, by) of the next rank's mat\n"
    "   and writes its transpose into out. */\n"
    "extern \"C\" __global__ void peer_transpose(const float *mat, float *out, int N) {\n"
    "  __shared__ float t[TILE][TILE + 1];\n"
    "  int next = (weft_my_pe() + 1) % weft_n_pes();\n"
    "  const float *peer = (const float *)weft_remote_ptr(mat, next); /* the neighbour's copy */\n"
    "  int r0 = blockIdx.y * TILE, c0 = blockIdx.x * TILE;\n"
    "  for (int i = threadIdx.y; i < TILE; i += blockDim.y)\n"
    "    t[i][threadIdx.x] = peer[(r0 + i) * N + c0 + threadIdx.x];\n"
    "  __syncthreads();\n"
    "  for (int i = threadIdx.y; i < TILE; i += blockDim.y)\n"
    "    out[(c0 + i) * N + r0 + threadIdx.x] = t[threadIdx.x][i];\n"
    "}\n";

int main(void) {
  weft_comm_t *comm;
  CHECK(weft_comm_init(&comm, NULL));
  int rank, world;
  CHECK(weft_comm_rank(comm, &rank));
  CHECK(weft_comm_size(comm, &world));
  const int N = 1024, TILE = 64;
  float *mat, *out;
  CHECK(weft_malloc(comm, (size_t)N * N * sizeof(float), (void **)&mat));
  cudaMalloc((void **)&out, (size_t)N * N * sizeof(float));
  float *host = malloc((size_t)N * N * sizeof(float));
  for (int i = 0; i < N * N; i++) host[i] = (float)(rank * 10000000 + i);
  cudaMemcpy(mat, host, (size_t)N * N * sizeof(float), cudaMemcpyHostToDevice);
  CHECK(weft_comm_barrier(comm)); /* every matrix is filled before anyone reads a peer's */

  const char *options[] = {"-DTILE=64"};
  weft_module_t *mod;
  weft_kernel_t *k;
  CHECK(weft_module_load(comm, program, "peer_transpose.cu", options, 1, &mod));
  CHECK(weft_module_get_kernel(mod, "peer_transpose", &k));
  weft_launch_config_t cfg = WEFT_LAUNCH_CONFIG_INIT;
  cfg.grid[0] = cfg.grid[1] = (unsigned)(N / TILE);
  cfg.block[0] = (unsigned)TILE;
  cfg.block[1] = 8;
  int n = N;
  void *args[] = {&mat, &out, &n};
  CHECK(weft_kernel_launch(k, &cfg, args, NULL));
  CHECK(weft_stream_synchronize(comm, NULL));
  cudaMemcpy(host, out, (size_t)N * N * sizeof(float), cudaMemcpyDeviceToHost);
  int next = (rank + 1) % world, wrong = 0;
  for (int r = 0; r < N; r++)
    for (int c = 0; c < N; c++) wrong += host[r * N + c] != (float)(next * 10000000 + c * N + r);
  printf("rank %d: transposed rank %d's matrix through remote_ptr: %s (%d wrong)\n", rank, next,
         wrong ? "WRONG" : "ok", wrong);
  CHECK(weft_comm_barrier(comm)); /* nobody frees mat while a peer may still read it */
  weft_module_unload(mod);
  cudaFree(out);
  free(host);
  CHECK(weft_free(comm, mat));
  CHECK(weft_comm_destroy(comm));
  return wrong ? 1 : 0;
}
