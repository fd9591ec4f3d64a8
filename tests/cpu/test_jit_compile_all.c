/*
 * test_jit_compile_all.c — NVRTC compiles, for sm_90a, everything embedded in libweft: each
 * device-library header alone (a one-line TU that includes it), all headers together, each .h of
 * kernels/ alone (the kernels' headers that the ops share as host C), and each kernel file
 * (kernels/NAME.cu) once per variant it declares, where a register spill fails it
 * (kernels/gemm/gemm.cu's configurations: test_gemm_configs.c). Iterates the embedded table, so new
 * headers and kernels are covered without editing this file. Needs no GPU; the cache is off so that
 * every compile really runs.
 *
 * A kernel file declares the -D sets it must compile with in lines such as
 *   // weft-jit-variant: -DBLOCK_M=128 -DBLOCK_N=256
 * (options separated by blanks); a file without such lines is compiled once with none.
 */
// weft-test: timeout=600
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jit/embedded.h"
#include "jit/jit.h"

static int failures, compiles;

/* ptxas's warning for a kernel whose registers spill to local memory (kernels are compiled with
 * --warn-on-spills: a spill in a copy or sum loop costs its bandwidth) */
#define SPILL_FLAG "--ptxas-options=--warn-on-spills"

static void compile(const char *what, const char *source, const char *name,
                    const char *const *options, int num_options) {
  void *cubin = NULL;
  size_t size = 0;
  char *log = NULL;
  uint64_t t0 = weft_now_ns();
  weft_status_t st = weft_jit_compile(source, name, options, num_options, &cubin, &size, &log);
  double s = (double)(weft_now_ns() - t0) * 1e-9;
  compiles++;
  if (st != WEFT_STATUS_SUCCESS) {
    failures++;
    printf("FAIL %-48s %6.2f s: %s\n%s\n", what, s, weft_get_error_string(st),
           log ? log : weft_get_last_error());
  } else if (log && strstr(log, "spilled")) {
    failures++;
    printf("FAIL %-48s %6.2f s: registers spilled\n%s\n", what, s, log);
  } else {
    printf("ok   %-48s %6.2f s  %7zu-byte cubin\n", what, s, size);
    if (log && *log) printf("     compiler messages:\n%s\n", log);
  }
  weft_jit_free(cubin);
  weft_jit_free(log);
}

static bool is_kernel(const char *name) {
  size_t n = strlen(name);
  return !strncmp(name, "kernels/", 8) && n > 3 && !strcmp(name + n - 3, ".cu");
}

/* Compiles the kernel file once per "weft-jit-variant:" line, or once bare. */
static void compile_kernel(const weft_embedded_file_t *f) {
  static const char tag[] = "weft-jit-variant:";
  int variants = 0;
  for (const char *p = strstr(f->data, tag); p; p = strstr(p + 1, tag)) {
    const char *start = p + sizeof tag - 1;
    while (*start == ' ' || *start == '\t') start++;
    size_t len = strcspn(start, "\r\n");
    char *line = malloc(len + 1);
    const char *opts[64];
    int n = 0;
    if (!line) {
      failures++;
      printf("FAIL out of memory\n");
      return;
    }
    memcpy(line, start, len);
    line[len] = 0;
    char *save = NULL;
    for (char *t = strtok_r(line, " \t", &save); t && n < 63; t = strtok_r(NULL, " \t", &save))
      opts[n++] = t;
    opts[n++] = SPILL_FLAG;
    char what[512];
    snprintf(what, sizeof what, "%s [%.*s]", f->name, (int)(len > 200 ? 200 : len), start);
    compile(what, f->data, f->name, opts, n);
    free(line);
    variants++;
  }
  if (!variants) {
    const char *spill[] = {SPILL_FLAG};
    compile(f->name, f->data, f->name, spill, 1);
  }
}

int main(void) {
  /* Really compile: a cache hit would prove nothing about this NVRTC. */
  setenv("WEFT_CACHE_DISABLE", "1", 1);
  int v = weft_nvrtc_version();
  printf("NVRTC %d.%d, architecture %s, %d embedded files\n", v / 1000, v % 1000 / 10,
         WEFT_JIT_DEFAULT_ARCH, weft_embedded_count);

  /* Every header on its own: each must include what it uses. */
  size_t all_len = 1;
  for (int i = 0; i < weft_embedded_count; i++)
    all_len += strlen(weft_embedded_files[i].name) + 16;
  char *all = malloc(all_len);
  if (!all) return 1;
  all[0] = 0;
  int headers = 0;
  for (int i = 0; i < weft_embedded_count; i++) {
    const weft_embedded_file_t *f = &weft_embedded_files[i];
    size_t n = strlen(f->name);
    /* kernels/: the .h files that the ops share as host C compile alone too; the kernels'
     * .cuh parts need their kernel's defines */
    int kernel_h = !strncmp(f->name, "kernels/", 8) && n > 2 && !strcmp(f->name + n - 2, ".h");
    if (!strncmp(f->name, "kernels/", 8) && !kernel_h) continue;
    char src[512], name[512];
    snprintf(src, sizeof src, "#include <%s>\n", f->name);
    snprintf(name, sizeof name, "include_%s.cu", f->name);
    compile(f->name, src, name, NULL, 0);
    if (kernel_h) continue;
    strcat(all, src);
    headers++;
  }
  /* All together: no two headers may clash. */
  if (headers > 1) compile("(all headers together)", all, "include_all.cu", NULL, 0);
  free(all);

  for (int i = 0; i < weft_embedded_count; i++)
    if (is_kernel(weft_embedded_files[i].name)) compile_kernel(&weft_embedded_files[i]);

  printf("%d compiles, %d failed\n", compiles, failures);
  return failures ? 1 : 0;
}
