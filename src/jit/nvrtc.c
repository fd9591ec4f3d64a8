/*
 * nvrtc.c — one NVRTC compile of a CUDA C source to a cubin (no cache; cache.c sits in front).
 *
 * Every file embedded in libweft (the device library under include/weft, the kernels under
 * kernels/) is offered to NVRTC as an in-memory header under its embedded name, so
 * `#include <weft/device.cuh>` works with no file on disk; the user's -I directories are
 * searched by NVRTC itself. NVRTC is linked directly (it needs no GPU and no driver), so
 * compiles work on a build machine.
 */
#include <dlfcn.h>
#include <nvrtc.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "embedded.h"
#include "jit.h"

int weft_nvrtc_version(void) {
  int major = 0, minor = 0;
  if (nvrtcVersion(&major, &minor) != NVRTC_SUCCESS) return -1;
  return major * 1000 + minor * 10;
}

static pthread_once_t identity_once = PTHREAD_ONCE_INIT;
static char identity[1200];

/* nvrtcVersion gives major.minor only, and a patch release of the toolkit changes code
 * generation without changing it: the library file's path, size and time stand in for the
 * patch level. */
static void find_identity(void) {
  Dl_info info;
  struct stat sb;
  int v = weft_nvrtc_version();
  if (dladdr((void *)nvrtcVersion, &info) && info.dli_fname && stat(info.dli_fname, &sb) == 0)
    snprintf(identity, sizeof identity, "nvrtc %d %s %lld %lld.%09ld", v, info.dli_fname,
             (long long)sb.st_size, (long long)sb.st_mtim.tv_sec, sb.st_mtim.tv_nsec);
  else
    snprintf(identity, sizeof identity, "nvrtc %d", v);
}

const char *weft_nvrtc_identity(void) {
  pthread_once(&identity_once, find_identity);
  return identity;
}

/* An option that may carry its value in the same string ("-arch=sm_90a") or, as NVRTC also
 * accepts, in the next one ("-arch", "sm_90a"). Returns the value (or NULL when the option is not
 * this one); *used is how many option strings it took. */
static const char *option_value(const char *const *options, int n, int i, const char *flag,
                                int *used, bool *missing) {
  size_t len = strlen(flag);
  const char *o = options[i];
  *used = 1;
  *missing = false;
  if (strncmp(o, flag, len) != 0) return NULL;
  if (o[len] == '=') return o + len + 1;
  if (o[len] != 0) return NULL;
  if (i + 1 >= n) {
    *missing = true;
    return NULL;
  }
  *used = 2;
  return options[i + 1];
}

weft_status_t weft_jit_effective_options(const char *const *options, int num_options,
                                         const char ***out, int *num_out, const char **arch) {
  const char *found_arch = NULL;
  bool has_std = false;
  for (int i = 0; i < num_options;) {
    static const char *const arch_flags[] = {"--gpu-architecture", "-arch"};
    int used = 1;
    bool missing = false;
    const char *v = NULL;
    for (size_t f = 0; f < sizeof arch_flags / sizeof *arch_flags && !v; f++)
      v = option_value(options, num_options, i, arch_flags[f], &used, &missing);
    if (missing)
      return WEFT_ERR(NULL, WEFT_STATUS_INVALID_ARGUMENT, "option \"%s\" lacks its value",
                      options[i]);
    if (v) {
      /* A virtual architecture yields PTX only, and weft loads cubins (PTX would cost a driver
       * JIT on every load and has run slower). */
      if (strncmp(v, "sm_", 3) != 0)
        return WEFT_ERR(NULL, WEFT_STATUS_INVALID_ARGUMENT,
                        "architecture \"%s\": weft compiles to cubins, give a real one (sm_90a)",
                        v);
      found_arch = v;
    }
    if (!strncmp(options[i], "--std=", 6) || !strncmp(options[i], "-std=", 5)) has_std = true;
    i += used;
  }
  const char **all = malloc(sizeof *all * (size_t)(num_options + 3));
  if (!all) return WEFT_ERR(NULL, WEFT_STATUS_OUT_OF_MEMORY, "no memory for compile options");
  int n = 0;
  for (int i = 0; i < num_options; i++) all[n++] = options[i];
  if (!found_arch) all[n++] = "--gpu-architecture=" WEFT_JIT_DEFAULT_ARCH;
  /* The device library is written C-style but compiled as C++17: one fixed dialect, so that a
   * kernel that compiles here compiles for every user. */
  if (!has_std) all[n++] = "--std=c++17";
  all[n++] = "-DWEFT_NVRTC=1";
  *out = all;
  *num_out = n;
  *arch = found_arch ? found_arch : WEFT_JIT_DEFAULT_ARCH;
  return WEFT_STATUS_SUCCESS;
}

/* The first line of the log that says "error", shortened, for the one-line last-error text. */
static void short_error(const char *log, char *buf, size_t size) {
  const char *line = log ? strstr(log, "error") : NULL;
  if (!line) {
    snprintf(buf, size, "%s", log && *log ? log : "(NVRTC gave no log)");
  } else {
    while (line > log && line[-1] != '\n') line--;
    size_t len = strcspn(line, "\n");
    snprintf(buf, size, "%.*s", (int)len, line);
  }
  if (strlen(buf) > 200) strcpy(buf + 197, "...");
}

#define NVRTC_TRY(call)                                                                   \
  do {                                                                                    \
    nvrtcResult r_ = (call);                                                              \
    if (r_ != NVRTC_SUCCESS) {                                                            \
      st = WEFT_ERR(NULL, r_ == NVRTC_ERROR_OUT_OF_MEMORY ? WEFT_STATUS_OUT_OF_MEMORY       \
                                                          : WEFT_STATUS_INTERNAL_ERROR,   \
                    "%s failed: %s", #call, nvrtcGetErrorString(r_));                     \
      goto done;                                                                          \
    }                                                                                     \
  } while (0)

weft_status_t weft_nvrtc_compile(const char *source, const char *name, const char *const *options,
                                 int num_options, void **cubin, size_t *cubin_size, char **log) {
  weft_status_t st = WEFT_STATUS_SUCCESS;
  const char **opts = NULL;
  int nopts = 0;
  const char *arch;
  nvrtcProgram prog = NULL;
  char *text = NULL, *bin = NULL;
  *cubin = NULL;
  *cubin_size = 0;
  if (log) *log = NULL;

  WEFT_CHECK(weft_jit_effective_options(options, num_options, &opts, &nopts, &arch));

  const char *hdr_data[weft_embedded_count > 0 ? weft_embedded_count : 1];
  const char *hdr_names[weft_embedded_count > 0 ? weft_embedded_count : 1];
  for (int i = 0; i < weft_embedded_count; i++) {
    hdr_data[i] = weft_embedded_files[i].data;
    hdr_names[i] = weft_embedded_files[i].name;
  }

  uint64_t t0 = weft_now_ns();
  NVRTC_TRY(nvrtcCreateProgram(&prog, source, name, weft_embedded_count, hdr_data, hdr_names));
  nvrtcResult res = nvrtcCompileProgram(prog, nopts, opts);
  /* The log is wanted both ways: the error text on failure, ptxas warnings on success. */
  size_t log_size = 0;
  NVRTC_TRY(nvrtcGetProgramLogSize(prog, &log_size));
  text = malloc(log_size + 1);
  if (!text) {
    st = WEFT_ERR(NULL, WEFT_STATUS_OUT_OF_MEMORY, "no memory for the NVRTC log");
    goto done;
  }
  text[0] = 0;
  if (log_size > 0) NVRTC_TRY(nvrtcGetProgramLog(prog, text));
  text[log_size] = 0;
  if (res != NVRTC_SUCCESS) {
    /* Only NVRTC_ERROR_COMPILATION is the program's fault; an invalid option is the caller's,
     * and the log may be empty then, so name the NVRTC error as well. */
    char brief[256];
    short_error(text, brief, sizeof brief);
    st = WEFT_ERR(NULL, WEFT_STATUS_COMPILE_ERROR, "NVRTC could not compile %s for %s (%s): %s",
                  name, arch, nvrtcGetErrorString(res), brief);
    if (!*text) {
      free(text);
      size_t len = strlen(name) + 128;
      text = malloc(len);
      if (text)
        snprintf(text, len, "%s: nvrtcCompileProgram failed with %s and an empty log\n", name,
                 nvrtcGetErrorString(res));
    }
    goto done;
  }
  size_t size = 0;
  NVRTC_TRY(nvrtcGetCUBINSize(prog, &size));
  if (size == 0) {
    st = WEFT_ERR(NULL, WEFT_STATUS_INTERNAL_ERROR, "NVRTC produced an empty cubin for %s", name);
    goto done;
  }
  bin = malloc(size);
  if (!bin) {
    st = WEFT_ERR(NULL, WEFT_STATUS_OUT_OF_MEMORY, "no memory for a %zu-byte cubin", size);
    goto done;
  }
  NVRTC_TRY(nvrtcGetCUBIN(prog, bin));
  WEFT_TRACE("jit: compiled %s for %s in %.3f s (%zu-byte cubin)", name, arch,
             (double)(weft_now_ns() - t0) * 1e-9, size);
  *cubin = bin;
  *cubin_size = size;
  bin = NULL;

done:
  if (prog) {
    nvrtcResult r = nvrtcDestroyProgram(&prog);
    if (r != NVRTC_SUCCESS)
      WEFT_WARN("jit: nvrtcDestroyProgram failed: %s", nvrtcGetErrorString(r));
  }
  free(bin);
  free(opts);
  if (log && text && (st == WEFT_STATUS_COMPILE_ERROR || (st == WEFT_STATUS_SUCCESS && *text))) {
    *log = text;
    text = NULL;
  }
  free(text);
  return st;
}
