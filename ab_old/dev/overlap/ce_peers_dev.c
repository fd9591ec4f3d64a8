/*
 * dev/overlap/ce_peers_dev.c — the copy engines between processes: why weft's copy-engine
 * AllGather at 4 ranks (h200-x4, 2026-11-26) moves ~210 GB/s a direction while one process
 * driving all 4 GPUs (dev/collectives/bidir.cu ce_push, cudaMalloc or VMM memory alike) moves
 * 368. Every rank copies B bytes of its symmetric `in` to each peer, as the AllGather does:
 *   push3   one cuMemcpyAsync a peer, each on its own side stream (forked from s0, joined)
 *   pull3   the same, each rank copying the peers' chunks into its own `out`
 *   push1   the peers' copies one after the other on s0
 *   bar+p3  weft_stream_barrier on s0, then push3 (the op's entry handshake)
 *   hbar+p3 s0 synchronised and a host barrier, then push3 (every rank starts its copies at
 *           about the same time, with no kernel spinning on any GPU meanwhile)
 *   bar     weft_stream_barrier alone
 *   bar+p1  weft_stream_barrier, then push1
 *   bar+l3  weft_stream_barrier, then pull3
 *   bar+c3  weft_stream_barrier, then push3 with every peer's copy in 4 MiB pieces
 *   nccl    ncclAllGather of the same bytes
 * Usage (device tool): weftrun -n N build/dev/overlap/ce_peers_dev [-s MiB,0,0]... [-n samples]
 * Columns: ms a call (median, slowest rank), then GB/s a direction a GPU = (N - 1) B / time.
 */
#include "overlap_dev.h"

typedef struct {
  dev_env_t e;
  char *in, *out;
  size_t bytes;
} ce_t;

/* piece: bytes a cuMemcpyAsync (0: the whole chunk) */
static void ce_copies(ce_t *x, int pull, int one_stream, size_t piece) {
  dev_env_t *e = &x->e;
  if (!piece) piece = x->bytes;
  if (!one_stream) dev_fork(e);
  for (size_t off = 0; off < x->bytes; off += piece)
    for (int k = 1; k < e->ws; k++) {
      int q = (e->me + k) % e->ws;
      size_t n = x->bytes - off < piece ? x->bytes - off : piece;
      CUstream s = one_stream ? e->s0 : e->side[k - 1];
      char *mine = x->out + (size_t)(pull ? q : e->me) * x->bytes + off;
      CUdeviceptr dst = pull ? (CUdeviceptr)(uintptr_t)mine : weft_heap_peer(&e->comm->heap, mine, q);
      CUdeviceptr src = pull ? weft_heap_peer(&e->comm->heap, x->in + (size_t)q * x->bytes + off, q)
                             : (CUdeviceptr)(uintptr_t)(x->in + (size_t)e->me * x->bytes + off);
      CU(cuMemcpyAsync(dst, src, n, s));
    }
  if (!one_stream) dev_join(e);
}

static void run(void *ctx, int r) {
  ce_t *x = ctx;
  dev_env_t *e = &x->e;
  if (r == 0) ce_copies(x, 0, 0, 0);
  else if (r == 1) ce_copies(x, 1, 0, 0);
  else if (r == 2) ce_copies(x, 0, 1, 0);
  else if (r == 4) {
    W(weft_stream_synchronize(e->comm, (weft_stream_t)e->s0));
    W(weft_comm_barrier(e->comm));
    ce_copies(x, 0, 0, 0);
  } else if (r != 9) {
    W(weft_stream_barrier(e->comm, (weft_stream_t)e->s0));
    if (r == 3) ce_copies(x, 0, 0, 0);
    if (r == 6) ce_copies(x, 0, 1, 0);
    if (r == 7) ce_copies(x, 1, 0, 0);
    if (r == 8) ce_copies(x, 0, 0, 4u << 20);
  } else {
    NC(ncclAllGather(x->in + (size_t)e->me * x->bytes, x->out, x->bytes, ncclUint8, e->nc,
                     (cudaStream_t)e->s0));
  }
}

int main(int argc, char **argv) {
  static const int def[][3] = {{16, 0, 0}, {64, 0, 0}};
  static const char *const runs[] = {"push3",  "pull3",  "push1",  "bar+p3", "hbar+p3",
                                      "bar",    "bar+p1", "bar+l3", "bar+c3", "nccl"};
  enum { NRUNS = sizeof runs / sizeof runs[0] };
  ce_t x;
  memset(&x, 0, sizeof x);
  dev_env_init(&x.e, argc, argv, "ce_peers_dev", def, 2);
  dev_env_t *e = &x.e;
  if (e->me == 0)
    printf("# ce_peers_dev: %d ranks; per run: ms a call, GB/s a direction a GPU\n", e->ws);
  for (int i = 0; i < e->nshapes; i++) {
    x.bytes = (size_t)e->shapes[i][0] << 20;
    W(weft_malloc(e->comm, x.bytes * (size_t)e->ws, (void **)&x.in));
    W(weft_malloc(e->comm, x.bytes * (size_t)e->ws, (void **)&x.out));
    double med[NRUNS];
    dev_time(e, NRUNS, run, &x, med);
    if (e->me == 0) {
      printf("%5d MiB |", e->shapes[i][0]);
      for (int r = 0; r < NRUNS; r++)
        printf(" %s %.3f ms %.1f |", runs[r], med[r], (double)(e->ws - 1) * x.bytes / (med[r] * 1e6));
      printf("\n");
      fflush(stdout);
    }
    W(weft_free(e->comm, x.in));
    W(weft_free(e->comm, x.out));
  }
  dev_env_fini(e);
  return 0;
}
