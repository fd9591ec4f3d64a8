/*
 * module.h — loaded programs on the communicator's GPU (module.c) and their launch (launch.c).
 *
 *   source + name + options  --weft_jit_compile (src/jit, cached)-->  cubin bytes
 *   cubin  --cuModuleLoadData in comm->context-->  weft_module (its weft_state filled)
 *   module + kernel name  --lookup (cached)-->      weft_kernel (CUfunction + attribute state)
 */
#ifndef WEFT_MODULE_H
#define WEFT_MODULE_H

#include <cuda.h>
#include <pthread.h>

#include "../internal.h"

struct weft_kernel {
  CUfunction function;
  struct weft_module *module;
  char *name;
  /* Launch attributes already applied to the function, so that each is set only when it grows
   * (cuFuncSetAttribute is not free, and launches are on the hot path). Guarded by the module's
   * lock for writes; read with atomic loads. */
  size_t max_dynamic_smem;
  int non_portable_cluster;
  struct weft_kernel *next;
};

struct weft_module {
  weft_comm_t *comm;
  CUmodule module;
  char *name;
  int has_state; /* the module defines weft_state and it was filled */
  pthread_mutex_t lock;
  struct weft_kernel *kernels; /* looked up so far */
};

/* Compile (cached) one of the files embedded in libweft ("kernels/runtime.cu") and load it on
 * comm's GPU; used for the runtime's own kernels and the ops' kernels. */
weft_status_t weft_module_load_embedded(weft_comm_t *comm, const char *file,
                                        const char *const *options, int num_options,
                                        struct weft_module **module);

/* Load an already compiled cubin on comm's GPU and fill its weft_state. name is for messages. */
weft_status_t weft_module_load_cubin(weft_comm_t *comm, const void *cubin, size_t cubin_size,
                                     const char *name, struct weft_module **module);

/* Unloads and frees a module on a failure path: a failed unload (inside a stream capture, say)
 * is logged, not recorded, so that the error being returned stays the last error. */
void weft_module_discard(struct weft_module *module);

#endif /* WEFT_MODULE_H */
