/*
 * support.h — what the tests (tests/cpu, tests/gpu) and weft's tools (tools/) share: the check
 * macros and the device source of the random 16-bit fill. Tests find it on their include path
 * (tests/), the tools too (tools/CMakeLists.txt adds tests/ to weft-bench's).
 *
 * Calls that must succeed. Each prints "<file>:<line>: <call> failed: <why>" on stderr
 * ("<file>:<line>: <context>: ..." where test_context, below, is set) and exits 1: a test or a
 * tool has nothing sensible left to do once a setup call fails.
 *   OK(call)         a weft call (weft_status_t): why is the status and weft's last error
 *                    (weft_report_failure, src/internal.h)
 *   CU(call)         a driver call through weft's table (weft_cu, src/runtime/loader.h), written
 *                    without it: CU(cuMemAlloc(&p, n)); why is the CUresult's name
 *   NCCL_OK(call)    an NCCL call; why is ncclGetErrorString's text
 *   CUBLAS_OK(call)  a cuBLAS call; why is the cublasStatus_t's number
 * This header includes only the C library and weft.h: the macros name what the includer already
 * has (tests include the internals they test, tools src/tools.h), and NCCL_OK and CUBLAS_OK
 * expand only where the includer has nccl.h or cublas_v2.h, so that nothing here makes a test
 * depend on NCCL or cuBLAS.
 *
 * Checks that count. Each is an expression, 1 when the check holds and 0 when it does not, and
 * counts itself in test_checks; a failed one counts in test_failures and prints
 * "FAIL <file>:<line>: <message>" on stderr (stdout flushed first, so that the line lands after
 * what the test printed before it). A test ends with `return test_failures ? 1 : 0;`.
 *   EXPECT(cond, fmt, ...)           cond holds; the message is printf's fmt, ...
 *   EXPECT_STATUS(what, call, want)  a weft call returns want; the message: what, the status
 *                                    returned, the one wanted, and weft's last error where the
 *                                    call failed
 *   EXPECT_ERROR(call, want, text)   a weft call returns want and weft's last error contains
 *                                    text (NULL: any text); the message names the call
 *   REQUIRE(check)                   returns 1 from the calling function when check (one of the
 *                                    above) failed: for steps that later steps rely on, as in a
 *                                    forked rank whose exit status is its verdict
 * Settings a test may change (each source file has its own, as it has its own counters):
 *   test_fail_cap   print only the first test_fail_cap FAIL lines (0, the default: all), for
 *                   sweeps where one bug fails thousands of checks; the count stays exact
 *   test_show_ok    1: also print "ok   <message>" on stdout for each check that holds
 *   test_context    when not empty, printed before the message: the case or rank at hand (the
 *                   calls that must succeed print it too)
 *
 * FILL_KERNEL_SRC: the CUDA source, as a string literal (so that it joins a module's other
 * kernels by concatenation), of
 *   fill(unsigned short *p, unsigned long long n, int fp16, unsigned long long seed)
 * a grid-stride kernel that writes n values uniform in [-1, 1), rounded to fp16 (fp16 != 0) or
 * bf16, each a hash of (seed, index): the same data at any launch shape, and any rank can
 * recompute another's. The GEMM tests (gpu/gemm_test.h) and weft-bench's data kernels
 * (tools/bench.c) load it.
 */
#ifndef WEFT_TESTS_SUPPORT_H
#define WEFT_TESTS_SUPPORT_H

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "weft.h"

/* Static, so every source file that includes this has its own; the tools leave them alone. */
static int test_checks __attribute__((unused));
static int test_failures __attribute__((unused));
static int test_fail_cap __attribute__((unused));
static int test_show_ok __attribute__((unused));
static char test_context[256] __attribute__((unused));

/* ---- calls that must succeed ----------------------------------------------------------- */

/* "<file>:<line>" and, where test_context is set, ": <context>": where a failed call was made. */
static inline const char *test_where_(char *buf, size_t size, const char *file, int line) {
  snprintf(buf, size, "%s:%d%s%s", file, line, test_context[0] ? ": " : "", test_context);
  return buf;
}

#define OK(call)                                                                          \
  do {                                                                                    \
    weft_status_t st_ = (call);                                                           \
    if (st_ != WEFT_STATUS_SUCCESS) {                                                     \
      char where_[512];                                                                   \
      weft_report_failure(test_where_(where_, sizeof where_, __FILE__, __LINE__), #call,  \
                          st_);                                                           \
      exit(1);                                                                            \
    }                                                                                     \
  } while (0)

#define CU(call)                                                                          \
  do {                                                                                    \
    CUresult r_ = weft_cu.call;                                                           \
    if (r_ != CUDA_SUCCESS) {                                                             \
      const char *n_ = "?";                                                               \
      char where_[512];                                                                   \
      weft_cu.cuGetErrorName(r_, &n_);                                                    \
      fprintf(stderr, "%s: %s failed: %s\n",                                              \
              test_where_(where_, sizeof where_, __FILE__, __LINE__), #call, n_);         \
      exit(1);                                                                            \
    }                                                                                     \
  } while (0)

#define NCCL_OK(call)                                                                     \
  do {                                                                                    \
    ncclResult_t r_ = (call);                                                             \
    if (r_ != ncclSuccess) {                                                              \
      char where_[512];                                                                   \
      fprintf(stderr, "%s: %s failed: %s\n",                                              \
              test_where_(where_, sizeof where_, __FILE__, __LINE__), #call,              \
              ncclGetErrorString(r_));                                                    \
      exit(1);                                                                            \
    }                                                                                     \
  } while (0)

#define CUBLAS_OK(call)                                                                   \
  do {                                                                                    \
    cublasStatus_t r_ = (call);                                                           \
    if (r_ != CUBLAS_STATUS_SUCCESS) {                                                    \
      char where_[512];                                                                   \
      fprintf(stderr, "%s: %s failed: cuBLAS status %d\n",                                \
              test_where_(where_, sizeof where_, __FILE__, __LINE__), #call, (int)r_);    \
      exit(1);                                                                            \
    }                                                                                     \
  } while (0)

/* ---- checks that count ----------------------------------------------------------------- */

/* A check that holds costs a comparison and a count: its message's arguments are evaluated only
 * where the message is printed. */
#define EXPECT(cond, ...)                                                                 \
  ((cond) ? (test_show_ok ? test_pass_(__VA_ARGS__) : test_count_())                      \
          : test_fail_(__FILE__, __LINE__, __VA_ARGS__))
#define EXPECT_STATUS(what, call, want)                                                   \
  test_status_(__FILE__, __LINE__, (what), (call), (want), NULL)
#define EXPECT_ERROR(call, want, text)                                                    \
  test_status_(__FILE__, __LINE__, #call, (call), (want), (text))
#define REQUIRE(check)                                                                    \
  do {                                                                                    \
    if (!(check)) return 1;                                                               \
  } while (0)

/* "<prefix><context: ><message>\n" in one write, so that the lines of forked ranks do not mix. */
static inline void test_print_(FILE *f, const char *prefix, const char *fmt, va_list ap) {
  char line[2048];
  size_t room = sizeof line - 1; /* the newline's place */
  int n = snprintf(line, room, "%s%s%s", prefix, test_context, test_context[0] ? ": " : "");
  if (n >= 0 && (size_t)n < room) vsnprintf(line + n, room - (size_t)n, fmt, ap);
  size_t len = strlen(line);
  line[len] = '\n';
  line[len + 1] = 0;
  fputs(line, f);
}

/* A check that held, not printed. Returns 1. */
static inline int test_count_(void) {
  test_checks++;
  return 1;
}

/* A check that held, printed as "ok   <message>" on stdout (test_show_ok). Returns 1. */
__attribute__((format(printf, 1, 2))) static inline int test_pass_(const char *fmt, ...) {
  test_checks++;
  va_list ap;
  va_start(ap, fmt);
  test_print_(stdout, "ok   ", fmt, ap);
  va_end(ap);
  return 1;
}

/* A check that failed: counts it and prints it (up to test_fail_cap lines). Returns 0. */
__attribute__((format(printf, 3, 4))) static inline int test_fail_(const char *file, int line,
                                                                    const char *fmt, ...) {
  test_checks++;
  if (test_fail_cap <= 0 || test_failures < test_fail_cap) {
    char prefix[512];
    snprintf(prefix, sizeof prefix, "FAIL %s:%d: ", file, line);
    va_list ap;
    va_start(ap, fmt);
    fflush(stdout);
    test_print_(stderr, prefix, fmt, ap);
    va_end(ap);
  } else if (test_failures == test_fail_cap) {
    fflush(stdout);
    fprintf(stderr, "(only the first %d FAIL lines are printed)\n", test_fail_cap);
  }
  test_failures++;
  return 0;
}

/* EXPECT_STATUS and EXPECT_ERROR: got (already returned) against want, and the last error
 * against text. */
static inline int test_status_(const char *file, int line, const char *what, weft_status_t got,
                               weft_status_t want, const char *text) {
  const char *err = weft_get_last_error();
  const char *sep = got != WEFT_STATUS_SUCCESS ? ": " : "", *shown = *sep ? err : "";
  if (got != want)
    return test_fail_(file, line, "%-44s -> %s (want %s)%s%s", what, weft_get_error_string(got),
                      weft_get_error_string(want), sep, shown);
  if (text && !strstr(err, text))
    return test_fail_(file, line, "%s -> %s, but its message lacks \"%s\": %s", what,
                      weft_get_error_string(got), text, err);
  if (!test_show_ok) return test_count_();
  return test_pass_("%-44s -> %s (want %s)%s%s", what, weft_get_error_string(got),
                    weft_get_error_string(want), sep, shown);
}

/* ---- the random 16-bit fill, device source --------------------------------------------- */

#define FILL_KERNEL_SRC \
  "extern \"C\" __global__ void fill(unsigned short *p, unsigned long long n, int fp16,\n" \
  "                                 unsigned long long seed) {\n" \
  "  for (unsigned long long i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {\n" \
  "    unsigned long long x = (i + 1) * 0x9E3779B97F4A7C15ull ^ seed;\n" \
  "    x ^= x >> 31; x *= 0xBF58476D1CE4E5B9ull; x ^= x >> 29; x *= 0x94D049BB133111EBull; x ^= x >> 32;\n" \
  "    float f = (float)(x >> 40) * (1.f / 16777216.f) * 2.f - 1.f;\n" \
  "    unsigned short h;\n" \
  "    if (fp16) asm(\"cvt.rn.f16.f32 %0, %1;\" : \"=h\"(h) : \"f\"(f));\n" \
  "    else asm(\"{ .reg .b32 t; cvt.rn.bf16x2.f32 t, %1, %1; mov.b32 {%0, _}, t; }\" : \"=h\"(h) : \"f\"(f));\n" \
  "    p[i] = h;\n" \
  "  }\n" \
  "}\n"

#endif /* WEFT_TESTS_SUPPORT_H */
