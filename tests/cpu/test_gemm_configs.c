/*
 * test_gemm_configs.c — every specialisation of kernels/gemm/gemm.cu that weft_gemm's heuristic can
 * choose compiles under NVRTC for sm_90a, and the heuristic's choices keep the kernel's rules:
 * shapes from decode (m = 1) to the per-GPU shapes of DITRON's layers (Appendix C) at TP=4 and
 * TP=8, odd m, n and strides, every dtype pair and both B layouts, on H100/H200 SXM (132 SMs) and
 * PCIe (114) parts; plus the hook variants the overlapped ops compile and the grouped GEMM's
 * specialisations (weft_gemm_config_grouped). Also weft_gemm's argument
 * checks. Needs no GPU (the JIT cache is off, so every compile really runs). A ptxas warning
 * (spills, local memory, serialised wgmma) fails a specialisation as an error would.
 *
 * Compiling all ~1500 specialisations takes minutes on two cores, so by default every choice of
 * the sweep is still checked against the rules and every pin below it still runs, but of the two
 * products of many axes (the heuristic's sweep, the hook variants over every tile width) only a
 * sample compiles: specialisations that cover every -D value each produces, then some more, in
 * an order drawn from a fixed seed (printed), so that every run compiles the same ones. The
 * hand-written cases (hook variants on the large-m configuration, [k, n] B, the decode wait,
 * the two-shot epilogue's tiles, the grouped GEMM's) always compile.
 *     --full (or WEFT_TEST_FULL=1)   compile every specialisation (ctest: label `slow`)
 *     --seed=N, --sample=N           another sample, or N more drawn than the default 16
 */
// weft-test: timeout=300
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jit/embedded.h"
#include "jit/jit.h"
#include "gpu_models.h"
#include "ops/gemm/gemm.h"

#define MAX_SPECS 2048

static struct spec {
  char opts[WEFT_GEMM_MAX_OPTIONS][48];
  int nopts;
  char key[1024];
  char example[96];
  int from;    /* the highest FROM_* that added it */
  int chosen;  /* in the sample */
  int failed;
} specs[MAX_SPECS];
static int nspecs, failures;
static const char *gemm_source;
/* Where a specialisation comes from: the heuristic's sweep and the hook variants over every tile
 * width are products of many axes, sampled by default; a hand-written case always compiles. */
enum { FROM_SWEEP, FROM_WIDTHS, FROM_CASE };
static int adding_from;
/* the specialisations to compile, as indices into specs */
static int todo[MAX_SPECS], ntodo;

static void fail(const char *what) {
  failures++;
  printf("FAIL %s\n", what);
}

static void add_one(const weft_gemm_problem_t *p0, const weft_gemm_config_t *c, const weft_gemm_hooks_t *h) {
  /* the transposed product's kernel runs the swapped problem (weft_gemm_launch) */
  weft_gemm_problem_t swapped;
  const weft_gemm_problem_t *p = weft_gemm_kernel_problem(p0, c, &swapped);
  struct spec s;
  memset(&s, 0, sizeof s);
  const char *ptrs[WEFT_GEMM_MAX_OPTIONS];
  s.nopts = weft_gemm_options(p, c, h, s.opts, ptrs);
  size_t len = 0;
  for (int i = 0; i < s.nopts; i++) len += (size_t)snprintf(s.key + len, sizeof s.key - len, "%s ", s.opts[i]);
  for (int i = 0; i < nspecs; i++)
    if (!strcmp(specs[i].key, s.key)) {
      if (specs[i].from < adding_from) specs[i].from = adding_from;
      return;
    }
  if (nspecs == MAX_SPECS) {
    fail("more specialisations than the test holds");
    return;
  }
  snprintf(s.example, sizeof s.example, "m %d n %d k %d ldc %lld in %d out %d %s", p0->m, p0->n,
           p0->k, p0->ldc, (int)p0->in, (int)p0->out, p0->b_kmajor ? "NK" : "KN");
  s.from = adding_from;
  specs[nspecs++] = s;
}

/* A configuration's kernels: with a split tail, also the whole-tile one (the launch takes it
 * where it splits none). */
static void add(const weft_gemm_problem_t *p, const weft_gemm_config_t *c, const weft_gemm_hooks_t *h) {
  add_one(p, c, h);
  if (c->tail_splits > 1) {
    weft_gemm_config_t whole = *c;
    whole.tail_splits = 0;
    add_one(p, &whole, h);
  }
}

/* The heuristic's rules that a compile does not catch (the kernel's #errors catch the rest). */
static void check_choice(const weft_gemm_problem_t *p0, const weft_gemm_config_t *c,
                         const weft_ops_gpu_t *gpu, size_t ws_floats, int ws_counters) {
  int sms = gpu->sms;
  char what[256];
  snprintf(what, sizeof what, "m %d n %d k %d ldc %lld out %d sms %d: BM %d BN %d ST %d CL %d KS %d SW %d",
           p0->m, p0->n, p0->k, p0->ldc, (int)p0->out, sms, c->bm, c->bn, c->stages, c->cluster,
           c->k_splits, c->swap_ab);
  /* the transposed product: m past 128, the direct-store kernel on 128-row tiles of n and tiles
   * of m's columns that cover it (their width in steps of 16) */
  weft_gemm_problem_t swapped;
  const weft_gemm_problem_t *p = weft_gemm_kernel_problem(p0, c, &swapped);
  if (c->swap_ab && (p0->m <= 128 || !c->splitk || c->bm != 128 || c->bn % 16 ||
                     c->bn > 256 || c->cluster != 1 ||
                     (p0->m + c->bn - 1) / c->bn * c->bn - p0->m >= (p0->m + c->bn - 1) / c->bn * 16))
    fail(what);
  int tiles = ((p->m + c->bm - 1) / c->bm) * ((p->n + c->bn - 1) / c->bn);
  if (weft_gemm_smem_bytes(c) > WEFT_GEMM_MAX_SMEM) fail(what);
  if (c->k_splits < 1 || (c->k_splits > 1 && !c->splitk)) fail(what);
  if (c->k_splits > 1 && ((size_t)c->k_splits * tiles * c->bm * c->bn > ws_floats || tiles > ws_counters))
    fail(what);
  if (c->k_splits > (p->k + 63) / 64) fail(what);
  /* C without 16-byte rows and row stride must take the direct store */
  int os = p->out == WEFT_DTYPE_FP32 ? 4 : 2;
  if ((p->ldc * os % 16 || p->n * os % 16) && !c->splitk) fail(what);
  if (c->cluster != 1 && c->cluster != 2) fail(what);
  /* the split tail is the TMA-store kernel's (large m), at most the launch's 4 splits */
  if (c->tail_splits > 1 && (c->splitk || c->bm != 128 || c->tail_splits > 4)) fail(what);
  /* the launch's split tail on every budget: one item per cluster at most, inside the workspace,
   * 8 k-blocks a split at least, the tail tiles those of the last, partly filled wave */
  for (int clusters = 1; clusters <= sms / c->cluster; clusters++) {
    int splits, t = weft_gemm_tail(p, c, clusters, ws_floats, ws_counters, &splits);
    long long work = (long long)(((p->m + c->bm - 1) / c->bm + c->cluster - 1) / c->cluster) *
                     ((p->n + c->bn - 1) / c->bn);
    if (t == 0 ? splits != 1
               : splits < 2 || splits > c->tail_splits || (long long)t * splits > clusters ||
                     t != work % clusters || (p->k + 63) / 64 / splits < 8 ||
                     (size_t)t * c->cluster * splits * c->bm * c->bn > ws_floats ||
                     t * c->cluster > ws_counters)
      fail(what);
  }
  /* a cluster reduction: 2..8 splits, each owning at least one column group, no 2x1 cluster,
   * its clusters held at once (else the launch runs the workspace reduction) */
  int wg_n = c->bm == 128 ? c->bn : c->bn / 2;
  if (c->splitk_cluster && c->k_splits > 1 &&
      (c->k_splits > 8 || c->k_splits > wg_n / 8 || c->cluster != 1 || !c->splitk ||
       tiles > weft_ops_gpu_clusters(gpu, c->k_splits)))
    fail(what);
}

static void *worker(void *arg) {
  static int next;
  for (;;) {
    int i = __atomic_fetch_add(&next, 1, __ATOMIC_RELAXED);
    if (i >= ntodo) return arg;
    struct spec *s = &specs[todo[i]];
    /* ptxas reports spills and local memory as warnings too; any ptxas warning (wgmma
     * serialised: C7510/C7511/C7515; setmaxnreg ignored: C7508) costs the kernel a lot */
    const char *opts[WEFT_GEMM_MAX_OPTIONS + 2];
    for (int j = 0; j < s->nopts; j++) opts[j] = s->opts[j];
    opts[s->nopts] = "--ptxas-options=--warn-on-spills";
    opts[s->nopts + 1] = "--ptxas-options=--warn-on-local-memory-usage";
    void *cubin = NULL;
    size_t size = 0;
    char *log = NULL;
    uint64_t t0 = weft_now_ns();
    weft_status_t st = weft_jit_compile(gemm_source, "kernels/gemm/gemm.cu", opts, s->nopts + 2,
                                        &cubin, &size, &log);
    double secs = (double)(weft_now_ns() - t0) * 1e-9;
    if (st != WEFT_STATUS_SUCCESS) {
      s->failed = 1;
      printf("FAIL %s(e.g. %s): %s\n%s\n", s->key, s->example, weft_get_error_string(st),
             log ? log : weft_get_last_error());
    } else if (log && strstr(log, "warning")) { /* NVRTC's and ptxas' both */
      s->failed = 1;
      printf("FAIL %s(e.g. %s): ptxas warned:\n%s\n", s->key, s->example, log);
    } else {
      printf("ok   %s %5.1f s, %zu-byte cubin\n", s->key, secs, size);
    }
    fflush(stdout);
    weft_jit_free(cubin);
    weft_jit_free(log);
  }
}

/* A configuration the kernel must refuse to compile (its reason in the log), rather than one
 * that would fault on the GPU: a TMA-store warpgroup tile narrower than one output box. */
static void check_refused(void) {
  weft_gemm_problem_t p = {128, 12288, 4096, 4096, 4096, 12288,
                           WEFT_DTYPE_BF16, WEFT_DTYPE_BF16, 1, 0};
  weft_gemm_config_t c = {.bm = 64, .bn = 96, .stages = 8, .cluster = 1, .epi_bufs = 1, .group = 8,
                          .k_splits = 1};
  char buf[WEFT_GEMM_MAX_OPTIONS][48];
  const char *opts[WEFT_GEMM_MAX_OPTIONS];
  int n = weft_gemm_options(&p, &c, NULL, buf, opts);
  void *cubin = NULL;
  char *log = NULL;
  size_t size = 0;
  weft_status_t st = weft_jit_compile(gemm_source, "kernels/gemm/gemm.cu", opts, n, &cubin, &size, &log);
  if (st == WEFT_STATUS_SUCCESS || !log || !strstr(log, "one output box wide"))
    fail("BM=64 BN=96 (a 48-column warpgroup tile) compiled for the TMA-store epilogue");
  else
    printf("ok   refused BM=64 BN=96 with the TMA-store epilogue\n");
  weft_jit_free(cubin);
  weft_jit_free(log);
}

static void check_args(void) {
  static char buf[64] __attribute__((aligned(16)));
  const void *a = buf, *b = buf;
  void *c = buf;
  struct {
    weft_gemm_problem_t p;
    const void *a, *b;
    void *c;
    int ok;
  } cases[] = {
      {{64, 64, 64, 64, 64, 64, WEFT_DTYPE_BF16, WEFT_DTYPE_BF16, 1, 0}, a, b, c, 1},
      {{1, 3, 8, 8, 8, 3, WEFT_DTYPE_FP16, WEFT_DTYPE_FP32, 1, 0}, a, b, c, 1},  /* odd n, ldc */
      {{5, 5, 0, 8, 8, 5, WEFT_DTYPE_BF16, WEFT_DTYPE_BF16, 1, 0}, NULL, NULL, c, 1}, /* k = 0 */
      {{0, 5, 8, 8, 8, 5, WEFT_DTYPE_BF16, WEFT_DTYPE_BF16, 1, 0}, NULL, NULL, NULL, 1}, /* m = 0 */
      {{64, 64, 64, 64, 64, 64, WEFT_DTYPE_FP32, WEFT_DTYPE_BF16, 1, 0}, a, b, c, 0}, /* fp32 in */
      {{64, 64, 64, 64, 64, 64, WEFT_DTYPE_BF16, WEFT_DTYPE_UINT8, 1, 0}, a, b, c, 0},
      {{64, 64, 60, 60, 60, 64, WEFT_DTYPE_BF16, WEFT_DTYPE_BF16, 1, 0}, a, b, c, 0}, /* lda % 8 */
      {{64, 64, 60, 64, 64, 64, WEFT_DTYPE_BF16, WEFT_DTYPE_BF16, 1, 0}, a, b, c, 0}, /* k % 8 */
      {{64, 60, 64, 64, 60, 60, WEFT_DTYPE_BF16, WEFT_DTYPE_BF16, 0, 0}, a, b, c, 0}, /* [k,n] ldb */
      {{64, 64, 64, 32, 64, 64, WEFT_DTYPE_BF16, WEFT_DTYPE_BF16, 1, 0}, a, b, c, 0}, /* lda < k */
      {{64, 64, 64, 64, 64, 63, WEFT_DTYPE_BF16, WEFT_DTYPE_BF16, 1, 0}, a, b, c, 0}, /* ldc < n */
      {{64, 64, 64, 64, 64, 64, WEFT_DTYPE_BF16, WEFT_DTYPE_BF16, 1, 0}, buf + 2, b, c, 0},
      {{64, 64, 64, 64, 64, 64, WEFT_DTYPE_BF16, WEFT_DTYPE_BF16, 1, 0}, a, b, buf + 8, 0},
      {{64, 64, 64, 64, 64, 64, WEFT_DTYPE_BF16, WEFT_DTYPE_BF16, 1, 0}, NULL, b, c, 0},
      {{-1, 64, 64, 64, 64, 64, WEFT_DTYPE_BF16, WEFT_DTYPE_BF16, 1, 0}, a, b, c, 0},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    weft_status_t st = weft_gemm_problem_check(NULL, &cases[i].p, cases[i].a, cases[i].b, cases[i].c);
    int ok = st == WEFT_STATUS_SUCCESS;
    if (ok != cases[i].ok || (!ok && st != WEFT_STATUS_INVALID_ARGUMENT)) {
      char what[96];
      snprintf(what, sizeof what, "argument case %zu: %s (%s)", i, weft_get_error_string(st),
               weft_get_last_error());
      fail(what);
    } else if (!ok) {
      printf("ok   rejected case %zu: %s\n", i, weft_get_last_error());
    }
  }
}

/* xorshift64*: the sample's draws, the same on every platform for a given seed */
static uint64_t rng_next(uint64_t *x) {
  *x ^= *x >> 12;
  *x ^= *x << 25;
  *x ^= *x >> 27;
  return *x * 0x2545F4914F6CDD1Dull;
}

#define MAX_VALUES 256

/* Adds to the sample, greedily, the specialisation from `from` that brings the most -D values
 * not yet in it (ties go to the order of pool, the seed's), until every value that `from`
 * produces is in: no macro value goes uncompiled. Returns how many it added; *nvalues: how many
 * distinct values `from` produces. */
static int cover(const int *pool, int npool, int from, int *nvalues) {
  static char values[MAX_VALUES][48];
  static uint64_t bits[MAX_SPECS][MAX_VALUES / 64];
  int nv = 0, added = 0;
  memset(bits, 0, sizeof bits);
  for (int k = 0; k < npool; k++) {
    const struct spec *s = &specs[pool[k]];
    if (s->from != from) continue;
    for (int j = 0; j < s->nopts; j++) {
      int v = 0;
      while (v < nv && strcmp(values[v], s->opts[j])) v++;
      if (v == MAX_VALUES) {
        fail("more distinct -D values than the sample holds (raise MAX_VALUES)");
        continue;
      }
      if (v == nv) snprintf(values[nv++], sizeof values[0], "%s", s->opts[j]);
      bits[k][v / 64] |= 1ull << (v % 64);
    }
  }
  uint64_t covered[MAX_VALUES / 64] = {0};
  for (;;) {
    int best = -1, best_new = 0;
    for (int k = 0; k < npool; k++) {
      if (specs[pool[k]].chosen) continue;
      int n = 0;
      for (int w = 0; w < MAX_VALUES / 64; w++) n += __builtin_popcountll(bits[k][w] & ~covered[w]);
      if (n > best_new) best_new = n, best = k;
    }
    if (best < 0) break;
    specs[pool[best]].chosen = 1;
    for (int w = 0; w < MAX_VALUES / 64; w++) covered[w] |= bits[best][w];
    todo[ntodo++] = pool[best];
    added++;
  }
  *nvalues = nv;
  return added;
}

/* What to compile: every hand-written case and, of the sweep's and the width matrix's
 * specialisations, all of them (full) or a sample: a cover of each one's -D values, then `extra`
 * more in the seed's order, for combinations of them. */
static void select_specs(int full, uint64_t seed, int extra) {
  static int pool[MAX_SPECS];
  int npool = 0, nfrom[FROM_CASE + 1] = {0};
  ntodo = 0;
  for (int i = 0; i < nspecs; i++) {
    nfrom[specs[i].from]++;
    if (full || specs[i].from == FROM_CASE)
      todo[ntodo++] = i;
    else
      pool[npool++] = i;
  }
  if (full) {
    printf("compiling all %d specialisations (full sweep)\n", nspecs);
    return;
  }
  uint64_t x = seed ? seed : 1; /* xorshift stays at 0 from 0 */
  for (int i = npool - 1; i > 0; i--) {
    int j = (int)(rng_next(&x) % (uint64_t)(i + 1)), t = pool[i];
    pool[i] = pool[j], pool[j] = t;
  }
  int vsweep, vwidths;
  int csweep = cover(pool, npool, FROM_SWEEP, &vsweep);
  int cwidths = cover(pool, npool, FROM_WIDTHS, &vwidths);
  int nextra = 0;
  for (int k = 0; k < npool && nextra < extra; k++)
    if (!specs[pool[k]].chosen) {
      specs[pool[k]].chosen = 1;
      todo[ntodo++] = pool[k];
      nextra++;
    }
  printf("compiling %d of %d specialisations (seed %llu; --full or WEFT_TEST_FULL=1: all): the %d "
         "hand-written cases; of the sweep's %d, %d that cover its %d -D values; of the hook "
         "variants over every width, %d, %d that cover their %d; %d more drawn from both\n",
         ntodo, nspecs, (unsigned long long)seed, nfrom[FROM_CASE], nfrom[FROM_SWEEP], csweep,
         vsweep, nfrom[FROM_WIDTHS], cwidths, vwidths, nextra);
  for (int i = nfrom[FROM_CASE]; i < ntodo; i++)
    printf("sample %s(e.g. %s)\n", specs[todo[i]].key, specs[todo[i]].example);
}

/* weft_gemm_config_choose on gpu with a communicator's workspace, for a hooked launch */
static void choose_hooked(const weft_gemm_problem_t *p, const weft_ops_gpu_t *gpu,
                          weft_gemm_config_t *c) {
  weft_gemm_config_choose(p, gpu, (size_t)WEFT_GEMM_WS_TILES_PER_SM * gpu->sms * 128 * 128,
                          WEFT_GEMM_WS_TILES_PER_SM * gpu->sms, 1, c);
}

int main(int argc, char **argv) {
  /* the sample: a fixed seed, so that every run compiles the same specialisations */
  int full = getenv("WEFT_TEST_FULL") && atoi(getenv("WEFT_TEST_FULL")) > 0, extra = 16;
  uint64_t seed = 20240601;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--full"))
      full = 1;
    else if (!strncmp(argv[i], "--seed=", 7))
      seed = strtoull(argv[i] + 7, NULL, 0);
    else if (!strncmp(argv[i], "--sample=", 9))
      extra = atoi(argv[i] + 9);
    else {
      fprintf(stderr, "usage: %s [--full] [--seed=N] [--sample=N]\n", argv[0]);
      return 2;
    }
  }
  setenv("WEFT_CACHE_DISABLE", "1", 1);
  const weft_embedded_file_t *f = weft_embedded_find("kernels/gemm/gemm.cu");
  if (!f) {
    printf("FAIL kernels/gemm/gemm.cu is not embedded\n");
    return 1;
  }
  gemm_source = f->data;
  check_args();
  check_refused();

  /* the layers' per-GPU shapes (DITRON, Appendix C; TP=4 and the TP=8 halves) as (n, k) pairs,
   * 8192^2, and odd ones */
  static const int nk[][2] = {
      {2752, 4096}, {3584, 4096}, {7168, 8192}, {13312, 16384}, {7392, 8192},   /* AG+GEMM TP=4 */
      {4096, 2752}, {4096, 3584}, {8192, 7168}, {16384, 13312}, {8192, 7392},   /* GEMM+RS TP=4 */
      {1376, 4096}, {1792, 4096}, {3584, 8192}, {6656, 16384}, {3696, 8192},    /* AG+GEMM TP=8 */
      {4096, 1376}, {4096, 1792}, {8192, 3584}, {16384, 6656}, {8192, 3696},    /* GEMM+RS TP=8 */
      {8192, 8192}, {4096, 3584}, {1000, 1000}, {3, 8}, {129, 4104}, {255, 64}, {64, 512}};
  static const int ms[] = {1, 7, 16, 17, 33, 64, 65, 100, 128, 129, 160, 300, 577, 1000, 8192};
  /* H100 SXM and H200 (132 SMs; their memory bandwidths, GB/s, move the decode tiles), H100 PCIe */
  const weft_ops_gpu_t *gpus[] = {&WEFT_GPU_H100_SXM, &WEFT_GPU_H200, &WEFT_GPU_H100_PCIE};
  static const weft_dtype_t outs[] = {WEFT_DTYPE_BF16, WEFT_DTYPE_FP16, WEFT_DTYPE_FP32};
  static unsigned char ll_area;
  const weft_gemm_hooks_t ll_hook = {.ll_area = &ll_area, .ll_slot = 16};
  int choices = 0, swaps = 0;
  for (size_t si = 0; si < sizeof gpus / sizeof gpus[0]; si++) {
    const weft_ops_gpu_t *gpu = gpus[si];
    int sms = gpu->sms;
    size_t ws_floats = (size_t)WEFT_GEMM_WS_TILES_PER_SM * sms * 128 * 128;
    int ws_counters = WEFT_GEMM_WS_TILES_PER_SM * sms;
    for (size_t i = 0; i < sizeof nk / sizeof nk[0]; i++)
      for (size_t j = 0; j < sizeof ms / sizeof ms[0]; j++)
        for (int in = 0; in < 2; in++)
          for (size_t o = 0; o < 3; o++)
            for (int kmaj = 0; kmaj < 2; kmaj++)
              for (int odd_ldc = 0; odd_ldc < 2; odd_ldc++) {
                int n = nk[i][0], k = nk[i][1];
                if (!kmaj && n % 8) continue; /* contiguous [k, n] B needs n % 8 == 0 */
                weft_gemm_problem_t p = {ms[j], n, k, k, kmaj ? k : n, n + odd_ldc,
                                         in ? WEFT_DTYPE_FP16 : WEFT_DTYPE_BF16, outs[o], kmaj, 0};
                weft_gemm_config_t c, hooked;
                weft_gemm_config_choose(&p, gpu, ws_floats, ws_counters, 0, &c);
                check_choice(&p, &c, gpu, ws_floats, ws_counters);
                add(&p, &c, NULL);
                /* a launch with hooks takes no transposed product: its own choice */
                weft_gemm_config_choose(&p, gpu, ws_floats, ws_counters, 1, &hooked);
                if (hooked.swap_ab) fail("a hooked launch was given the transposed product");
                if (c.swap_ab) {
                  check_choice(&p, &hooked, gpu, ws_floats, ws_counters);
                  add(&p, &hooked, NULL);
                  swaps++;
                }
                /* GEMM + AllReduce's LL form where it takes the problem, also as the workspace
                 * reduction that a cluster one may become */
                weft_gemm_config_t d = c;
                if (weft_gemm_config_ll(&p, &d)) {
                  add(&p, &d, &ll_hook);
                  d.splitk_cluster = 0;
                  add(&p, &d, &ll_hook);
                }
                choices++;
              }
  }
  adding_from = FROM_CASE;
  /* the overlapped ops' hook variants on the large-M configuration */
  weft_gemm_problem_t p = {8192, 7168, 8192, 8192, 8192, 7168, WEFT_DTYPE_BF16, WEFT_DTYPE_BF16, 1, 0};
  weft_gemm_config_t c;
  choose_hooked(&p, &WEFT_GPU_H100_SXM, &c);
  static const uint64_t sig;
  static uint64_t ctr;
  static const int table;
  weft_gemm_hooks_t hooks[] = {
      {.wait_signals = &sig},
      {.notify_counters = &ctr, .notify_sys = 1},
      {.notify_counters = &ctr, .notify_sys = 1, .scatter_stride = 1ll << 36}, /* GEMM+RS fused */
      {.notify_counters = &ctr},
      {.wait_signals = &sig, .order_table = &table},
      {.wait_signals = &sig, .a_own = &sig}, /* AG+GEMM's own rows from the caller's A */
      /* GEMM+AR's own segment reduced in the epilogue */
      {.notify_counters = &ctr, .notify_sys = 1, .ar_staging = (const char *)&table, .ar_flags = &ctr},
      /* and by the storers' idle lanes (long k) */
      {.notify_counters = &ctr, .notify_sys = 1, .ar_staging = (const char *)&table, .ar_flags = &ctr,
       .ar_summers = 1},
  };
  for (size_t i = 0; i < sizeof hooks / sizeof hooks[0]; i++) add(&p, &c, &hooks[i]);
  /* and on every large-m tile width (weft_gemm_config_width; the autotuner's candidates are 256,
   * 192 and 128), both input types */
  static const int widths[] = {256, 240, 224, 208, 192, 176, 128};
  adding_from = FROM_WIDTHS;
  for (int in = 0; in < 2; in++)
    for (size_t w = 0; w < sizeof widths / sizeof widths[0]; w++) {
      weft_gemm_problem_t pw = p;
      pw.in = pw.out = in ? WEFT_DTYPE_FP16 : WEFT_DTYPE_BF16;
      weft_gemm_config_t cw = c;
      if (cw.bn != widths[w] && !weft_gemm_config_width(&pw, widths[w], &cw)) {
        fail("weft_gemm_config_width refused a large-m width");
        continue;
      }
      for (size_t i = 0; i < sizeof hooks / sizeof hooks[0]; i++) add(&pw, &cw, &hooks[i]);
    }
  adding_from = FROM_CASE;
  /* [k, n] B 192 wide (three B boxes between a cluster's two CTAs) with AG+GEMM's wait */
  weft_gemm_problem_t pk = p;
  pk.b_kmajor = 0, pk.ldb = pk.n;
  weft_gemm_config_t ck = c;
  if (!weft_gemm_config_width(&pk, 192, &ck))
    fail("weft_gemm_config_width refused 192 columns of [k, n] B");
  add(&pk, &ck, NULL);
  add(&pk, &ck, &hooks[5]);
  add(&pk, &ck, &hooks[6]);
  /* the wait on a decode configuration whose splits reduce in a cluster (AG+GEMM at small m) */
  weft_gemm_problem_t pd = {16, 2752, 4096, 4096, 4096, 2752, WEFT_DTYPE_BF16, WEFT_DTYPE_BF16, 1, 0};
  choose_hooked(&pd, &WEFT_GPU_H100_SXM, &c);
  if (!c.splitk_cluster) fail("16x2752x4096: the heuristic no longer reduces in a cluster (update the test)");
  add(&pd, &c, &hooks[0]);
  /* GEMM + AllReduce's two-shot epilogue on the decode tiles it takes (weft_gemm_config_unsplit:
   * 128x16384x13312's unsplit 128x128 tiles; 128x8192x7168's two rows of 64x128 tiles (4 ranks)
   * and 128x8192x14336's split 128x128 ones (2 ranks) as unsplit 128x64; H200, both output types,
   * both layouts of B) */
  const weft_gemm_hooks_t cols = {.notify_counters = &ctr, .notify_sys = 1, .ar_flags = &ctr,
                                  .ar_staging = (const char *)&table, .ar_cols = 1};
  for (int i = 0; i < 12; i++) {
    int n = i & 12 ? 8192 : 16384, k = i & 8 ? 14336 : i & 4 ? 7168 : 13312, kmaj = i & 2 ? 0 : 1;
    weft_gemm_problem_t pc = {128, n, k, k, kmaj ? k : n, n, WEFT_DTYPE_BF16, outs[i & 1], kmaj, 0};
    choose_hooked(&pc, &WEFT_GPU_H200, &c);
    if (!weft_gemm_config_unsplit(&pc, WEFT_GPU_H200.sms, &c) || c.bn != (i & 12 ? 64 : 128))
      fail("the two-shot epilogue's decode tiles moved (update the test)");
    add(&pc, &c, &cols);
  }
  /* 64 < m <= 128 over at most 28 k-blocks: 64x64 tiles where memory is slow for the SMs (H100),
   * 128x64 tiles in 2 splits where it is fast (H200) */
  weft_gemm_problem_t pm = {128, 4096, 1376, 1376, 1376, 4096, WEFT_DTYPE_BF16, WEFT_DTYPE_BF16, 1, 0};
  for (int fast = 0; fast < 2; fast++) {
    choose_hooked(&pm, fast ? &WEFT_GPU_H200 : &WEFT_GPU_H100_SXM, &c);
    if (c.bm != (fast ? 128 : 64) || c.bn != 64 || c.k_splits != (fast ? 2 : 1))
      fail("128x4096x1376: the decode tiles no longer follow the memory bandwidth (update the test)");
  }
  /* two 128-row tile rows over 3/4 to all of the SMs in 64-column tiles: unclustered 128x64 tiles,
   * unsplit, up to 128 k-blocks; from 144 the 2x1 clusters with a split tail (both GPUs, both
   * layouts of B; src/ops/gemm/config.c cites the measurements behind the rule) */
  for (int i = 0; i < 8; i++) {
    int k = i & 1 ? 9216 : 8192, kmaj = (i >> 1) & 1;
    weft_gemm_problem_t pt = {256, 4096, k, k, kmaj ? k : 4096, 4096, WEFT_DTYPE_BF16,
                              WEFT_DTYPE_BF16, kmaj, 0};
    choose_hooked(&pt, i & 4 ? &WEFT_GPU_H200 : &WEFT_GPU_H100_SXM, &c);
    if ((c.bm == 128 && c.bn == 64 && c.cluster == 1 && c.tail_splits < 2) != !(i & 1))
      fail("256x4096: the two tile rows' 128x64 tiles moved (update the test)");
  }
  /* splits whose clusters the GPU cannot hold at once (30 of 4 CTAs, 15 of 8): half as many
   * clustered, except 64-column tiles over long splits with fast memory (src/ops/gemm/config.c cites
   * the measurements behind the rule) */
  static const struct {
    int m, n, k, kmajor, fast, splits, clustered;
  } over[] = {
      {1, 2048, 8192, 0, 1, 4, 1},  /* 16 tiles of 64x128 in 8 splits -> 4 clustered */
      {1, 4096, 4096, 0, 1, 2, 1},  /* 32 tiles of 64x128: 4 -> 2 clustered */
      {64, 2048, 8192, 1, 1, 4, 0}, /* 32 tiles of 64x64, 32 k-blocks a split: the workspace */
      {64, 2048, 8192, 1, 0, 2, 1}, /* the same on slow memory (40 k-blocks at least): halved */
      {16, 2048, 4096, 1, 1, 2, 1}, /* 16 k-blocks a split: halved */
  };
  for (size_t i = 0; i < sizeof over / sizeof over[0]; i++) {
    weft_gemm_problem_t po = {over[i].m, over[i].n, over[i].k, over[i].k,
                              over[i].kmajor ? over[i].k : over[i].n, over[i].n,
                              WEFT_DTYPE_BF16, WEFT_DTYPE_BF16, over[i].kmajor, 0};
    choose_hooked(&po, over[i].fast ? &WEFT_GPU_H200 : &WEFT_GPU_H100_SXM, &c);
    if (c.k_splits != over[i].splits || c.splitk_cluster != over[i].clustered) {
      char what[160];
      snprintf(what, sizeof what, "%dx%dx%d: %d splits%s, expected %d%s (update the test)",
               over[i].m, over[i].n, over[i].k, c.k_splits, c.splitk_cluster ? " clustered" : "",
               over[i].splits, over[i].clustered ? " clustered" : "");
      fail(what);
    }
  }

  /* the grouped GEMM of an MoE layer (weft_gemm_config_grouped): experts' widths of open models
   * (n = 2 x intermediate for gate and up, or hidden for down), both layouts, every output type,
   * 64- and 128-row tiles, each epilogue (plain, gated with A gathered from the tokens, combine
   * with each weights' dtype) and AllGather + MoE's (gated, gathered, with the tiles' waits) */
  static const int group_ns[] = {1408, 2048, 2880, 4096, 5760, 7168};
  static const int group_rows[] = {64, 128, 256, 192};
  static const int group_expert, group_tiles;
  static const float group_weights;
  static uint64_t group_signal;
  for (size_t i = 0; i < sizeof group_ns / sizeof group_ns[0]; i++)
    for (int kmaj = 0; kmaj < 2; kmaj++)
      for (size_t o = 0; o < sizeof outs / sizeof outs[0]; o++)
        for (size_t r = 0; r < sizeof group_rows / sizeof group_rows[0]; r++)
          for (int epi = 0; epi < 4; epi++) { /* 3: gated, gathered, waiting (AllGather + MoE) */
            int n = group_ns[i], k = 2048;
            weft_gemm_problem_t pg = {4096, n, k, k, kmaj ? k : n, n, o == 1 ? WEFT_DTYPE_FP16
                                                                             : WEFT_DTYPE_BF16,
                                      outs[o], kmaj, 0};
            weft_gemm_config_t cg;
            int gated = epi == 1 || epi == 3;
            weft_gemm_config_grouped(&pg, group_rows[r], gated, &cg);
            int wgn = cg.bm == 128 ? cg.bn : cg.bn / 2;
            if (cg.cluster != 1 || cg.splitk || cg.tail_splits > 1 || group_rows[r] % cg.bm ||
                (gated && (wgn / 2 * (outs[o] == WEFT_DTYPE_FP32 ? 4 : 2) < 128 ||
                              (!kmaj && wgn / 2 % 64))))
              fail("weft_gemm_config_grouped: a clustered, split or misfit configuration");
            weft_gemm_hooks_t hg = {.group_expert = &group_expert, .group_tiles = &group_tiles,
                                    .group_rows = group_rows[r], .group_experts = 64,
                                    .group_stride = (long long)n * k, .group_gated = gated};
            if (epi == 2) {
              hg.combine_weights = &group_weights;
              hg.combine_wtype = outs[(o + r) % (sizeof outs / sizeof outs[0])];
            }
            if (epi) hg.group_entry = &group_tiles, hg.group_topk = 8;
            if (gated) hg.gather_a = &group_weights, hg.gather_lda = k;
            if (epi == 3) {
              hg.wait_signals = &group_signal, hg.wait_rows = 512, hg.wait_expected = 1;
              hg.group_order = &group_tiles;
            }
            add(&pg, &cg, &hg);
          }

  if (!swaps) fail("no shape took the transposed product (update the test)");
  printf("%d choices (%d transposed), %d distinct specialisations\n", choices, swaps, nspecs);
  select_specs(full, seed, extra);
  fflush(stdout);
  int jobs = getenv("WEFT_TEST_JOBS") ? atoi(getenv("WEFT_TEST_JOBS")) : 2;
  if (jobs < 1) jobs = 1;
  pthread_t th[16];
  if (jobs > 16) jobs = 16;
  for (int i = 0; i < jobs; i++) pthread_create(&th[i], NULL, worker, NULL);
  for (int i = 0; i < jobs; i++) pthread_join(th[i], NULL);
  int failed = 0;
  for (int i = 0; i < ntodo; i++) failed += specs[todo[i]].failed;
  failures += failed;
  printf("%d of %d specialisations compiled (%d of them failed); %d failures\n", ntodo - failed,
         nspecs, failed, failures);
  return failures ? 1 : 0;
}
