/*
 * bench.h — what every weft-bench suite shares: nccl-tests style options (-b -e -f -n -w -c -d -a
 * -J), the header (versions, each rank's device), timing with CUDA events, results gathered to
 * rank 0, and the JSON file. Tools exit on error; the library never does.
 */
#ifndef WEFT_BENCH_H
#define WEFT_BENCH_H

#include <cuda.h>
#include <stdio.h>
#include <stdlib.h>

#include "runtime/comm.h"
#include "runtime/loader.h"

typedef struct bench_opts {
  size_t min_bytes, max_bytes;
  double factor;     /* -f: size multiplier */
  int iters, warmup; /* -n, -w */
  int check;         /* -c: checked iterations */
  const char *dtype; /* -d */
  const char *algo;  /* -a */
  const char *json;  /* -J */
} bench_opts_t;

typedef struct bench {
  weft_comm_t *comm;
  int rank, world;
  CUstream stream;
  bench_opts_t opt;
  FILE *json;
  int json_rows;
  int wrong; /* total wrong values seen */
} bench_t;

/* Exit with a message naming the failed call (tools only). */
#define BENCH_CHECK(call)                                                                 \
  do {                                                                                    \
    weft_status_t st_ = (call);                                                           \
    if (st_ != WEFT_STATUS_SUCCESS) {                                                     \
      fprintf(stderr, "weft-bench: %s failed: %s: %s\n", #call, weft_get_error_string(st_), \
              weft_get_last_error());                                                     \
      exit(1);                                                                            \
    }                                                                                     \
  } while (0)
#define BENCH_CU(call)                                                                    \
  do {                                                                                    \
    CUresult r_ = weft_cu.call;                                                           \
    if (r_ != CUDA_SUCCESS) {                                                             \
      const char *n_ = "?";                                                               \
      weft_cu.cuGetErrorName(r_, &n_);                                                    \
      fprintf(stderr, "weft-bench: %s failed: %s\n", #call, n_);                          \
      exit(1);                                                                            \
    }                                                                                     \
  } while (0)

/* Parses the common options from argv (after the suite name); unknown options are an error. */
void bench_parse(bench_t *b, int argc, char **argv, size_t def_min, size_t def_max);
/* Initialises the communicator and stream and prints the header on rank 0. */
void bench_init(bench_t *b, const char *suite);
void bench_finish(bench_t *b);

/* Median of n doubles (sorts in place). */
double bench_median(double *v, int n);
/* The largest value across ranks (the slowest rank sets the step time). */
double bench_max_across_ranks(bench_t *b, double v);

/* One JSON row: {"suite":..., "name":..., key/value pairs...}; values are doubles. */
void bench_json_row(bench_t *b, const char *suite, const char *name, int nkv, const char **keys,
                    const double *values);

#endif
