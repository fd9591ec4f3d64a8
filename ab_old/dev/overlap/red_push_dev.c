/*
 * dev/overlap/red_push_dev.c — dev/collectives/red_push.cu (ReduceScatter and AllReduce
 * two-shot by SM pushes) beside weft's AUTO forms and NCCL, bf16. Per size (-s MiB,0,0: the
 * ReduceScatter's input, the AllReduce's array): the push forms' outputs against weft's SM
 * forms bit for bit (both sum in rank order in fp32 and round once: WEFT_ALGO_SM ReduceScatter,
 * WEFT_ALGO_TWO_SHOT AllReduce) and against NCCL (normalised error), fresh random inputs, outputs
 * poisoned before every call; then the six calls timed interleaved (dev_time: medians of
 * samples of DEV_BATCH calls, slowest rank). Exit 1 on a wrong value.
 * Usage (device tool): weftrun -n N build/dev/overlap/red_push_dev [-s MiB,0,0]... [-n samples]
 * Options of the push form: RED_PUSH_SLICES (default 64 / N; slices x N <= 128), RED_PUSH_PIECE_KIB
 * (128), RED_PUSH_DEPTH (rounds of staging, default 2: depth x N x slices x piece bytes).
 */
#include "overlap_dev.h"

#include <stdint.h>

#ifndef WEFT_SOURCE_DIR
#define WEFT_SOURCE_DIR "."
#endif

typedef struct ctx {
  dev_env_t e;
  weft_kernel_t *push;
  char *send, *recv, *stage; /* symmetric */
  CUdeviceptr nccl_out;
  size_t bytes; /* input of both ops */
  unsigned long long piece;
  int slices, depth;
} ctx_t;

enum { R_PUSH_RS, R_WEFT_RS, R_NCCL_RS, R_PUSH_AR, R_WEFT_AR, R_NCCL_AR, R_COUNT };
static const char *const run_names[] = {"push RS", "weft RS", "NCCL RS", "push AR", "weft AR", "NCCL AR"};

static char *read_source(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f) DIE("cannot open %s", path);
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *s = malloc((size_t)n + 1);
  if (fread(s, 1, (size_t)n, f) != (size_t)n) DIE("cannot read %s", path);
  s[n] = 0;
  fclose(f);
  return s;
}

static void push_launch(ctx_t *x, int allreduce) {
  dev_env_t *e = &x->e;
  size_t n = x->bytes / 2; /* bf16 elements */
  unsigned long long total = n, per = allreduce ? (n + (size_t)e->ws * 8 - 1) / ((size_t)e->ws * 8) * 8
                                                : n / (size_t)e->ws;
  int dtype = (int)WEFT_DTYPE_BF16;
  weft_launch_config_t cfg = WEFT_LAUNCH_CONFIG_INIT;
  cfg.grid[0] = (unsigned)(e->ws * x->slices);
  cfg.block[0] = 512;
  void *args[] = {&x->send, &x->recv, &total, &per, &dtype, &allreduce, &x->stage, &x->piece, &x->slices, &x->depth};
  W(weft_kernel_launch(x->push, &cfg, args, (weft_stream_t)e->s0));
}

static void run(void *p, int r) {
  ctx_t *x = p;
  dev_env_t *e = &x->e;
  size_t n = x->bytes / 2;
  weft_stream_t s = (weft_stream_t)e->s0;
  switch (r) {
  case R_PUSH_RS: push_launch(x, 0); break;
  case R_WEFT_RS:
    W(weft_reduce_scatter(e->comm, x->send, x->recv, n / (size_t)e->ws, WEFT_DTYPE_BF16, WEFT_RED_OP_SUM,
                          WEFT_ALGO_AUTO, s));
    break;
  case R_NCCL_RS:
    NC(ncclReduceScatter(x->send, (void *)(uintptr_t)x->nccl_out, n / (size_t)e->ws, ncclBfloat16, ncclSum,
                         e->nc, (cudaStream_t)e->s0));
    break;
  case R_PUSH_AR: push_launch(x, 1); break;
  case R_WEFT_AR:
    W(weft_allreduce(e->comm, x->send, x->recv, n, WEFT_DTYPE_BF16, WEFT_RED_OP_SUM, WEFT_ALGO_AUTO, s));
    break;
  default:
    NC(ncclAllReduce(x->send, (void *)(uintptr_t)x->nccl_out, n, ncclBfloat16, ncclSum, e->nc,
                     (cudaStream_t)e->s0));
  }
}

/* One op's check: the push form's output against weft's SM form bit for bit and NCCL's within
 * the bf16 bound; 1 when wrong. */
static int check(ctx_t *x, int allreduce) {
  dev_env_t *e = &x->e;
  size_t n = x->bytes / 2, out = allreduce ? n : n / (size_t)e->ws;
  weft_stream_t s = (weft_stream_t)e->s0;
  unsigned short *a = malloc(out * 2), *b = malloc(out * 2);
  fill_random((CUdeviceptr)(uintptr_t)x->send, n, 1000u * (unsigned)allreduce + 17u * (unsigned)e->me + 1);
  CU(cuMemsetD8Async((CUdeviceptr)(uintptr_t)x->recv, 0xFF, out * 2, e->s0));
  push_launch(x, allreduce);
  W(weft_stream_synchronize(e->comm, s));
  CU(cuMemcpyDtoH(a, (CUdeviceptr)(uintptr_t)x->recv, out * 2));
  CU(cuMemsetD8Async((CUdeviceptr)(uintptr_t)x->recv, 0xFF, out * 2, e->s0));
  if (allreduce)
    W(weft_allreduce(e->comm, x->send, x->recv, n, WEFT_DTYPE_BF16, WEFT_RED_OP_SUM, WEFT_ALGO_TWO_SHOT, s));
  else
    W(weft_reduce_scatter(e->comm, x->send, x->recv, out, WEFT_DTYPE_BF16, WEFT_RED_OP_SUM, WEFT_ALGO_SM, s));
  W(weft_stream_synchronize(e->comm, s));
  CU(cuMemcpyDtoH(b, (CUdeviceptr)(uintptr_t)x->recv, out * 2));
  size_t diff = 0;
  for (size_t i = 0; i < out; i++) diff += a[i] != b[i];
  /* NCCL: the push output back on the device, then the normalised error against NCCL's */
  CU(cuMemcpyHtoD((CUdeviceptr)(uintptr_t)x->recv, a, out * 2));
  CU(cuMemsetD8Async(x->nccl_out, 0xFF, out * 2, e->s0));
  run(x, allreduce ? R_NCCL_AR : R_NCCL_RS);
  W(weft_stream_synchronize(e->comm, s));
  long nans = 0;
  double err = compare((CUdeviceptr)(uintptr_t)x->recv, x->nccl_out, out, &nans);
  free(a), free(b);
  int bad = diff || nans || !(err <= 1e-2);
  bad = (int)max_across(e->comm, bad);
  err = max_across(e->comm, err);
  double d = max_across(e->comm, (double)diff);
  if (e->me == 0)
    printf("# %s %zu MiB: %.0f elements differ from weft's SM form, error against NCCL %.1e%s\n",
           allreduce ? "allreduce" : "reduce_scatter", x->bytes >> 20, d, err, bad ? " WRONG" : "");
  return bad;
}

int main(int argc, char **argv) {
  static const int def[][3] = {{1, 0, 0}, {16, 0, 0}, {64, 0, 0}, {256, 0, 0}};
  setenv("WEFT_HEAP_SIZE", "2G", 0);
  ctx_t x;
  memset(&x, 0, sizeof x);
  dev_env_init(&x.e, argc, argv, "red_push_dev", def, 4);
  dev_env_t *e = &x.e;
  const char *sl = getenv("RED_PUSH_SLICES"), *pk = getenv("RED_PUSH_PIECE_KIB");
  x.slices = sl ? atoi(sl) : 64 / e->ws;
  x.depth = getenv("RED_PUSH_DEPTH") ? atoi(getenv("RED_PUSH_DEPTH")) : 2;
  x.piece = (pk ? strtoull(pk, NULL, 10) : 128) << 10 >> 1; /* bf16 elements */
  if (x.slices < 1 || x.slices * e->ws > 128 || x.piece % 8 || x.depth < 2)
    DIE("slices x ranks <= 128, piece a multiple of 16 bytes, depth >= 2");
  char *src = read_source(WEFT_SOURCE_DIR "/dev/collectives/red_push.cu");
  char batch[32];
  snprintf(batch, sizeof batch, "-DWEFT_RED_BATCH=%d", e->ws);
  const char *opts[] = {batch};
  weft_module_t *mod;
  W(weft_module_load(e->comm, src, "red_push.cu", opts, 1, &mod));
  W(weft_module_get_kernel(mod, "red_push", &x.push));
  free(src);
  W(weft_malloc(e->comm, (size_t)x.depth * (size_t)e->ws * (size_t)x.slices * x.piece * 2, (void **)&x.stage));
  if (e->me == 0)
    printf("# red_push_dev: %d ranks, bf16, %d slices of %llu KiB, depth %d; us a call (median of %d samples of %d "
           "calls, slowest rank); ratio = NCCL / push\n#  MiB |", e->ws, x.slices, x.piece * 2 >> 10, x.depth,
           e->samples, DEV_BATCH);
  for (int r = 0; r < R_COUNT && e->me == 0; r++) printf(" %9s", run_names[r]);
  if (e->me == 0) printf(" | RS ratio AR ratio\n");
  int bad = 0;
  for (int i = 0; i < e->nshapes; i++) {
    x.bytes = (size_t)e->shapes[i][0] << 20;
    if (x.bytes % ((size_t)e->ws * 16)) DIE("%d MiB is not a multiple of 16 bytes per rank", e->shapes[i][0]);
    W(weft_malloc(e->comm, x.bytes, (void **)&x.send));
    W(weft_malloc(e->comm, x.bytes, (void **)&x.recv));
    CU(cuMemAlloc(&x.nccl_out, x.bytes));
    bad |= check(&x, 0);
    bad |= check(&x, 1);
    double med[R_COUNT];
    dev_time(e, R_COUNT, run, &x, med);
    if (e->me == 0) {
      printf("%6d |", e->shapes[i][0]);
      for (int r = 0; r < R_COUNT; r++) printf(" %9.1f", med[r] * 1e3);
      printf(" | %7.3fx %7.3fx\n", med[R_NCCL_RS] / med[R_PUSH_RS], med[R_NCCL_AR] / med[R_PUSH_AR]);
      fflush(stdout);
    }
    CU(cuMemFree(x.nccl_out));
    W(weft_free(e->comm, x.send));
    W(weft_free(e->comm, x.recv));
  }
  W(weft_free(e->comm, x.stage));
  W(weft_module_unload(mod));
  dev_env_fini(e);
  return bad;
}
