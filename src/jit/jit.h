/*
 * jit.h — the JIT's internal interface: NVRTC compile (nvrtc.c), the disk cache in front of it
 * (cache.c) and the sources embedded in libweft (embedded.c). The JIT knows no communicator and
 * no GPU: it turns source + name + options into cubin bytes (+ NVRTC's log), and records
 * failures as the calling thread's last error. Loading a cubin on a GPU is the runtime's
 * (src/runtime/module.h).
 *
 * Device-library convention that NVRTC imposes: in-memory headers are found by the exact name
 * they were registered under, with no directory-relative resolution, so the device library
 * includes its own files by their full name ("weft/state.h", never "state.h").
 */
#ifndef WEFT_JIT_H
#define WEFT_JIT_H

#include <stdint.h>

#include "../internal.h"

/* Architecture used when the options name none: wgmma and setmaxnreg need the "a" variant. */
#define WEFT_JIT_DEFAULT_ARCH "sm_90a"

/* Raised whenever the cache entry layout or the meaning of the key changes. */
#define WEFT_JIT_CACHE_FORMAT 1

/* ---- compile ---- */

/* NVRTC itself, no cache. The effective options (the user's plus weft's defaults) are built by
 * weft_jit_effective_options. On success *log is the (possibly empty, then NULL) compile log;
 * on WEFT_STATUS_COMPILE_ERROR it is NVRTC's log. Both freed with free(). */
weft_status_t weft_nvrtc_compile(const char *source, const char *name, const char *const *options,
                                 int num_options, void **cubin, size_t *cubin_size, char **log);

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
weft_status_t weft_jit_effective_options(const char *const *options, int num_options,
                                         const char ***out, int *num_out, const char **arch);

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
weft_status_t weft_jit_cache_key(const char *source, const char *name, const char *const *options,
                                 int num_options, char key[65]);

/* The cache directory in use (WEFT_CACHE_DIR, $XDG_CACHE_HOME/weft, ~/.cache/weft) into buf;
 * false when the cache is off (WEFT_CACHE_DISABLE=1, or no directory can be named). */
bool weft_jit_cache_dir(char *buf, size_t size);

/* mkdir -p that tolerates ranks racing to create the same directories. */
bool weft_jit_cache_make_dirs(const char *path);

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
