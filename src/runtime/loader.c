/* loader.c — dlopen of libcuda.so.1 and cuGetProcAddress of each entry point (see loader.h). */
#include "loader.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

weft_cu_table_t weft_cu;

static pthread_once_t load_once = PTHREAD_ONCE_INIT;
static weft_status_t load_status = WEFT_STATUS_INTERNAL_ERROR;
static char load_message[512];

typedef CUresult (*get_proc_fn)(const char *, void **, int, cuuint64_t,
                                CUdriverProcAddressQueryResult *);

static void load_driver(void) {
  const char *path = "libcuda.so.1";
  void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    snprintf(load_message, sizeof load_message,
             "no CUDA driver: dlopen(%s) failed: %s", path, dlerror());
    load_status = WEFT_STATUS_NO_DEVICE;
    return;
  }
  get_proc_fn get_proc = (get_proc_fn)dlsym(lib, "cuGetProcAddress_v2");
  if (!get_proc) {
    snprintf(load_message, sizeof load_message,
             "the CUDA driver is older than CUDA 12 (no cuGetProcAddress_v2); weft needs %d.%d",
             CUDA_VERSION / 1000, CUDA_VERSION % 1000 / 10);
    load_status = WEFT_STATUS_NO_DEVICE;
    return;
  }
  CUdriverProcAddressQueryResult found;
#define WEFT_CU_LOOKUP_AT(f, name, version)                                                  \
  if (get_proc(name, (void **)&weft_cu.f, version, CU_GET_PROC_ADDRESS_DEFAULT, &found) !=    \
          CUDA_SUCCESS ||                                                                 \
      found != CU_GET_PROC_ADDRESS_SUCCESS || !weft_cu.f) {                               \
    snprintf(load_message, sizeof load_message,                                           \
             "the CUDA driver lacks %s for CUDA %d (driver too old?)", name, version);     \
    load_status = WEFT_STATUS_NO_DEVICE;                                                  \
    return;                                                                               \
  }
/* #f here, before cuda.h's renaming macros expand f (cuStreamWriteValue32 -> ..._v2): the
 * driver is asked for the base name at a version. */
#define WEFT_CU_LOOKUP(f) WEFT_CU_LOOKUP_AT(f, #f, CUDA_VERSION)
#define WEFT_CU_LOOKUP12(f) WEFT_CU_LOOKUP_AT(f, #f, 12000)
  WEFT_CU_FUNCTIONS(WEFT_CU_LOOKUP)
  WEFT_CU_FUNCTIONS_CUDA12(WEFT_CU_LOOKUP12)
#undef WEFT_CU_LOOKUP
#undef WEFT_CU_LOOKUP12
#undef WEFT_CU_LOOKUP_AT
  CUresult res = weft_cu.cuInit(0);
  if (res != CUDA_SUCCESS) {
    const char *name = "?";
    weft_cu.cuGetErrorName(res, &name);
    snprintf(load_message, sizeof load_message, "cuInit failed: %s (no usable GPU)", name);
    load_status = WEFT_STATUS_NO_DEVICE;
    return;
  }
  int count = 0;
  if (weft_cu.cuDeviceGetCount(&count) != CUDA_SUCCESS || count == 0) {
    snprintf(load_message, sizeof load_message, "the CUDA driver sees no GPU");
    load_status = WEFT_STATUS_NO_DEVICE;
    return;
  }
  load_status = WEFT_STATUS_SUCCESS;
}

weft_status_t weft_cu_load(weft_comm_t *comm, const weft_cu_table_t **table) {
  pthread_once(&load_once, load_driver);
  if (load_status != WEFT_STATUS_SUCCESS)
    return WEFT_ERR(comm, load_status, "%s", load_message);
  if (table) *table = &weft_cu;
  return WEFT_STATUS_SUCCESS;
}

weft_status_t weft_cu_error(weft_comm_t *comm, CUresult res, const char *call, const char *file,
                            int line) {
  const char *name = "?", *text = "?";
  if (weft_cu.cuGetErrorName) weft_cu.cuGetErrorName(res, &name);
  if (weft_cu.cuGetErrorString) weft_cu.cuGetErrorString(res, &text);
  weft_status_t st =
      res == CUDA_ERROR_OUT_OF_MEMORY ? WEFT_STATUS_OUT_OF_MEMORY : WEFT_STATUS_CUDA_ERROR;
  return weft_error(comm, st, file, line, "%s failed: %s (%s)", call, name, text);
}
