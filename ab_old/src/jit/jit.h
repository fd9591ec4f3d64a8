/*
 * jit.h — the JIT's internal interface: NVRTC compile (nvrtc.c), the disk cache in front of it
 * (cache.c), loaded modules and their kernels (module.c), and the launch (launch.c).
 *
 * Data shapes:
 *   source + name + options  --compile (cached)-->  cubin bytes (+ NVRTC's log)
 *   cubin  --cuModuleLoadData in comm->context-->    weft_module (its weft_state filled)
 *   module + kernel name  --lookup (cached)-->        weft_kernel (CUfunction + attribute state)
 *
 * Device-library convention that NVRTC imposes: in-memory headers are found by the exact name
 * they were registered under, with no directory-relative resolution, so the device library
 * includes its own files by their full name ("weft/state.h", never "state.h").
 */
#ifndef WEFT_JIT_H
#define WEFT_JIT_H

#include <cuda.h>
#include <pthread.h>
#include <stdint.h>

#include "../internal.h"

/* Architecture used when the options name none: wgmma and setmaxnreg need the "a" variant. */
#define WEFT_JIT_DEFAULT_ARCH "sm_90a"

/* Raised whenever the cache entry layout or the meaning of the key changes. */
#define WEFT_JIT_CACHE_FORMAT 1

/* ---- modules and kernels ---- */

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

/* ---- compile ---- */

/* weft_jit_compile with the failure recorded on comm's last error (comm may be NULL). */
weft_status_t weft_jit_compile_comm(weft_comm_t *comm, const char *source, const char *name,
                                    const char *const *options, int num_options, void **cubin,
                                    size_t *cubin_size, char **log);

/* NVRTC itself, no cache. The effective options (the user's plus weft's defaults) are built by
 * weft_jit_effective_options. On success *log is the (possibly empty, then NULL) compile log;
 * on WEFT_STATUS_COMPILE_ERROR it is NVRTC's log. Both freed with free(). */
weft_status_t weft_nvrtc_compile(weft_comm_t *comm, const char *source, const char *name,
                                 const char *const *options, int num_options, void **cubin,
                                 size_t *cubin_size, char **log);

/* NVRTC's version as major * 1000 + minor * 10 (the CUDA_VERSION convention), or -1. */
int weft_nvrtc_version(void);

/* A string that changes whenever the NVRTC library does (version, file, size, time): part of
 * every cache key. */
const char *weft_nvrtc_identity(void);

/* The options NVRTC receives: the user's, in order, followed by weft's defaults for what the
 * user did not set (architecture, C++ standard) and -DWEFT_NVRTC=1. *out is a malloc'ed array
 * of borrowed strings (free only the array). *arch is the architecture ("sm_90a"), pointing into
 * the options or at a static string. INVALID_ARGUMENT for a virtual architecture (compute_XX:
 * weft loads cubins) or an option that lacks its value. */
weft_status_t weft_jit_effective_options(weft_comm_t *comm, const char *const *options,
                                         int num_options, const char ***out, int *num_out,
                                         const char **arch);

/* ---- cache ---- */

typedef struct weft_jit_cache_stats {
  uint64_t hits;     /* entries found and valid */
  uint64_t misses;   /* no entry, or a corrupt one */
  uint64_t corrupt;  /* entries rejected as short or damaged (also counted as misses) */
  uint64_t writes;   /* entries written */
  uint64_t compiles; /* NVRTC compiles run (cache off or miss) */
} weft_jit_cache_stats_t;

/* Process-wide counters since start (or the last reset); for tests and TRACE. */
void weft_jit_cache_stats(weft_jit_cache_stats_t *out);
void weft_jit_cache_stats_reset(void);

/* The cache key of a compile, as 64 hex digits plus NUL. Covers a format version, NVRTC's
 * identity (weft_nvrtc_identity), the architecture, the name, every effective option in order,
 * the source and the contents of every header it reaches through #include (embedded files, -I
 * directories, the directory of the including file). */
weft_status_t weft_jit_cache_key(weft_comm_t *comm, const char *source, const char *name,
                                 const char *const *options, int num_options, char key[65]);

/* The cache directory in use (WEFT_CACHE_DIR, $XDG_CACHE_HOME/weft, ~/.cache/weft) into buf;
 * false when the cache is off (WEFT_CACHE_DISABLE=1, or no directory can be named). */
bool weft_jit_cache_dir(char *buf, size_t size);

/* mkdir -p that tolerates ranks racing to create the same directories. */
bool weft_jit_cache_make_dirs(const char *path);

/* ---- autotune (autotune.c) ---- */

/* Enqueues the op as candidate `candidate` on stream (ctx: the op's arguments). */
typedef weft_status_t (*weft_autotune_run_t)(weft_comm_t *comm, const void *ctx, int candidate,
                                             CUstream stream);

/* The distributed autotuner: the index of the fastest of the candidates names[0..n) (or of an
 * earlier one within 3% of it: weft_autotune_pick) for the op `key` names (op, shapes, dtypes,
 * layout; world size, GPU and version are added), in *best, the same on every rank; -1 when no
 * decision can be made now (a rank is capturing a graph: the caller takes its heuristic).
 * Collective over the world, like the op. Decided once per key and process: the process's table,
 * else an agreed disk entry (<cache dir>/autotune), else timed trials of every candidate on the
 * caller's buffers (autotune.c). */
weft_status_t weft_autotune(weft_comm_t *comm, const char *key, const char *const *names, int n,
                            weft_autotune_run_t run, const void *ctx, CUstream stream, int *best);

/* Frees the table (weft_comm_destroy). */
void weft_autotune_forget(weft_comm_t *comm);

/* The winner among n >= 1 candidates' times (the slowest rank's each): the earliest within 3% of
 * the fastest (autotune.c, step 3: short trials do not order plans that close). */
int weft_autotune_pick(const double *times, int n);

/* The disk entries (<cache dir>/autotune/<sha256 of key>.txt; nothing when the cache is off):
 * the index in names[0..n) of the candidate the entry of `key` names, or -1 (no entry, an entry
 * of another key, a damaged one, a name not among them); writing replaces the entry atomically
 * (a temporary file renamed). key is the full key (weft_autotune adds world, GPU, version). */
int weft_autotune_entry_read(const char *key, const char *const *names, int n);
void weft_autotune_entry_write(const char *key, const char *name);

/* ---- SHA-256 (FIPS 180-4), for cache keys and entry checksums ---- */

typedef struct weft_sha256 {
  uint32_t h[8];
  uint64_t length; /* bytes hashed so far */
  uint8_t block[64];
  size_t fill;
} weft_sha256_t;

void weft_sha256_init(weft_sha256_t *s);
void weft_sha256_update(weft_sha256_t *s, const void *data, size_t size);
void weft_sha256_final(weft_sha256_t *s, uint8_t digest[32]);
/* One-shot digest as 64 lowercase hex digits plus NUL. */
void weft_sha256_hex(const void *data, size_t size, char hex[65]);

#endif /* WEFT_JIT_H */
