/*
 * test_jit_cache.c — the JIT's disk cache and its compile entry, on a machine with no GPU:
 * SHA-256 known answers; miss then hit (same bytes, no new entry); a changed option misses; a user
 * header found through -I (and one it includes) changes the key when edited and hits again when
 * reverted; damaged entries are misses and get rewritten; ranks compiling at once into one
 * cache; the cache switched off; compile errors with their log; bad inputs to compile, load and
 * launch, each rejected before any side effect.
 *
 * The cache lives in a fresh temporary directory (WEFT_CACHE_DIR), removed at the end.
 */
// weft-test: timeout=300
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "jit/jit.h"
#include "runtime/module.h"
#include "runtime/comm.h"
#include "runtime/loader.h"
#include "support.h"

static char cache_dir[512], inc_dir[512], root[256];

/* Entries in the cache directory; leftover temporary files count as failures. */
static int count_entries(void) {
  DIR *d = opendir(cache_dir);
  if (!d) return 0;
  int n = 0;
  for (struct dirent *e; (e = readdir(d));) {
    if (e->d_name[0] == '.') continue;
    if (strstr(e->d_name, ".tmp.")) {
      printf("FAIL temporary file left behind: %s\n", e->d_name);
      test_failures++;
      continue;
    }
    n++;
  }
  closedir(d);
  return n;
}

static void write_text(const char *path, const char *text) {
  FILE *f = fopen(path, "w");
  if (!f || fputs(text, f) < 0 || fclose(f) != 0) {
    printf("FAIL cannot write %s\n", path);
    exit(1);
  }
}

typedef struct result {
  weft_status_t status;
  void *cubin;
  size_t size;
  char *log;
  double ms;
  weft_jit_cache_stats_t delta; /* counters moved by this compile */
} result_t;

static result_t compile(const char *src, const char *name, const char *const *opts, int n) {
  result_t r = {0};
  weft_jit_cache_stats_t a, b;
  weft_jit_cache_stats(&a);
  uint64_t t0 = weft_now_ns();
  r.status = weft_jit_compile(src, name, opts, n, &r.cubin, &r.size, &r.log);
  r.ms = (double)(weft_now_ns() - t0) * 1e-6;
  weft_jit_cache_stats(&b);
  r.delta.hits = b.hits - a.hits;
  r.delta.misses = b.misses - a.misses;
  r.delta.corrupt = b.corrupt - a.corrupt;
  r.delta.writes = b.writes - a.writes;
  r.delta.compiles = b.compiles - a.compiles;
  if (r.status != WEFT_STATUS_SUCCESS)
    printf("     compile of %s: %s\n%s\n", name, weft_get_last_error(), r.log ? r.log : "");
  return r;
}

static void release(result_t *r) {
  weft_jit_free(r->cubin);
  weft_jit_free(r->log);
}

static bool is_hit(const result_t *r) {
  return r->status == WEFT_STATUS_SUCCESS && r->delta.hits == 1 && r->delta.compiles == 0;
}
static bool is_miss(const result_t *r) {
  return r->status == WEFT_STATUS_SUCCESS && r->delta.misses == 1 && r->delta.compiles == 1 &&
         r->delta.writes == 1;
}

static void test_sha256(void) {
  char hex[65];
  weft_sha256_hex("", 0, hex);
  EXPECT(!strcmp(hex, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"),
         "sha256(\"\") = %s", hex);
  weft_sha256_hex("abc", 3, hex);
  EXPECT(!strcmp(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"),
         "sha256(\"abc\") = %s", hex);
  const char *two = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
  weft_sha256_hex(two, strlen(two), hex);
  EXPECT(!strcmp(hex, "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"),
         "sha256(448-bit message) = %s", hex);
  /* A million 'a' fed in uneven pieces: exercises the partial-block path of update. */
  char chunk[1024];
  memset(chunk, 'a', sizeof chunk);
  weft_sha256_t s;
  weft_sha256_init(&s);
  size_t left = 1000000;
  for (size_t piece = 1; left; piece = piece % 997 + 13) {
    size_t take = piece < left ? piece : left;
    weft_sha256_update(&s, chunk, take);
    left -= take;
  }
  uint8_t d[32];
  weft_sha256_final(&s, d);
  for (int i = 0; i < 32; i++) snprintf(hex + 2 * i, 3, "%02x", d[i]);
  EXPECT(!strcmp(hex, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0"),
         "sha256(a x 1e6) = %s", hex);
}

static const char *kernel_a =
    "extern \"C\" __global__ void add_one(int *p, int n) {\n"
    "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
    "  if (i < n) p[i] += VALUE;\n"
    "}\n";

static void test_miss_hit_options(void) {
  const char *opts1[] = {"-DVALUE=1"};
  const char *opts2[] = {"-DVALUE=2"};
  int before = count_entries();
  result_t m = compile(kernel_a, "add_one.cu", opts1, 1);
  EXPECT(is_miss(&m) && count_entries() == before + 1,
         "first compile misses and writes an entry (%.1f ms, %zu bytes, %d entries)", m.ms,
         m.size, count_entries());
  result_t h = compile(kernel_a, "add_one.cu", opts1, 1);
  EXPECT(is_hit(&h) && count_entries() == before + 1,
         "same compile hits, no new entry (%.2f ms vs %.1f ms compiling)", h.ms, m.ms);
  EXPECT(h.size == m.size && h.cubin && m.cubin && !memcmp(h.cubin, m.cubin, m.size),
         "the hit returns the same cubin bytes");
  EXPECT(h.ms < m.ms || h.ms < 20.0, "the hit is fast (%.2f ms)", h.ms);
  result_t o = compile(kernel_a, "add_one.cu", opts2, 1);
  EXPECT(is_miss(&o) && count_entries() == before + 2, "another -D value misses");
  EXPECT(o.size != m.size || memcmp(o.cubin, m.cubin, m.size) != 0,
         "and yields a different cubin");
  /* Same options in another order: a different key (the order can matter to NVRTC). */
  const char *opts3[] = {"-DVALUE=1", "-DUNUSED=1"};
  const char *opts4[] = {"-DUNUSED=1", "-DVALUE=1"};
  result_t p = compile(kernel_a, "add_one.cu", opts3, 2);
  result_t q = compile(kernel_a, "add_one.cu", opts4, 2);
  EXPECT(is_miss(&p) && is_miss(&q), "options are keyed in order");
  /* The name is part of the key: it appears in messages and debug info. */
  result_t r = compile(kernel_a, "other.cu", opts1, 1);
  EXPECT(is_miss(&r), "another program name misses");
  /* An explicit architecture equal to the default still keys apart from none given, and a
   * different one compiles for it. */
  const char *opts5[] = {"-DVALUE=1", "--gpu-architecture=sm_80"};
  result_t s = compile(kernel_a, "add_one.cu", opts5, 2);
  EXPECT(is_miss(&s), "another architecture misses");
  release(&m); release(&h); release(&o); release(&p); release(&q); release(&r); release(&s);
}

static void test_user_header(void) {
  char path_user[600], path_nested[600], opt_inc[600];
  snprintf(path_user, sizeof path_user, "%s/user.h", inc_dir);
  snprintf(path_nested, sizeof path_nested, "%s/sub/nested.h", inc_dir);
  char sub[600];
  snprintf(sub, sizeof sub, "%s/sub", inc_dir);
  if (mkdir(sub, 0755) != 0) {
    printf("FAIL mkdir %s\n", sub);
    test_failures++;
    return;
  }
  write_text(path_user, "#pragma once\n#include \"sub/nested.h\"\n#define USER_SCALE 3\n");
  write_text(path_nested, "#pragma once\n#define NESTED_BIAS 7\n");
  snprintf(opt_inc, sizeof opt_inc, "-I%s", inc_dir);
  const char *opts[] = {opt_inc};
  const char *src =
      "#include \"user.h\"\n"
      "extern \"C\" __global__ void scale(int *p) { *p = *p * USER_SCALE + NESTED_BIAS; }\n";

  result_t a = compile(src, "scale.cu", opts, 1);
  EXPECT(is_miss(&a), "program with a user header: first compile misses");
  result_t b = compile(src, "scale.cu", opts, 1);
  EXPECT(is_hit(&b), "compile again: hit");
  /* The two-string form of -I is the same program to NVRTC; it must find the header too. */
  const char *opts_split[] = {"-I", inc_dir};
  result_t c = compile(src, "scale.cu", opts_split, 2);
  EXPECT(c.status == WEFT_STATUS_SUCCESS, "-I as two options compiles");

  write_text(path_user, "#pragma once\n#include \"sub/nested.h\"\n#define USER_SCALE 4\n");
  result_t d = compile(src, "scale.cu", opts, 1);
  EXPECT(is_miss(&d), "edit the header: miss");
  EXPECT(d.size != a.size || memcmp(d.cubin, a.cubin, a.size) != 0, "and a new cubin");
  write_text(path_user, "#pragma once\n#include \"sub/nested.h\"\n#define USER_SCALE 3\n");
  result_t e = compile(src, "scale.cu", opts, 1);
  EXPECT(is_hit(&e) && e.size == a.size && !memcmp(e.cubin, a.cubin, a.size),
         "revert the header: hit, the original cubin");

  /* A header two levels down. */
  write_text(path_nested, "#pragma once\n#define NESTED_BIAS 8\n");
  result_t f = compile(src, "scale.cu", opts, 1);
  EXPECT(is_miss(&f), "edit a header included by the header: miss");
  write_text(path_nested, "#pragma once\n#define NESTED_BIAS 7\n");
  result_t g = compile(src, "scale.cu", opts, 1);
  EXPECT(is_hit(&g), "revert it: hit");

  /* A header that exists nowhere makes the compile fail, and is not cached. */
  const char *missing = "#include \"no_such_header.h\"\nextern \"C\" __global__ void k() {}\n";
  result_t h = compile(missing, "missing.cu", opts, 1);
  EXPECT(h.status == WEFT_STATUS_COMPILE_ERROR && h.delta.writes == 0 && h.log &&
             strstr(h.log, "no_such_header.h"),
         "a missing header: compile error naming it, nothing cached");
  release(&a); release(&b); release(&c); release(&d); release(&e); release(&f); release(&g);
  release(&h);
}

/* The embedded device library as a header: found with no file on disk, and its state block
 * symbol survives as "weft_state" for cuModuleGetGlobal. */
static void test_embedded_state(void) {
  const char *src =
      "#include <weft/state.h>\n"
      "__constant__ weft_device_state_t weft_state;\n"
      "extern \"C\" __global__ void whoami(int *out) { *out = weft_state.rank; }\n";
  result_t r = compile(src, "whoami.cu", NULL, 0);
  bool found = false;
  for (size_t i = 0; r.cubin && i + 11 <= r.size; i++)
    if (!memcmp((char *)r.cubin + i, "weft_state", 11)) found = true;
  EXPECT(r.status == WEFT_STATUS_SUCCESS && found,
         "<weft/state.h> from the embedded table; the cubin has the symbol weft_state");
  release(&r);
}

static void damage(const char *path, bool truncate_it) {
  FILE *f = fopen(path, "r+b");
  if (!f) {
    printf("FAIL cannot open %s\n", path);
    test_failures++;
    return;
  }
  if (truncate_it) {
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    if (ftruncate(fileno(f), n / 2) != 0) test_failures++;
  } else {
    fseek(f, 200, SEEK_SET);
    int c = fgetc(f);
    fseek(f, 200, SEEK_SET);
    fputc(c ^ 0x55, f);
  }
  fclose(f);
}

static void test_corrupt(void) {
  const char *opts[] = {"-DVALUE=5"};
  result_t a = compile(kernel_a, "add_one.cu", opts, 1);
  char key[65], path[1024];
  if (weft_jit_cache_key(kernel_a, "add_one.cu", opts, 1, key) != WEFT_STATUS_SUCCESS) {
    test_failures++;
    return;
  }
  snprintf(path, sizeof path, "%s/%s.cubin", cache_dir, key);
  EXPECT(access(path, R_OK) == 0, "the entry is named by the key: %s.cubin", key);
  for (int mode = 0; mode < 3; mode++) {
    if (mode == 2)
      write_text(path, ""); /* an empty file, as a crashed writer without rename could not
                               leave but a full disk might */
    else
      damage(path, mode == 0);
    result_t b = compile(kernel_a, "add_one.cu", opts, 1);
    EXPECT(is_miss(&b) && b.delta.corrupt == 1 && b.size == a.size &&
               !memcmp(b.cubin, a.cubin, a.size),
           "%s entry is a miss, recompiled",
           mode == 0 ? "a truncated" : mode == 1 ? "a bit-flipped" : "an empty");
    result_t c = compile(kernel_a, "add_one.cu", opts, 1);
    EXPECT(is_hit(&c), "and rewritten: the next compile hits");
    release(&b);
    release(&c);
  }
  release(&a);
}

/* Four processes compile one program into one cache at once, as the ranks of a job do. */
static void test_concurrent(void) {
  const char *opts[] = {"-DVALUE=11"};
  pid_t pids[4];
  for (int i = 0; i < 4; i++) {
    pids[i] = fork();
    if (pids[i] == 0) {
      void *cubin = NULL;
      size_t size = 0;
      for (int rep = 0; rep < 3; rep++) {
        if (weft_jit_compile(kernel_a, "race.cu", opts, 1, &cubin, &size, NULL) !=
            WEFT_STATUS_SUCCESS)
          _exit(1);
        weft_jit_free(cubin);
      }
      _exit(0);
    }
  }
  int ok = 0;
  for (int i = 0; i < 4; i++) {
    int status = 0;
    if (pids[i] > 0 && waitpid(pids[i], &status, 0) == pids[i] && WIFEXITED(status) &&
        WEXITSTATUS(status) == 0)
      ok++;
  }
  result_t r = compile(kernel_a, "race.cu", opts, 1);
  EXPECT(ok == 4 && is_hit(&r), "4 processes compiling at once all succeed; the entry is whole");
  count_entries(); /* reports leftover temporary files */
  release(&r);
}

static void test_disabled(void) {
  setenv("WEFT_CACHE_DISABLE", "1", 1);
  int before = count_entries();
  result_t a = compile(kernel_a, "add_one.cu", (const char *[]){"-DVALUE=1"}, 1);
  EXPECT(a.status == WEFT_STATUS_SUCCESS && a.delta.compiles == 1 && a.delta.hits == 0 &&
             a.delta.writes == 0 && count_entries() == before,
         "WEFT_CACHE_DISABLE=1: compiles, neither reads nor writes the cache");
  unsetenv("WEFT_CACHE_DISABLE");
  release(&a);
}

static void test_compile_error(void) {
  const char *bad =
      "extern \"C\" __global__ void broken(int *p) {\n"
      "  *p = undefined_thing_42;\n"
      "}\n";
  int before = count_entries();
  result_t r = compile(bad, "broken.cu", NULL, 0);
  EXPECT(r.status == WEFT_STATUS_COMPILE_ERROR, "a compile error returns COMPILE_ERROR");
  EXPECT(r.log && strstr(r.log, "broken.cu(2)") && strstr(r.log, "undefined_thing_42"),
         "the log has the error line: %s", r.log ? strtok(r.log, "\n") : "(no log)");
  EXPECT(strstr(weft_get_last_error(), "undefined_thing_42") != NULL,
         "the last-error text has its short form");
  EXPECT(r.delta.writes == 0 && count_entries() == before, "errors are not cached");
  release(&r);
  /* An option NVRTC rejects: an error with a log even when NVRTC gives none. */
  result_t o = compile(kernel_a, "add_one.cu", (const char *[]){"--no-such-option"}, 1);
  EXPECT(o.status == WEFT_STATUS_COMPILE_ERROR && o.log && *o.log,
         "an unknown option: COMPILE_ERROR with a log");
  release(&o);
}

static void test_bad_inputs(void) {
  void *cubin = NULL;
  size_t size = 0;
  const char *null_opt[] = {"-DVALUE=1", NULL};
  int before = count_entries();
  EXPECT_STATUS("compile(NULL source)",
                weft_jit_compile(NULL, "x.cu", NULL, 0, &cubin, &size, NULL),
                WEFT_STATUS_INVALID_ARGUMENT);
  EXPECT_STATUS("compile(NULL cubin)",
                weft_jit_compile(kernel_a, "x.cu", NULL, 0, NULL, &size, NULL),
                WEFT_STATUS_INVALID_ARGUMENT);
  EXPECT_STATUS("compile(NULL cubin_size)",
                weft_jit_compile(kernel_a, "x.cu", NULL, 0, &cubin, NULL, NULL),
                WEFT_STATUS_INVALID_ARGUMENT);
  EXPECT_STATUS("compile(num_options -1)",
                weft_jit_compile(kernel_a, "x.cu", null_opt, -1, &cubin, &size, NULL),
                WEFT_STATUS_INVALID_ARGUMENT);
  EXPECT_STATUS("compile(NULL option entry)",
                weft_jit_compile(kernel_a, "x.cu", null_opt, 2, &cubin, &size, NULL),
                WEFT_STATUS_INVALID_ARGUMENT);
  EXPECT_STATUS("compile(NULL options, 1)",
                weft_jit_compile(kernel_a, "x.cu", NULL, 1, &cubin, &size, NULL),
                WEFT_STATUS_INVALID_ARGUMENT);
  EXPECT_STATUS("compile(-arch=compute_90a)",
                weft_jit_compile(kernel_a, "x.cu", (const char *[]){"-arch=compute_90a"}, 1,
                                 &cubin, &size, NULL),
                WEFT_STATUS_INVALID_ARGUMENT);
  EXPECT_STATUS("compile(-arch without value)",
                weft_jit_compile(kernel_a, "x.cu", (const char *[]){"-arch"}, 1, &cubin, &size,
                                 NULL),
                WEFT_STATUS_INVALID_ARGUMENT);
  EXPECT(cubin == NULL && count_entries() == before, "no output and no entry after bad inputs");

  weft_module_t *mod = NULL;
  weft_kernel_t *k = NULL;
  EXPECT_STATUS("module_load(NULL comm)", weft_module_load(NULL, kernel_a, "x.cu", NULL, 0, &mod),
                WEFT_STATUS_INVALID_ARGUMENT);
  EXPECT_STATUS("module_unload(NULL)", weft_module_unload(NULL), WEFT_STATUS_INVALID_ARGUMENT);
  EXPECT_STATUS("module_get_kernel(NULL module)", weft_module_get_kernel(NULL, "k", &k),
                WEFT_STATUS_INVALID_ARGUMENT);

  /* A communicator and a kernel built by hand (no GPU here): launch checks run before the
   * driver is touched, and a load needs the driver. */
  weft_comm_t *comm = calloc(1, sizeof *comm);
  struct weft_module *m = calloc(1, sizeof *m);
  struct weft_kernel *kern = calloc(1, sizeof *kern);
  pthread_mutex_init(&comm->error_lock, NULL);
  pthread_mutex_init(&m->lock, NULL);
  m->comm = comm;
  m->name = (char *)"fake.cu";
  kern->module = m;
  kern->name = (char *)"fake";
  EXPECT_STATUS("module_load(NULL source)", weft_module_load(comm, NULL, "x.cu", NULL, 0, &mod),
                WEFT_STATUS_INVALID_ARGUMENT);
  EXPECT_STATUS("module_load(NULL module)", weft_module_load(comm, kernel_a, "x.cu", NULL, 0, NULL),
                WEFT_STATUS_INVALID_ARGUMENT);
  EXPECT_STATUS("module_load(num_options -1)",
                weft_module_load(comm, kernel_a, "x.cu", NULL, -1, &mod),
                WEFT_STATUS_INVALID_ARGUMENT);
  EXPECT_STATUS("module_get_kernel(NULL name)", weft_module_get_kernel(m, NULL, &k),
                WEFT_STATUS_INVALID_ARGUMENT);
  EXPECT_STATUS("module_get_kernel(NULL out)", weft_module_get_kernel(m, "k", NULL),
                WEFT_STATUS_INVALID_ARGUMENT);

  weft_launch_config_t good = WEFT_LAUNCH_CONFIG_INIT;
  EXPECT_STATUS("launch(NULL kernel)", weft_kernel_launch(NULL, &good, NULL, NULL),
                WEFT_STATUS_INVALID_ARGUMENT);
  EXPECT_STATUS("launch(NULL config)", weft_kernel_launch(kern, NULL, NULL, NULL),
                WEFT_STATUS_INVALID_ARGUMENT);
  struct {
    const char *what;
    weft_launch_config_t c;
  } bad[] = {
      {"launch(grid.x 0)", {{0, 1, 1}, {1, 1, 1}, {0, 0, 0}, 0, 0, 0}},
      {"launch(grid.z 0)", {{1, 1, 0}, {1, 1, 1}, {0, 0, 0}, 0, 0, 0}},
      {"launch(grid.y 65536)", {{1, 65536, 1}, {1, 1, 1}, {0, 0, 0}, 0, 0, 0}},
      {"launch(block.y 0)", {{1, 1, 1}, {1, 0, 1}, {0, 0, 0}, 0, 0, 0}},
      {"launch(block 1025 threads)", {{1, 1, 1}, {1025, 1, 1}, {0, 0, 0}, 0, 0, 0}},
      {"launch(block 64x32 threads)", {{1, 1, 1}, {64, 32, 1}, {0, 0, 0}, 0, 0, 0}},
      {"launch(block.z 65)", {{1, 1, 1}, {1, 1, 65}, {0, 0, 0}, 0, 0, 0}},
      {"launch(cluster {2,0,0})", {{2, 1, 1}, {32, 1, 1}, {2, 0, 0}, 0, 0, 0}},
      {"launch(cluster 2 on grid 3)", {{3, 1, 1}, {32, 1, 1}, {2, 1, 1}, 0, 0, 0}},
      {"launch(cluster.y 2 on grid.y 1)", {{4, 1, 1}, {32, 1, 1}, {1, 2, 1}, 0, 0, 0}},
  };
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
    EXPECT_STATUS(bad[i].what, weft_kernel_launch(kern, &bad[i].c, NULL, NULL),
                  WEFT_STATUS_INVALID_ARGUMENT);
  EXPECT(kern->max_dynamic_smem == 0 && kern->non_portable_cluster == 0,
         "no function attribute was touched by a rejected launch");

  /* Without a driver a load says so, after its arguments passed and before compiling. */
  if (weft_cu_load(NULL, NULL) != WEFT_STATUS_SUCCESS) {
    weft_jit_cache_stats_t a, b;
    weft_jit_cache_stats(&a);
    EXPECT_STATUS("module_load without a driver",
                  weft_module_load(comm, kernel_a, "x.cu", (const char *[]){"-DVALUE=1"}, 1, &mod),
                  WEFT_STATUS_NO_DEVICE);
    weft_jit_cache_stats(&b);
    EXPECT(b.compiles == a.compiles, "and it did not compile");
    EXPECT_STATUS("module_load_embedded without a driver",
                  weft_module_load_embedded(comm, "weft/state.h", NULL, 0, &mod),
                  WEFT_STATUS_NO_DEVICE);
  } else {
    printf("skip module_load without a driver (a driver is present)\n");
  }
  EXPECT_STATUS("module_load_embedded(not embedded)",
                weft_module_load_embedded(comm, "kernels/no_such.cu", NULL, 0, &mod),
                WEFT_STATUS_INTERNAL_ERROR);
  pthread_mutex_destroy(&m->lock);
  pthread_mutex_destroy(&comm->error_lock);
  free(kern);
  free(m);
  free(comm);
}

static void remove_tree(const char *path) {
  char cmd[600];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", path);
  if (system(cmd) != 0) printf("warning: could not remove %s\n", path);
}

int main(void) {
  test_show_ok = 1; /* a line for every check, passed or not */
  snprintf(root, sizeof root, "/tmp/weft-jit-cache-XXXXXX");
  if (!mkdtemp(root)) {
    perror("mkdtemp");
    return 1;
  }
  /* Two levels that do not exist yet: the cache must create them (mkdir -p). */
  snprintf(cache_dir, sizeof cache_dir, "%s/a/cache", root);
  snprintf(inc_dir, sizeof inc_dir, "%s/include", root);
  if (mkdir(inc_dir, 0755) != 0) {
    perror("mkdir");
    return 1;
  }
  setenv("WEFT_CACHE_DIR", cache_dir, 1);
  unsetenv("WEFT_CACHE_DISABLE");
  printf("cache in %s\n", cache_dir);

  test_sha256();
  test_miss_hit_options();
  test_user_header();
  test_embedded_state();
  test_corrupt();
  test_concurrent();
  test_disabled();
  test_compile_error();
  test_bad_inputs();

  weft_jit_cache_stats_t s;
  weft_jit_cache_stats(&s);
  printf("cache counters: %llu hits, %llu misses (%llu damaged), %llu writes, %llu compiles\n",
         (unsigned long long)s.hits, (unsigned long long)s.misses,
         (unsigned long long)s.corrupt, (unsigned long long)s.writes,
         (unsigned long long)s.compiles);
  remove_tree(root);
  printf("%s (%d failures)\n", test_failures ? "FAILED" : "PASSED", test_failures);
  return test_failures ? 1 : 0;
}
