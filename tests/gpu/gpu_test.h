/*
 * gpu_test.h — what the GPU tests share: init that skips (77) without a GPU, random data, and
 * compiling a test's kernels through the JIT; the check macros (OK, CU, EXPECT) come from
 * support.h.
 */
#ifndef WEFT_GPU_TEST_H
#define WEFT_GPU_TEST_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/wait.h>
#include <unistd.h>

#include "runtime/comm.h"
#include "runtime/loader.h"
#include "support.h"

/* Compiles a test's kernels before anything else, so that machines without a GPU (CI) still
 * check that they compile, and a compile error fails the test instead of skipping it.
 * WEFT_TEST_COMPILE_ONLY=1 exits 0 right after (a CPU-only check of a GPU test's kernels: weftrun
 * skips without GPUs before the program runs). */
static inline void test_precompile(const char *src, const char *name) {
  void *cubin;
  size_t size;
  char *log = NULL;
  weft_status_t st = weft_jit_compile(src, name, NULL, 0, &cubin, &size, &log);
  if (st != WEFT_STATUS_SUCCESS) {
    fprintf(stderr, "%s does not compile: %s\n%s\n", name, weft_get_last_error(), log ? log : "");
    exit(1);
  }
  weft_jit_free(cubin);
  weft_jit_free(log);
  const char *only = getenv("WEFT_TEST_COMPILE_ONLY");
  if (only && *only == '1') {
    printf("%s compiles (WEFT_TEST_COMPILE_ONLY)\n", name);
    exit(0);
  }
}

/* weft_comm_init, or exit 77 when this machine has no GPU. */
static inline weft_comm_t *test_init(void) {
  weft_comm_t *comm;
  weft_status_t st = weft_comm_init(&comm, NULL);
  if (st == WEFT_STATUS_NO_DEVICE) {
    printf("skipped: %s\n", weft_get_last_error());
    exit(77);
  }
  OK(st);
  return comm;
}

/* A seed that differs per run and per rank, printed so that a failure can be replayed
 * (WEFT_TEST_SEED=<base>). seed / 1000003 is the same on every rank (tests derive sizes from it,
 * which must agree): rank 0 picks the base and the others read it from rank 0's heap, because
 * each rank's own clock may already show the next second. Collective. */
static inline unsigned long long test_seed(weft_comm_t *comm) {
  const char *s = getenv("WEFT_TEST_SEED");
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  unsigned long long base = s ? strtoull(s, NULL, 0)
                              : (unsigned long long)ts.tv_sec * 1000ull + (unsigned long long)ts.tv_nsec / 1000000ull;
  base %= 1ull << 40; /* room for the rank part below */
  unsigned long long *word;
  CUdeviceptr tmp;
  OK(weft_malloc(comm, 8, (void **)&word));
  if (comm->rank == comm->node_first_rank) CU(cuMemcpyHtoD((CUdeviceptr)(uintptr_t)word, &base, 8));
  OK(weft_comm_barrier(comm));
  CU(cuMemAlloc(&tmp, 8));
  OK(weft_stream_get(comm, (void *)(uintptr_t)tmp, word, 8, comm->node_first_rank, NULL));
  OK(weft_stream_synchronize(comm, NULL));
  CU(cuMemcpyDtoH(&base, tmp, 8));
  CU(cuMemFree(tmp));
  OK(weft_comm_barrier(comm)); /* nobody frees the word while a peer may still read it */
  OK(weft_free(comm, word));
  unsigned long long seed = base * 1000003ull + (unsigned long long)comm->rank;
  printf("[%d] seed %llu (WEFT_TEST_SEED=%llu replays this run)\n", comm->rank, seed, base);
  return seed;
}

static inline unsigned long long test_rand(unsigned long long *x) {
  *x ^= *x << 13, *x ^= *x >> 7, *x ^= *x << 17;
  return *x;
}

/* Runs a shell command (a driver test's job), its stdout and stderr (if redirected) into out;
 * returns its exit code (128 if it did not exit). */
static inline int test_run_job(const char *cmd, char *out, size_t size) {
  FILE *p = popen(cmd, "r");
  if (!p) return -1;
  size_t n = fread(out, 1, size - 1, p);
  out[n] = 0;
  int st = pclose(p);
  return WIFEXITED(st) ? WEXITSTATUS(st) : 128;
}

static inline weft_kernel_t *test_kernel(weft_module_t *m, const char *name) {
  weft_kernel_t *k;
  OK(weft_module_get_kernel(m, name, &k));
  return k;
}

#endif
