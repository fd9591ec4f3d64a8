/*
 * dev/overlap/hang_probe.c — runs one overlapped call and, while it runs, reads the op's signal
 * words, arrival flags and stored-tile counters from a second stream every second, so that a
 * call that does not finish shows which word stopped. Dev tooling (exit on error).
 *   weftrun [--share-gpus] -n W hang_probe <ag_gemm|gemm_rs|gemm_ar> M N K [ce|sm|seq|auto] [secs]
 * M: rows per rank for ag_gemm, all rows for the others; B [n, k]; bf16 in and out.
 */
#include <unistd.h>

#include "ops/ops.h"
#include "overlap_dev.h"

static void dump(weft_comm_t *comm, CUstream peek, const char *when) {
  weft_ops_t *o = comm->ops;
  uint64_t v[3][8] = {{0}};
  int w = comm->local_world > 8 ? 8 : comm->local_world;
  CU(cuMemcpyDtoHAsync(v[0], (CUdeviceptr)(uintptr_t)o->ag_gemm_sig, w * 8, peek));
  CU(cuMemcpyDtoHAsync(v[1], (CUdeviceptr)(uintptr_t)o->gemm_rs_flags, w * 8, peek));
  CU(cuMemcpyDtoHAsync(v[2], (CUdeviceptr)(uintptr_t)o->gemm_rs_ctr, 8 * 8, peek));
  CU(cuStreamSynchronize(peek));
  char line[512];
  int n = snprintf(line, sizeof line, "[rank %d] %s: ag_sig", comm->rank, when);
  for (int i = 0; i < w; i++) n += snprintf(line + n, sizeof line - n, " %llu", (unsigned long long)v[0][i]);
  n += snprintf(line + n, sizeof line - n, " | rs_flags");
  for (int i = 0; i < w; i++) n += snprintf(line + n, sizeof line - n, " %llu", (unsigned long long)v[1][i]);
  n += snprintf(line + n, sizeof line - n, " | rs_ctr");
  for (int i = 0; i < 8; i++) n += snprintf(line + n, sizeof line - n, " %llu", (unsigned long long)v[2][i]);
  printf("%s\n", line);
  fflush(stdout);
}

int main(int argc, char **argv) {
  if (argc < 5) {
    fprintf(stderr, "usage: hang_probe <ag_gemm|gemm_rs|gemm_ar> M N K [ce|sm|seq|auto] [secs]\n");
    return 2;
  }
  const char *op = argv[1];
  int m = atoi(argv[2]), n = atoi(argv[3]), k = atoi(argv[4]);
  const char *an = argc > 5 ? argv[5] : "ce";
  int secs = argc > 6 ? atoi(argv[6]) : 20;
  weft_algo_t algo = !strcmp(an, "ce") ? WEFT_ALGO_COPY_ENGINE : !strcmp(an, "sm") ? WEFT_ALGO_SM
                     : !strcmp(an, "seq") ? WEFT_ALGO_SEQUENTIAL : WEFT_ALGO_AUTO;
  weft_comm_t *comm;
  W(weft_comm_init(&comm, NULL));
  int world = comm->world;
  CUstream s, peek;
  CU(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
  CU(cuStreamCreate(&peek, CU_STREAM_NON_BLOCKING));
  int ag = !strcmp(op, "ag_gemm");
  int rows_a = ag ? m : m, rows_c = ag ? m * world : !strcmp(op, "gemm_rs") ? m / world : m;
  CUdeviceptr a, b, c = 0;
  CU(cuMemAlloc(&a, (size_t)rows_a * k * 2));
  CU(cuMemAlloc(&b, (size_t)n * k * 2));
  CU(cuMemsetD8(a, 0x3c, (size_t)rows_a * k * 2));
  CU(cuMemsetD8(b, 0x3c, (size_t)n * k * 2));
  void *sym = NULL, *csym = NULL;
  if (ag) {
    W(weft_malloc(comm, (size_t)m * world * k * 2, &sym));
    CU(cuMemAlloc(&c, (size_t)rows_c * n * 2));
  } else {
    size_t ws;
    W(weft_gemm_rs_workspace_size(comm, m, n, WEFT_DTYPE_BF16, &ws));
    W(weft_malloc(comm, ws, &sym));
    if (!strcmp(op, "gemm_ar")) {
      W(weft_malloc(comm, (size_t)m * n * 2, &csym));
      c = (CUdeviceptr)(uintptr_t)csym;
    } else {
      CU(cuMemAlloc(&c, (size_t)rows_c * n * 2));
    }
  }
  CU(cuCtxSynchronize());
  W(weft_comm_barrier(comm));
  dump(comm, peek, "before");
  if (ag)
    W(weft_ag_gemm(comm, (void *)(uintptr_t)a, sym, (void *)(uintptr_t)b, k, (void *)(uintptr_t)c, n,
                   m, n, k, WEFT_DTYPE_BF16, WEFT_DTYPE_BF16, WEFT_GEMM_LAYOUT_NK, algo, s));
  else if (!strcmp(op, "gemm_rs"))
    W(weft_gemm_rs(comm, (void *)(uintptr_t)a, k, (void *)(uintptr_t)b, k, (void *)(uintptr_t)c, sym,
                   m, n, k, WEFT_DTYPE_BF16, WEFT_DTYPE_BF16, WEFT_GEMM_LAYOUT_NK, algo, s));
  else
    W(weft_gemm_ar(comm, (void *)(uintptr_t)a, k, (void *)(uintptr_t)b, k, (void *)(uintptr_t)c, sym,
                   m, n, k, WEFT_DTYPE_BF16, WEFT_DTYPE_BF16, WEFT_GEMM_LAYOUT_NK, algo, s));
  for (int t = 0; t < secs; t++) {
    CUresult qm = weft_cu.cuStreamQuery(s), qs = weft_cu.cuStreamQuery(comm->ops->side);
    char when[64];
    snprintf(when, sizeof when, "t=%ds main %s side %s", t, qm == CUDA_SUCCESS ? "done" : "busy",
             qs == CUDA_SUCCESS ? "done" : "busy");
    if (qm != CUDA_SUCCESS && qm != CUDA_ERROR_NOT_READY) {
      const char *nm = "?";
      weft_cu.cuGetErrorName(qm, &nm);
      printf("[rank %d] stream failed: %s; %s\n", comm->rank, nm,
             weft_get_error_string(weft_comm_get_async_error(comm)));
      printf("[rank %d] %s\n", comm->rank, weft_get_last_error());
      return 1;
    }
    dump(comm, peek, when);
    if (qm == CUDA_SUCCESS && qs == CUDA_SUCCESS) break;
    sleep(1);
  }
  W(weft_stream_synchronize(comm, s));
  printf("[rank %d] finished\n", comm->rank);
  W(weft_comm_destroy(comm));
  return 0;
}
