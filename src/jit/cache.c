/*
 * cache.c — the JIT's public compile entry (weft_jit_compile) and the disk cache in front of
 * NVRTC, plus the SHA-256 the key is made with.
 *
 * Key: SHA-256 over a format version, NVRTC's version and library file, the architecture, the
 * program name, every effective option in order, the source, and the identity and contents of
 * every header the program reaches through #include (found by a recursive scan that resolves
 * names against the embedded files, the -I directories of the options and the including file's
 * directory; a name that resolves nowhere contributes just the name).
 *
 * Entry: <dir>/<key>.cubin =
 *   "WEFTJIT1" | u64 cubin_size | u64 log_size | SHA-256(cubin || log) | cubin | log
 * written to a temporary file in the same directory and renamed into place, so ranks compiling
 * the same program at once never read a torn entry; an entry that is short or fails its
 * checksum is a miss and gets rewritten.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "embedded.h"
#include "jit.h"

/* ------------------------------------------------------------------------------------------ */
/* SHA-256 (FIPS 180-4)                                                                        */
/* ------------------------------------------------------------------------------------------ */

static const uint32_t sha256_k[64] = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4,
    0xab1c5ed5, 0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe,
    0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f,
    0x4a7484aa, 0x5cb0a9dc, 0x76f988da, 0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7,
    0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967, 0x27b70a85, 0x2e1b2138, 0x4d2c6dfc,
    0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85, 0xa2bfe8a1, 0xa81a664b,
    0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070, 0x19a4c116,
    0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7,
    0xc67178f2};

static inline uint32_t rotr32(uint32_t x, int n) { return (x >> n) | (x << (32 - n)); }

static void sha256_block(uint32_t h[8], const uint8_t *p) {
  uint32_t w[64];
  for (int i = 0; i < 16; i++)
    w[i] = (uint32_t)p[4 * i] << 24 | (uint32_t)p[4 * i + 1] << 16 | (uint32_t)p[4 * i + 2] << 8 |
           (uint32_t)p[4 * i + 3];
  for (int i = 16; i < 64; i++) {
    uint32_t s0 = rotr32(w[i - 15], 7) ^ rotr32(w[i - 15], 18) ^ (w[i - 15] >> 3);
    uint32_t s1 = rotr32(w[i - 2], 17) ^ rotr32(w[i - 2], 19) ^ (w[i - 2] >> 10);
    w[i] = w[i - 16] + s0 + w[i - 7] + s1;
  }
  uint32_t a = h[0], b = h[1], c = h[2], d = h[3], e = h[4], f = h[5], g = h[6], hh = h[7];
  for (int i = 0; i < 64; i++) {
    uint32_t S1 = rotr32(e, 6) ^ rotr32(e, 11) ^ rotr32(e, 25);
    uint32_t ch = (e & f) ^ (~e & g);
    uint32_t t1 = hh + S1 + ch + sha256_k[i] + w[i];
    uint32_t S0 = rotr32(a, 2) ^ rotr32(a, 13) ^ rotr32(a, 22);
    uint32_t maj = (a & b) ^ (a & c) ^ (b & c);
    uint32_t t2 = S0 + maj;
    hh = g;
    g = f;
    f = e;
    e = d + t1;
    d = c;
    c = b;
    b = a;
    a = t1 + t2;
  }
  h[0] += a; h[1] += b; h[2] += c; h[3] += d;
  h[4] += e; h[5] += f; h[6] += g; h[7] += hh;
}

void weft_sha256_init(weft_sha256_t *s) {
  static const uint32_t iv[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
                                 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
  memcpy(s->h, iv, sizeof iv);
  s->length = 0;
  s->fill = 0;
}

void weft_sha256_update(weft_sha256_t *s, const void *data, size_t size) {
  const uint8_t *p = data;
  s->length += size;
  if (s->fill) {
    size_t take = 64 - s->fill < size ? 64 - s->fill : size;
    memcpy(s->block + s->fill, p, take);
    s->fill += take;
    p += take;
    size -= take;
    if (s->fill < 64) return;
    sha256_block(s->h, s->block);
    s->fill = 0;
  }
  for (; size >= 64; p += 64, size -= 64) sha256_block(s->h, p);
  memcpy(s->block, p, size);
  s->fill = size;
}

void weft_sha256_final(weft_sha256_t *s, uint8_t digest[32]) {
  uint64_t bits = s->length * 8;
  uint8_t pad[72] = {0x80};
  size_t npad = (s->fill < 56 ? 56 : 120) - s->fill;
  for (int i = 0; i < 8; i++) pad[npad + i] = (uint8_t)(bits >> (56 - 8 * i));
  weft_sha256_update(s, pad, npad + 8);
  for (int i = 0; i < 8; i++) {
    digest[4 * i] = (uint8_t)(s->h[i] >> 24);
    digest[4 * i + 1] = (uint8_t)(s->h[i] >> 16);
    digest[4 * i + 2] = (uint8_t)(s->h[i] >> 8);
    digest[4 * i + 3] = (uint8_t)s->h[i];
  }
}

static void to_hex(const uint8_t digest[32], char hex[65]) {
  static const char digits[] = "0123456789abcdef";
  for (int i = 0; i < 32; i++) {
    hex[2 * i] = digits[digest[i] >> 4];
    hex[2 * i + 1] = digits[digest[i] & 15];
  }
  hex[64] = 0;
}

void weft_sha256_hex(const void *data, size_t size, char hex[65]) {
  weft_sha256_t s;
  uint8_t d[32];
  weft_sha256_init(&s);
  weft_sha256_update(&s, data, size);
  weft_sha256_final(&s, d);
  to_hex(d, hex);
}

/* A field of the key: length first, so that no two different field lists hash alike. */
static void hash_field(weft_sha256_t *s, const void *data, size_t size) {
  uint64_t n = size;
  weft_sha256_update(s, &n, sizeof n);
  weft_sha256_update(s, data, size);
}

static void hash_str(weft_sha256_t *s, const char *str) { hash_field(s, str, strlen(str)); }

/* ------------------------------------------------------------------------------------------ */
/* Counters                                                                                    */
/* ------------------------------------------------------------------------------------------ */

static weft_jit_cache_stats_t stats;

#define STAT_ADD(field) __atomic_fetch_add(&stats.field, 1, __ATOMIC_RELAXED)

void weft_jit_cache_stats(weft_jit_cache_stats_t *out) {
  out->hits = __atomic_load_n(&stats.hits, __ATOMIC_RELAXED);
  out->misses = __atomic_load_n(&stats.misses, __ATOMIC_RELAXED);
  out->corrupt = __atomic_load_n(&stats.corrupt, __ATOMIC_RELAXED);
  out->writes = __atomic_load_n(&stats.writes, __ATOMIC_RELAXED);
  out->compiles = __atomic_load_n(&stats.compiles, __ATOMIC_RELAXED);
}

void weft_jit_cache_stats_reset(void) {
  __atomic_store_n(&stats.hits, 0, __ATOMIC_RELAXED);
  __atomic_store_n(&stats.misses, 0, __ATOMIC_RELAXED);
  __atomic_store_n(&stats.corrupt, 0, __ATOMIC_RELAXED);
  __atomic_store_n(&stats.writes, 0, __ATOMIC_RELAXED);
  __atomic_store_n(&stats.compiles, 0, __ATOMIC_RELAXED);
}

/* ------------------------------------------------------------------------------------------ */
/* The #include scan                                                                           */
/* ------------------------------------------------------------------------------------------ */

/* Whole file into a NUL-terminated buffer; NULL when it is not a readable regular file. */
static char *read_file(const char *path, size_t *size) {
  struct stat sb;
  if (stat(path, &sb) != 0 || !S_ISREG(sb.st_mode)) return NULL;
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  size_t cap = (size_t)sb.st_size + 1, n = 0;
  char *buf = malloc(cap);
  while (buf) {
    n += fread(buf + n, 1, cap - 1 - n, f);
    if (n < cap - 1 || feof(f)) break;
    /* The file grew since stat: keep reading. */
    char *bigger = realloc(buf, cap * 2);
    if (!bigger) {
      free(buf);
      buf = NULL;
      break;
    }
    buf = bigger;
    cap *= 2;
  }
  bool failed = ferror(f);
  fclose(f);
  if (!buf || failed) {
    free(buf);
    return NULL;
  }
  buf[n] = 0;
  *size = n;
  return buf;
}

typedef struct scan {
  weft_sha256_t *sha;
  const char **include_dirs; /* from -I / --include-path */
  int num_dirs;
  char **visited; /* "e:<embedded name>" / "d:<path>" */
  int num_visited, cap_visited;
  bool all_embedded;  /* a computed #include was seen: hash every embedded file */
  bool out_of_memory;
} scan_t;

static bool visit(scan_t *sc, const char *kind, const char *id) {
  for (int i = 0; i < sc->num_visited; i++)
    if (sc->visited[i][0] == kind[0] && !strcmp(sc->visited[i] + 2, id)) return false;
  if (sc->num_visited == sc->cap_visited) {
    int cap = sc->cap_visited ? 2 * sc->cap_visited : 32;
    char **v = realloc(sc->visited, sizeof *v * (size_t)cap);
    if (!v) {
      sc->out_of_memory = true;
      return false;
    }
    sc->visited = v;
    sc->cap_visited = cap;
  }
  size_t len = strlen(id) + 3;
  char *s = malloc(len);
  if (!s) {
    sc->out_of_memory = true;
    return false;
  }
  snprintf(s, len, "%c:%s", kind[0], id);
  sc->visited[sc->num_visited++] = s;
  return true;
}

static void scan_text(scan_t *sc, const char *text, const char *dir, int depth);

/* A header, found in memory or on disk: its identity and contents enter the key, then its own
 * includes. dir is where its "" includes are looked for first (NULL for embedded files: NVRTC
 * matches in-memory headers by exact name only). */
static void scan_header(scan_t *sc, const char *kind, const char *id, const char *text,
                        size_t size, const char *dir, int depth) {
  if (!visit(sc, kind, id)) return;
  hash_str(sc->sha, kind);
  hash_str(sc->sha, id);
  hash_field(sc->sha, text, size);
  scan_text(sc, text, dir, depth + 1);
}

static void scan_disk(scan_t *sc, const char *path, int depth) {
  size_t size = 0;
  char *text = read_file(path, &size);
  if (!text) return;
  char dir[4096];
  snprintf(dir, sizeof dir, "%s", path);
  char *slash = strrchr(dir, '/');
  if (slash)
    *slash = 0;
  else
    snprintf(dir, sizeof dir, ".");
  scan_header(sc, "d", path, text, size, dir, depth);
  free(text);
}

/* Every place the name could come from is hashed (not only the one the compiler will pick):
 * the key then changes whenever any candidate changes, which can only cost a spurious miss. */
static void resolve(scan_t *sc, const char *name, const char *dir, int depth) {
  bool found = false;
  char path[4096];
  const weft_embedded_file_t *e = weft_embedded_find(name);
  if (e) {
    found = true;
    scan_header(sc, "e", e->name, e->data, e->size, NULL, depth);
  }
  if (name[0] == '/') {
    if (access(name, R_OK) == 0) found = true;
    scan_disk(sc, name, depth);
  } else {
    if (dir) {
      snprintf(path, sizeof path, "%s/%s", dir, name);
      if (access(path, R_OK) == 0) found = true;
      scan_disk(sc, path, depth);
    }
    for (int i = 0; i < sc->num_dirs; i++) {
      snprintf(path, sizeof path, "%s/%s", sc->include_dirs[i], name);
      if (access(path, R_OK) == 0) found = true;
      scan_disk(sc, path, depth);
    }
  }
  if (!found) {
    /* A system header (not allowed in kernels) or NVRTC's own builtins (covered by its
     * version): the name alone. */
    hash_str(sc->sha, "unresolved");
    hash_str(sc->sha, name);
  }
}

/* Finds `# include "x"` / `# include <x>` at the start of each line. Conditionals are not
 * evaluated (every branch's headers count), and comments are not stripped: both can only add
 * headers to the key, never lose one. */
static void scan_text(scan_t *sc, const char *text, const char *dir, int depth) {
  if (depth > 64 || sc->out_of_memory) return;
  for (const char *p = text; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL) {
    const char *q = p;
    while (*q == ' ' || *q == '\t') q++;
    if (*q != '#') continue;
    q++;
    while (*q == ' ' || *q == '\t') q++;
    if (strncmp(q, "include", 7) != 0) continue;
    q += 7;
    if (!strncmp(q, "_next", 5)) q += 5;
    while (*q == ' ' || *q == '\t') q++;
    char close = *q == '"' ? '"' : *q == '<' ? '>' : 0;
    if (!close) {
      /* #include MACRO: its target is unknown without preprocessing. */
      sc->all_embedded = true;
      continue;
    }
    q++;
    size_t len = 0;
    while (q[len] && q[len] != close && q[len] != '\n') len++;
    if (q[len] != close || len == 0 || len >= 1024) continue;
    char name[1024];
    memcpy(name, q, len);
    name[len] = 0;
    resolve(sc, name, close == '"' ? dir : NULL, depth);
  }
}

/* ------------------------------------------------------------------------------------------ */
/* Key                                                                                         */
/* ------------------------------------------------------------------------------------------ */

/* The value of an option that carries a path, in either NVRTC form ("-Idir" / "-I" "dir"). */
static const char *path_option(const char *const *opts, int n, int *i, const char *short_flag,
                               const char *long_flag) {
  const char *o = opts[*i];
  size_t ls = strlen(short_flag), ll = strlen(long_flag);
  if (!strncmp(o, long_flag, ll) && o[ll] == '=') return o + ll + 1;
  if (!strcmp(o, long_flag) || !strcmp(o, short_flag)) {
    if (*i + 1 >= n) return NULL;
    return opts[++*i];
  }
  if (!strncmp(o, short_flag, ls) && o[ls]) return o + ls + (o[ls] == '=');
  return NULL;
}

weft_status_t weft_jit_cache_key(const char *source, const char *name,
                                 const char *const *options, int num_options, char key[65]) {
  const char **opts;
  int nopts;
  const char *arch;
  WEFT_CHECK(weft_jit_effective_options(options, num_options, &opts, &nopts, &arch));

  weft_sha256_t sha;
  weft_sha256_init(&sha);
  char buf[64];
  snprintf(buf, sizeof buf, "weft-jit-cache %d", WEFT_JIT_CACHE_FORMAT);
  hash_str(&sha, buf);
  hash_str(&sha, weft_nvrtc_identity());
  hash_str(&sha, arch);
  hash_str(&sha, name);
  snprintf(buf, sizeof buf, "%d options", nopts);
  hash_str(&sha, buf);
  for (int i = 0; i < nopts; i++) hash_str(&sha, opts[i]);
  hash_str(&sha, source);

  scan_t sc = {.sha = &sha};
  weft_status_t st = WEFT_STATUS_SUCCESS;
  const char **dirs = malloc(sizeof *dirs * (size_t)(nopts + 1));
  const char **pre = malloc(sizeof *pre * (size_t)(nopts + 1));
  int npre = 0;
  if (!dirs || !pre) {
    st = WEFT_ERR(NULL, WEFT_STATUS_OUT_OF_MEMORY, "no memory for the cache key");
    goto done;
  }
  for (int i = 0; i < nopts; i++) {
    const char *v;
    if ((v = path_option(opts, nopts, &i, "-I", "--include-path")))
      dirs[sc.num_dirs++] = v;
    else if ((v = path_option(opts, nopts, &i, "-include", "--pre-include")))
      pre[npre++] = v;
  }
  sc.include_dirs = dirs;
  /* NVRTC names "" includes of the main source relative to the directory of its name. */
  char dir[4096];
  snprintf(dir, sizeof dir, "%s", name);
  char *slash = strrchr(dir, '/');
  if (slash)
    *slash = 0;
  else
    snprintf(dir, sizeof dir, ".");
  for (int i = 0; i < npre; i++) resolve(&sc, pre[i], dir, 0);
  scan_text(&sc, source, dir, 0);
  if (sc.all_embedded)
    for (int i = 0; i < weft_embedded_count; i++)
      scan_header(&sc, "e", weft_embedded_files[i].name, weft_embedded_files[i].data,
                  weft_embedded_files[i].size, NULL, 0);
  if (sc.out_of_memory) {
    st = WEFT_ERR(NULL, WEFT_STATUS_OUT_OF_MEMORY, "no memory for the include scan");
    goto done;
  }
  uint8_t digest[32];
  weft_sha256_final(&sha, digest);
  to_hex(digest, key);

done:
  for (int i = 0; i < sc.num_visited; i++) free(sc.visited[i]);
  free(sc.visited);
  free(dirs);
  free(pre);
  free(opts);
  return st;
}

/* ------------------------------------------------------------------------------------------ */
/* Directory and entries                                                                       */
/* ------------------------------------------------------------------------------------------ */

static bool env_true(const char *name) {
  const char *v = getenv(name);
  return v && *v && strcmp(v, "0") != 0;
}

bool weft_jit_cache_dir(char *buf, size_t size) {
  if (env_true("WEFT_CACHE_DISABLE")) return false;
  const char *v = getenv("WEFT_CACHE_DIR");
  int n;
  if (v && *v)
    n = snprintf(buf, size, "%s", v);
  else if ((v = getenv("XDG_CACHE_HOME")) && *v)
    n = snprintf(buf, size, "%s/weft", v);
  else if ((v = getenv("HOME")) && *v)
    n = snprintf(buf, size, "%s/.cache/weft", v);
  else
    return false;
  return n > 0 && (size_t)n < size;
}

/* mkdir -p: ranks race to create it, so an existing directory is success. A parent we may not
 * write (/home, a read-only mount) can fail with EACCES or EROFS rather than EEXIST even though
 * it exists, so only a component that is still not a directory stops the walk. */
bool weft_jit_cache_make_dirs(const char *path) {
  char tmp[4096];
  struct stat sb;
  if (snprintf(tmp, sizeof tmp, "%s", path) >= (int)sizeof tmp) return false;
  for (char *p = tmp + 1;; p++) {
    if (*p != '/' && *p != 0) continue;
    char c = *p;
    *p = 0;
    if (mkdir(tmp, 0755) != 0 && errno != EEXIST) {
      int saved = errno;
      if (stat(tmp, &sb) != 0 || !S_ISDIR(sb.st_mode)) {
        errno = saved;
        return false;
      }
    }
    *p = c;
    if (!c) break;
  }
  if (stat(path, &sb) == 0 && S_ISDIR(sb.st_mode)) return true;
  errno = ENOTDIR;
  return false;
}

#define ENTRY_MAGIC "WEFTJIT1"
#define ENTRY_HEADER (8 + 8 + 8 + 32)

static void entry_digest(const void *cubin, size_t cubin_size, const char *log, size_t log_size,
                         uint8_t digest[32]) {
  weft_sha256_t s;
  weft_sha256_init(&s);
  weft_sha256_update(&s, cubin, cubin_size);
  weft_sha256_update(&s, log, log_size);
  weft_sha256_final(&s, digest);
}

/* 1: hit (outputs set), 0: no entry, -1: a damaged entry. */
static int entry_read(const char *path, void **cubin, size_t *cubin_size, char **log) {
  size_t size = 0;
  char *data = read_file(path, &size);
  if (!data) return 0;
  int result = -1;
  uint64_t nc, nl;
  uint8_t digest[32];
  if (size < ENTRY_HEADER || memcmp(data, ENTRY_MAGIC, 8) != 0) goto done;
  memcpy(&nc, data + 8, 8);
  memcpy(&nl, data + 16, 8);
  if (nc == 0 || nc > size || nl > size || ENTRY_HEADER + nc + nl != size) goto done;
  entry_digest(data + ENTRY_HEADER, nc, data + ENTRY_HEADER + nc, nl, digest);
  if (memcmp(digest, data + 24, 32) != 0) goto done;
  void *c = malloc(nc);
  char *l = nl ? malloc(nl + 1) : NULL;
  if (!c || (nl && !l)) {
    free(c);
    free(l);
    result = 0; /* no memory now: compile instead, the entry is fine */
    goto done;
  }
  memcpy(c, data + ENTRY_HEADER, nc);
  if (l) {
    memcpy(l, data + ENTRY_HEADER + nc, nl);
    l[nl] = 0;
  }
  *cubin = c;
  *cubin_size = nc;
  *log = l;
  result = 1;
done:
  free(data);
  return result;
}

static bool write_all(int fd, const void *data, size_t size) {
  const char *p = data;
  while (size) {
    ssize_t w = write(fd, p, size);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    p += w;
    size -= (size_t)w;
  }
  return true;
}

/* A failed write costs a later recompile, never this compile: warn and go on. */
static void entry_write(const char *dir, const char *path, const void *cubin, size_t cubin_size,
                        const char *log) {
  if (!weft_jit_cache_make_dirs(dir)) {
    /* Once per process: every compile would repeat it. */
    static int warned;
    if (!__atomic_exchange_n(&warned, 1, __ATOMIC_RELAXED))
      WEFT_WARN("jit: cache directory %s cannot be created (%s); compiling without a cache",
                dir, strerror(errno));
    return;
  }
  char tmp[4300];
  snprintf(tmp, sizeof tmp, "%s.tmp.XXXXXX", path);
  int fd = mkstemp(tmp);
  if (fd < 0) {
    WEFT_WARN("jit: cannot create %s: %s", tmp, strerror(errno));
    return;
  }
  size_t nl = log ? strlen(log) : 0;
  uint64_t nc64 = cubin_size, nl64 = nl;
  uint8_t header[ENTRY_HEADER];
  memcpy(header, ENTRY_MAGIC, 8);
  memcpy(header + 8, &nc64, 8);
  memcpy(header + 16, &nl64, 8);
  entry_digest(cubin, cubin_size, log ? log : "", nl, header + 24);
  /* mkstemp makes 0600; cubins are not secret and a shared cache should stay readable. */
  bool ok = fchmod(fd, 0644) == 0 && write_all(fd, header, sizeof header) &&
            write_all(fd, cubin, cubin_size) && write_all(fd, log ? log : "", nl);
  int saved = errno;
  if (close(fd) != 0 && ok) {
    ok = false;
    saved = errno;
  }
  if (ok && rename(tmp, path) != 0) {
    ok = false;
    saved = errno;
  }
  if (!ok) {
    WEFT_WARN("jit: cache entry %s not written: %s", path, strerror(saved));
    if (unlink(tmp) != 0 && errno != ENOENT) WEFT_WARN("jit: cannot remove %s", tmp);
    return;
  }
  STAT_ADD(writes);
}

/* ------------------------------------------------------------------------------------------ */
/* weft_jit_compile                                                                            */
/* ------------------------------------------------------------------------------------------ */

weft_status_t weft_jit_compile(const char *source, const char *name, const char *const *options,
                               int num_options, void **cubin, size_t *cubin_size, char **log) {
  WEFT_ARG(NULL, source, "source is NULL");
  WEFT_ARG(NULL, cubin, "cubin is NULL");
  WEFT_ARG(NULL, cubin_size, "cubin_size is NULL");
  WEFT_ARG(NULL, num_options >= 0, "num_options %d is negative", num_options);
  WEFT_ARG(NULL, options || num_options == 0, "options is NULL but num_options is %d",
           num_options);
  for (int i = 0; i < num_options; i++)
    WEFT_ARG(NULL, options[i], "option %d is NULL", i);
  if (!name || !*name) name = "weft_program.cu";
  /* Rejects bad architectures before the cache is consulted. */
  const char **eff;
  int neff;
  const char *arch;
  WEFT_CHECK(weft_jit_effective_options(options, num_options, &eff, &neff, &arch));
  free(eff);

  *cubin = NULL;
  *cubin_size = 0;
  char *text = NULL;
  if (log) *log = NULL;

  char dir[4096], path[4200], key[65];
  bool cached = weft_jit_cache_dir(dir, sizeof dir);
  if (cached) {
    uint64_t t0 = weft_now_ns();
    WEFT_CHECK(weft_jit_cache_key(source, name, options, num_options, key));
    snprintf(path, sizeof path, "%s/%s.cubin", dir, key);
    int found = entry_read(path, cubin, cubin_size, &text);
    if (found == 1) {
      STAT_ADD(hits);
      WEFT_TRACE("jit: cache hit %s for %s (%zu bytes, %.1f ms)", key, name, *cubin_size,
                 (double)(weft_now_ns() - t0) * 1e-6);
      if (log)
        *log = text;
      else
        free(text);
      return WEFT_STATUS_SUCCESS;
    }
    STAT_ADD(misses);
    if (found < 0) {
      STAT_ADD(corrupt);
      WEFT_INFO("jit: cache entry %s is damaged; recompiling", path);
    }
    WEFT_TRACE("jit: cache miss %s for %s", key, name);
  }

  STAT_ADD(compiles);
  weft_status_t st =
      weft_nvrtc_compile(source, name, options, num_options, cubin, cubin_size, &text);
  if (st == WEFT_STATUS_SUCCESS && cached) entry_write(dir, path, *cubin, *cubin_size, text);
  if (log)
    *log = text;
  else
    free(text);
  return st;
}

void weft_jit_free(void *p) { free(p); }
