/*
 * module.c — loaded programs: compile (cached) → cuModuleLoadData in the communicator's context
 * → fill the module's `weft_state` (the __constant__ weft_device_state_t the device library
 * declares) from comm->state, so kernels reach peers with no extra arguments. Kernel lookups
 * are cached per module; unloading frees them all.
 *
 * The ops load some modules at their first call (an operator's reductions, a GEMM shape
 * class), which may come while the caller's stream is being captured into a CUDA graph: the
 * load runs in the relaxed capture mode (a load enqueues nothing the graph should hold) and the
 * state goes through the communicator's own non-blocking stream, never the legacy one, whose
 * implicit ordering with a capturing blocking stream would invalidate the capture.
 */
#include <stdlib.h>
#include <string.h>

#include "module.h"

#include "../jit/embedded.h"
#include "../jit/jit.h"
#include "comm.h"
#include "loader.h"

static char *dup_string(const char *s) {
  size_t n = strlen(s) + 1;
  char *d = malloc(n);
  if (d) memcpy(d, s, n);
  return d;
}

static void module_free(struct weft_module *m) {
  for (struct weft_kernel *k = m->kernels, *next; k; k = next) {
    next = k->next;
    free(k->name);
    free(k);
  }
  pthread_mutex_destroy(&m->lock);
  free(m->name);
  free(m);
}

/* cuModuleLoadData of cubin into m, then its weft_state filled (if the program has one). */
static weft_status_t load_and_fill(weft_comm_t *comm, struct weft_module *m, const void *cubin) {
  CUresult lr = weft_cu.cuModuleLoadData(&m->module, cubin);
  if (lr == CUDA_ERROR_NO_BINARY_FOR_GPU || lr == CUDA_ERROR_INVALID_IMAGE)
    /* The usual cause: a cubin for sm_90a on a GPU of another generation. */
    return WEFT_ERR(comm, WEFT_STATUS_NOT_SUPPORTED,
                    "module %s: this GPU cannot run its cubin (%s: compiled for another "
                    "architecture? the default is " WEFT_JIT_DEFAULT_ARCH ")",
                    m->name,
                    lr == CUDA_ERROR_NO_BINARY_FOR_GPU ? "no code for this GPU" : "an invalid image");
  if (lr != CUDA_SUCCESS) return weft_cu_error(comm, lr, "cuModuleLoadData", __FILE__, __LINE__);

  CUdeviceptr state = 0;
  size_t state_size = 0;
  CUresult res = weft_cu.cuModuleGetGlobal(&state, &state_size, m->module, "weft_state");
  /* NOT_FOUND: the program does not use the device library's state (NVRTC drops unused globals) */
  if (res == CUDA_ERROR_NOT_FOUND) return WEFT_STATUS_SUCCESS;
  if (res != CUDA_SUCCESS)
    return weft_cu_error(comm, res, "cuModuleGetGlobal(weft_state)", __FILE__, __LINE__);
  /* A module built against another layout of the state block would read garbage peers. */
  if (state_size != sizeof(weft_device_state_t))
    return WEFT_ERR(comm, WEFT_STATUS_INVALID_USAGE,
                    "module %s was built against another weft: its weft_state is %zu bytes, "
                    "this library's is %zu",
                    m->name, state_size, sizeof(weft_device_state_t));
  WEFT_CU(comm, cuMemcpyHtoDAsync(state, &comm->state, sizeof comm->state, comm->quiet));
  WEFT_CHECK(weft_stream_wait_idle(comm, comm->quiet, "filling a loaded module's weft_state"));
  m->has_state = 1;
  return WEFT_STATUS_SUCCESS;
}

weft_status_t weft_module_load_cubin(weft_comm_t *comm, const void *cubin, size_t cubin_size,
                                     const char *name, struct weft_module **out) {
  WEFT_ARG(comm, cubin && cubin_size, "cubin is empty");
  WEFT_ARG(comm, out, "module is NULL");
  WEFT_CHECK(weft_cu_load(comm, NULL));
  WEFT_CHECK(weft_comm_make_current(comm));
  if (!name) name = "weft_program.cu";

  struct weft_module *m = calloc(1, sizeof *m);
  if (!m) return WEFT_ERR(comm, WEFT_STATUS_OUT_OF_MEMORY, "no memory for module %s", name);
  m->comm = comm;
  pthread_mutex_init(&m->lock, NULL);
  m->name = dup_string(name);
  weft_status_t st = WEFT_STATUS_SUCCESS;
  if (!m->name) {
    st = WEFT_ERR(comm, WEFT_STATUS_OUT_OF_MEMORY, "no memory for module %s", name);
    goto fail;
  }
  CUstreamCaptureMode mode = CU_STREAM_CAPTURE_MODE_RELAXED;
  WEFT_CU_GOTO(comm, cuThreadExchangeStreamCaptureMode(&mode), st, fail);
  st = load_and_fill(comm, m, cubin);
  if (st != WEFT_STATUS_SUCCESS) weft_module_discard(m); /* an unload, still relaxed */
  CUresult rr = weft_cu.cuThreadExchangeStreamCaptureMode(&mode); /* the caller's mode back */
  if (st != WEFT_STATUS_SUCCESS) return st;
  if (rr != CUDA_SUCCESS) {
    st = weft_cu_error(comm, rr, "cuThreadExchangeStreamCaptureMode", __FILE__, __LINE__);
    goto fail;
  }
  WEFT_TRACE("jit: loaded %s (%zu-byte cubin, state %s)", name, cubin_size,
             m->has_state ? "filled" : "absent");
  *out = m;
  return WEFT_STATUS_SUCCESS;

fail:
  weft_module_discard(m);
  return st;
}

void weft_module_discard(struct weft_module *m) {
  if (m->module) {
    CUresult r = weft_cu.cuModuleUnload(m->module);
    if (r != CUDA_SUCCESS) WEFT_WARN("jit: cuModuleUnload of %s failed (%d)", m->name, (int)r);
  }
  module_free(m);
}

static weft_status_t load_source(weft_comm_t *comm, const char *source, const char *name,
                                 const char *const *options, int num_options,
                                 struct weft_module **out) {
  WEFT_CHECK(weft_comm_check(comm));
  WEFT_ARG(comm, source, "source is NULL");
  WEFT_ARG(comm, out, "module is NULL");
  WEFT_ARG(comm, num_options >= 0, "num_options %d is negative", num_options);
  WEFT_ARG(comm, options || num_options == 0, "options is NULL but num_options is %d",
           num_options);
  for (int i = 0; i < num_options; i++) WEFT_ARG(comm, options[i], "option %d is NULL", i);
  /* No driver, no point compiling: say so before spending seconds in NVRTC. */
  WEFT_CHECK(weft_cu_load(comm, NULL));
  void *cubin = NULL;
  size_t size = 0;
  char *log = NULL;
  weft_status_t st = weft_jit_compile(source, name, options, num_options, &cubin, &size, &log);
  if (st != WEFT_STATUS_SUCCESS) {
    /* the JIT records on the thread; the communicator's last error says it too */
    weft_comm_set_last_error(comm, weft_get_last_error());
  } else {
    if (log && *log) WEFT_INFO("jit: %s compiled with messages:\n%s", name ? name : "", log);
    st = weft_module_load_cubin(comm, cubin, size, name, out);
  }
  free(cubin);
  free(log);
  return st;
}

weft_status_t weft_module_load(weft_comm_t *comm, const char *source, const char *name,
                               const char *const *options, int num_options,
                               weft_module_t **module) {
  return load_source(comm, source, name, options, num_options, module);
}

weft_status_t weft_module_load_embedded(weft_comm_t *comm, const char *file,
                                        const char *const *options, int num_options,
                                        struct weft_module **module) {
  WEFT_ARG(comm, file, "file is NULL");
  const weft_embedded_file_t *e = weft_embedded_find(file);
  if (!e)
    return WEFT_ERR(comm, WEFT_STATUS_INTERNAL_ERROR, "%s is not embedded in this libweft", file);
  return load_source(comm, e->data, e->name, options, num_options, module);
}

weft_status_t weft_module_unload(weft_module_t *m) {
  WEFT_ARG(NULL, m, "module is NULL");
  weft_comm_t *comm = m->comm;
  weft_status_t st = weft_comm_make_current(comm);
  if (st == WEFT_STATUS_SUCCESS) {
    CUresult r = weft_cu.cuModuleUnload(m->module);
    if (r != CUDA_SUCCESS) st = weft_cu_error(comm, r, "cuModuleUnload", __FILE__, __LINE__);
  }
  /* Freed either way: the handle is unusable after this call, as documented. */
  module_free(m);
  return st;
}

weft_status_t weft_module_get_kernel(weft_module_t *m, const char *name, weft_kernel_t **out) {
  WEFT_ARG(NULL, m, "module is NULL");
  WEFT_ARG(m->comm, name, "kernel name is NULL");
  WEFT_ARG(m->comm, out, "kernel is NULL");
  weft_comm_t *comm = m->comm;
  weft_status_t st = WEFT_STATUS_SUCCESS;
  pthread_mutex_lock(&m->lock);
  struct weft_kernel *k;
  for (k = m->kernels; k; k = k->next)
    if (!strcmp(k->name, name)) goto found;
  k = calloc(1, sizeof *k);
  char *kname = dup_string(name);
  if (!k || !kname) {
    free(k);
    free(kname);
    st = WEFT_ERR(comm, WEFT_STATUS_OUT_OF_MEMORY, "no memory for kernel %s", name);
    goto done;
  }
  k->name = kname;
  k->module = m;
  CUresult r = weft_cu.cuModuleGetFunction(&k->function, m->module, name);
  if (r != CUDA_SUCCESS) {
    free(k->name);
    free(k);
    st = r == CUDA_ERROR_NOT_FOUND
             ? WEFT_ERR(comm, WEFT_STATUS_INVALID_ARGUMENT,
                        "module %s has no kernel %s (is it extern \"C\" __global__?)", m->name,
                        name)
             : weft_cu_error(comm, r, "cuModuleGetFunction", __FILE__, __LINE__);
    goto done;
  }
  k->next = m->kernels;
  m->kernels = k;
found:
  *out = k;
done:
  pthread_mutex_unlock(&m->lock);
  return st;
}
