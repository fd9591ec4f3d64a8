/* bench.c — shared weft-bench machinery (see bench.h). */
#include "bench.h"

#include <limits.h>
#include <math.h>

#include <string.h>
#include <unistd.h>

static size_t parse_size_or_die(const char *s) {
  uint64_t v;
  if (!weft_parse_size(s, &v)) {
    fprintf(stderr, "weft-bench: bad size '%s'\n", s);
    exit(2);
  }
  return (size_t)v;
}

void bench_set_timeout(const char *seconds) {
  char *end;
  double s = strtod(seconds, &end);
  if (end == seconds || *end || !(s > 0) || s > 86400) {
    fprintf(stderr, "weft-bench: -T %s: a number of seconds (0 < T <= 86400)\n", seconds);
    exit(2);
  }
  char ms[32];
  snprintf(ms, sizeof ms, "%.0f", s * 1000 < 1 ? 1 : s * 1000);
  setenv("WEFT_TIMEOUT_MS", ms, 1);
}

void bench_parse(bench_t *b, int argc, char **argv, size_t def_min, size_t def_max) {
  memset(b, 0, sizeof *b);
  b->opt = (bench_opts_t){def_min, def_max, 2.0, 20, 5, 0, 1, "bf16", NULL, NULL, NULL};
  for (int i = 0; i < argc; i += 2) { /* every option takes a value */
    const char *a = argv[i];
    const char *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (a[0] != '-' || !a[1] || a[2] || !v) {
      fprintf(stderr, "weft-bench: bad option '%s' (-b -e -f -n -w -G -c -d -a -o -J -T; -h: help)\n", a);
      exit(2);
    }
    switch (a[1]) {
    case 'b': b->opt.min_bytes = parse_size_or_die(v); break;
    case 'e': b->opt.max_bytes = parse_size_or_die(v); break;
    case 'f': b->opt.factor = atof(v); break;
    case 'n': b->opt.iters = atoi(v); break;
    case 'w': b->opt.warmup = atoi(v); break;
    case 'G': b->opt.graph = atoi(v); break;
    case 'c': b->opt.check = atoi(v); break;
    case 'd': b->opt.dtype = v; break;
    case 'a': b->opt.algo = v; break;
    case 'o': b->opt.op = v; break;
    case 'J': b->opt.json = v; break;
    case 'T': bench_set_timeout(v); break;
    default: fprintf(stderr, "weft-bench: unknown option '%s'\n", a); exit(2);
    }
  }
  if (b->opt.factor <= 1.0 || b->opt.iters < 1 || b->opt.warmup < 0 ||
      b->opt.min_bytes > b->opt.max_bytes) {
    fprintf(stderr, "weft-bench: inconsistent options (-f > 1, -n >= 1, -b <= -e)\n");
    exit(2);
  }
}

void bench_init(bench_t *b, const char *suite) {
  OK(weft_comm_init(&b->comm, NULL));
  b->rank = b->comm->rank;
  b->world = b->comm->world;
  CU(cuStreamCreate(&b->stream, CU_STREAM_NON_BLOCKING));
  int drv = 0;
  weft_cu.cuDriverGetVersion(&drv);
  /* Every rank's device line, gathered so that rank 0 prints them in order. */
  typedef struct { char line[192]; } line_t;
  line_t *lines = bench_calloc((size_t)b->world, sizeof *lines);
  char name[96] = "?", bus[32] = "?", host[64] = "?";
  weft_cu.cuDeviceGetName(name, sizeof name, b->comm->device);
  weft_cu.cuDeviceGetPCIBusId(bus, sizeof bus, b->comm->device);
  gethostname(host, sizeof host - 1);
  snprintf(lines[b->rank].line, sizeof lines[0].line,
           "#  rank %2d pid %7d on %s device %2d [%s] %s (%d SMs, %d GB/s, clusters of 2/4/8: %d/%d/%d)",
           b->rank, (int)getpid(), host, b->comm->device_ordinal, bus, name, b->comm->ops->gpu.sms,
           b->comm->ops->gpu.hbm_gbps, b->comm->ops->gpu.clusters[1], b->comm->ops->gpu.clusters[2],
           b->comm->ops->gpu.clusters[3]);
  OK(weft_bootstrap_allgather(b->comm->bootstrap, lines, sizeof *lines));
  if (b->rank == 0) {
    printf("# weft-bench %s: weft %d.%d.%d (library %d), CUDA driver %d.%d, built with CUDA %d.%d\n",
           suite, WEFT_VERSION_MAJOR, WEFT_VERSION_MINOR, WEFT_VERSION_PATCH, weft_get_version(),
           drv / 1000, drv % 1000 / 10, CUDA_VERSION / 1000, CUDA_VERSION % 1000 / 10);
    printf("# %d ranks; -n %d -w %d -G %d -c %d\n", b->world, b->opt.iters, b->opt.warmup, b->opt.graph,
           b->opt.check);
    for (int r = 0; r < b->world; r++) printf("%s\n", lines[r].line);
    if (b->opt.json) {
      b->json = fopen(b->opt.json, "w");
      if (!b->json) {
        perror(b->opt.json);
        exit(1);
      }
      fprintf(b->json, "{\"suite\": \"%s\", \"ranks\": %d, \"rows\": [\n", suite, b->world);
    }
  }
  free(lines);
}

void bench_finish(bench_t *b) {
  if (b->json) {
    fprintf(b->json, "\n]}\n");
    fclose(b->json);
  }
  int wrong = b->wrong;
  int *all = bench_calloc((size_t)b->world, sizeof *all);
  all[b->rank] = wrong;
  OK(weft_bootstrap_allgather(b->comm->bootstrap, all, sizeof *all));
  int total = 0;
  for (int r = 0; r < b->world; r++) total += all[r];
  free(all);
  if (b->rank == 0 && !b->opt.check)
    printf("# Out of bounds values : N/A (-c 0: not checked)\n");
  else if (b->rank == 0)
    printf("# Out of bounds values : %d %s\n", total, total ? "FAILED" : "OK");
  if (b->rank == 0 && b->busbw_rows)
    printf("# Avg bus bandwidth    : weft %.2f, NCCL %.2f (GB/s, %d sizes)\n",
           b->busbw_sum[0] / b->busbw_rows, b->busbw_sum[1] / b->busbw_rows, b->busbw_rows);
  weft_cu.cuStreamDestroy(b->stream);
  OK(weft_comm_destroy(b->comm));
  exit(total ? 1 : 0);
}

const char *bench_wrong_text(const bench_t *b, int wrong, char *buf) {
  if (!b->opt.check) return "N/A";
  snprintf(buf, 16, "%d", wrong);
  return buf;
}

double bench_wrong_json(const bench_t *b, int wrong) { return b->opt.check ? wrong : -1; }

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

double bench_median(double *v, int n) {
  qsort(v, (size_t)n, sizeof *v, cmp_double);
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

double bench_max_across_ranks(bench_t *b, double v) {
  double *all = bench_calloc((size_t)b->world, sizeof *all);
  all[b->rank] = v;
  OK(weft_bootstrap_allgather(b->comm->bootstrap, all, sizeof *all));
  double m = all[0];
  for (int r = 1; r < b->world; r++) m = all[r] > m ? all[r] : m;
  free(all);
  return m;
}

void bench_json_row(bench_t *b, const char *suite, const char *name, int nkv, const char **keys,
                    const double *values) {
  if (!b->json) return;
  fprintf(b->json, "%s  {\"suite\": \"%s\", \"name\": \"%s\"", b->json_rows++ ? ",\n" : "", suite,
          name);
  /* whole numbers (sizes, counts) exactly; measurements to 6 significant digits */
  for (int i = 0; i < nkv; i++) {
    double v = values[i];
    int whole = isfinite(v) && fabs(v) < 9e15 && v == floor(v);
    fprintf(b->json, whole ? ", \"%s\": %.0f" : ", \"%s\": %.6g", keys[i], v);
  }
  fprintf(b->json, "}");
}

int bench_mm_option(bench_mm_opts_t *o, const char *opt, const char *v) {
  if (!strcmp(opt, "-s")) {
    if (o->nshapes >= BENCH_MAX_SHAPES) return -1;
    int *sh = o->shapes[o->nshapes];
    if (sscanf(v, "%d,%d,%d", &sh[0], &sh[1], &sh[2]) != 3) return -1;
    o->nshapes++;
  } else if (!strcmp(opt, "-l")) {
    if (strcmp(v, "nk") && strcmp(v, "kn")) return -1;
    o->kmajor = !strcmp(v, "nk");
  } else if (!strcmp(opt, "-d")) {
    o->dtype = v;
  } else if (!strcmp(opt, "-n")) {
    o->iters = atoi(v);
  } else if (!strcmp(opt, "-w")) {
    o->warmup = atoi(v);
  } else if (!strcmp(opt, "-G")) {
    o->graph = atoi(v);
  } else if (!strcmp(opt, "-J")) {
    o->json = v;
  } else if (!strcmp(opt, "-T")) {
    bench_set_timeout(v);
  } else {
    return 0;
  }
  return 1;
}

int bench_mm_check(const bench_mm_opts_t *o) {
  return o->iters >= 1 && o->warmup >= 0 && (!strcmp(o->dtype, "bf16") || !strcmp(o->dtype, "fp16"));
}

void *bench_calloc(size_t count, size_t size) {
  void *p = calloc(count ? count : 1, size ? size : 1);
  if (!p) {
    fprintf(stderr, "weft-bench: out of host memory (%zu x %zu bytes)\n", count, size);
    exit(1);
  }
  return p;
}

static unsigned long long moe_rand(unsigned long long *s) {
  *s ^= *s << 13, *s ^= *s >> 7, *s ^= *s << 17;
  return *s;
}

void bench_moe_ids(int tokens, int topk, int experts, int zipf, unsigned long long seed, int *ids) {
  double total = 0;
  for (int e = 0; e < experts; e++) total += zipf ? 1.0 / (e + 1) : 1.0;
  for (int t = 0; t < tokens; t++)
    for (int j = 0; j < topk; j++) {
      int e = 0;
      double u = (double)(moe_rand(&seed) >> 11) / 9007199254740992.0 * total, acc = 0;
      for (e = 0; e < experts - 1; e++) {
        acc += zipf ? 1.0 / (e + 1) : 1.0;
        if (u < acc) break;
      }
      for (int q = 0; q < j; q++)
        if (ids[t * topk + q] == e) e = (e + 1) % experts, q = -1;
      ids[t * topk + j] = e;
    }
}

void bench_moe_dry_run(const char *prefix, int (*shapes)[5], int nshapes, int zipf,
                       int token_factor) {
  for (int si = 0; si < nshapes; si++) {
    const int *s = shapes[si];
    int tokens = s[0] * token_factor, rows = tokens * s[4];
    int *ids = bench_calloc((size_t)rows, sizeof(int));
    int *loads = bench_calloc((size_t)s[3], sizeof(int)), lo = rows, hi = 0, empty = 0;
    unsigned hash = 0; /* of every id in order: the draws themselves */
    bench_moe_ids(tokens, s[4], s[3], zipf, BENCH_MOE_SEED + (unsigned long long)si, ids);
    for (int i = 0; i < rows; i++) loads[ids[i]]++, hash = hash * 31u + (unsigned)ids[i];
    for (int e = 0; e < s[3]; e++) {
      lo = loads[e] < lo ? loads[e] : lo, hi = loads[e] > hi ? loads[e] : hi;
      empty += !loads[e];
    }
    printf("%s%dx%dx%dx%dx%d: %d rows, expert loads min %d max %d, empty %d, ids hash %08x\n",
           prefix, s[0], s[1], s[2], s[3], s[4], rows, lo, hi, empty, hash);
    free(ids), free(loads);
  }
}

void bench_moe_options(bench_moe_opts_t *o, const char *suite, int argc, char **argv) {
  memset(o, 0, sizeof *o);
  o->kmajor = 1, o->iters = 20, o->warmup = 5, o->dtype = "bf16";
  for (int i = 0; i < argc; i += 2) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (!strcmp(a, "--dry-run")) {
      o->dry = 1, i--;
      continue;
    }
    if (!v) bench_usage_exit(suite);
    if (!strcmp(a, "-s") && o->nshapes < BENCH_MOE_MAX_SHAPES) {
      int *s = o->shapes[o->nshapes++];
      if (sscanf(v, "%d,%d,%d,%d,%d", &s[0], &s[1], &s[2], &s[3], &s[4]) != 5 || s[0] < 1 ||
          s[1] < 8 || s[1] % 8 || s[2] < 8 || s[2] % 8 || s[3] < 1 || s[4] < 1 || s[4] > s[3])
        bench_usage_exit(suite);
    } else if (!strcmp(a, "-l") && (!strcmp(v, "nk") || !strcmp(v, "kn"))) {
      o->kmajor = !strcmp(v, "nk");
    } else if (!strcmp(a, "-r") && (!strcmp(v, "uniform") || !strcmp(v, "zipf"))) {
      o->zipf = !strcmp(v, "zipf");
    } else if (!strcmp(a, "-d") && (!strcmp(v, "bf16") || !strcmp(v, "fp16"))) {
      o->dtype = v;
    } else if (!strcmp(a, "-n") && atoi(v) > 0) {
      o->iters = atoi(v);
    } else if (!strcmp(a, "-w") && atoi(v) >= 0) {
      o->warmup = atoi(v);
    } else if (!strcmp(a, "-G") && (!strcmp(v, "0") || !strcmp(v, "1"))) {
      o->graph = atoi(v);
    } else if (!strcmp(a, "-J")) {
      o->json = v;
    } else if (!strcmp(a, "-T")) {
      bench_set_timeout(v);
    } else {
      bench_usage_exit(suite);
    }
  }
}

void bench_moe_weights(long long entries, int shape_index, float *w) {
  unsigned long long s = 0x9e3779b97f4a7c15ull * (unsigned long long)(shape_index + 1);
  for (long long q = 0; q < entries; q++) w[q] = (float)(1 + moe_rand(&s) % 1000) / 1000.f;
}

int bench_moe_min_load(const int *ids, long long entries, int experts) {
  int *loads = bench_calloc((size_t)experts, sizeof(int)), lo = INT_MAX;
  for (long long i = 0; i < entries; i++) loads[ids[i]]++;
  for (int e = 0; e < experts; e++) lo = loads[e] < lo ? loads[e] : lo;
  free(loads);
  return lo;
}

void bench_time_runs(bench_t *b, int nruns, bench_call_fn call, void *ctx, int barrier, double *us) {
  int n = b->opt.iters;
  double **t = bench_calloc((size_t)nruns, sizeof *t);
  for (int r = 0; r < nruns; r++) t[r] = bench_calloc((size_t)n, sizeof(double));
  CUevent e0, e1;
  CU(cuEventCreate(&e0, CU_EVENT_DEFAULT));
  CU(cuEventCreate(&e1, CU_EVENT_DEFAULT));
  CUgraphExec *graph = b->opt.graph ? bench_calloc((size_t)nruns, sizeof *graph) : NULL;
  for (int r = 0; graph && r < nruns; r++) {
    CUgraph g;
    CU(cuStreamBeginCapture(b->stream, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL));
    for (int c = 0; c < BENCH_BATCH; c++) call(b, ctx, r);
    CU(cuStreamEndCapture(b->stream, &g));
    CU(cuGraphInstantiateWithFlags(&graph[r], g, 0));
    CU(cuGraphDestroy(g));
  }
  int *order = bench_calloc((size_t)nruns, sizeof *order);
  unsigned long long rng = 0x2545F4914F6CDD1Dull;
  for (int i = -b->opt.warmup; i < n; i++) {
    /* a fresh random order every sample (Fisher-Yates on a fixed-seed xorshift) */
    for (int j = 0; j < nruns; j++) order[j] = j;
    for (int j = nruns - 1; j > 0; j--) {
      rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
      int k = (int)(rng % (unsigned long long)(j + 1)), tmp = order[j];
      order[j] = order[k], order[k] = tmp;
    }
    for (int j = 0; j < nruns; j++) {
      int r = order[j];
      if (barrier) OK(weft_comm_barrier(b->comm));
      CU(cuEventRecord(e0, b->stream));
      if (graph)
        CU(cuGraphLaunch(graph[r], b->stream));
      else
        for (int c = 0; c < BENCH_BATCH; c++) call(b, ctx, r);
      CU(cuEventRecord(e1, b->stream));
      /* bounded, and a GPU wait that timed out is reported by name */
      OK(weft_stream_synchronize(b->comm, (weft_stream_t)b->stream));
      float ms;
      CU(cuEventElapsedTime(&ms, e0, e1));
      if (i >= 0) t[r][i] = ms * 1e3 / BENCH_BATCH;
    }
  }
  free(order);
  for (int r = 0; r < nruns; r++) {
    us[r] = bench_max_across_ranks(b, bench_median(t[r], n));
    free(t[r]);
  }
  free(t);
  for (int r = 0; graph && r < nruns; r++) CU(cuGraphExecDestroy(graph[r]));
  free(graph);
  CU(cuEventDestroy(e0));
  CU(cuEventDestroy(e1));
}

static const char *bench_data_src =
    FILL_KERNEL_SRC /* support.h: the GEMM tests' fill, so the benchmarks draw the same data */
    /* acc: [0] sum (x - y)^2, [1] sum y^2, [2] non-finite x; 16-bit outputs (bf16 or fp16) */
    "__device__ double h2d(unsigned short h, int fp16) {\n"
    "  if (!fp16) return __uint_as_float((unsigned)h << 16);\n"
    "  float f; asm(\"cvt.f32.f16 %0, %1;\" : \"=f\"(f) : \"h\"(h)); return f;\n"
    "}\n"
    "extern \"C\" __global__ void diff(const unsigned short *x, const unsigned short *y,\n"
    "                                 unsigned long long n, int fp16, double *acc) {\n"
    "  double e = 0, r = 0, bad = 0;\n"
    "  for (unsigned long long i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {\n"
    "    double a = h2d(x[i], fp16), b = h2d(y[i], fp16);\n"
    "    if (!(a == a) || a - a != 0) { bad += 1; continue; }\n"
    "    e += (a - b) * (a - b); r += b * b;\n"
    "  }\n"
    "  atomicAdd(&acc[0], e); atomicAdd(&acc[1], r); atomicAdd(&acc[2], bad);\n"
    "}\n";

weft_module_t *bench_data_load(bench_t *b, weft_kernel_t **fill, weft_kernel_t **diff) {
  weft_module_t *mod;
  OK(weft_module_load(b->comm, bench_data_src, "bench_data.cu", NULL, 0, &mod));
  OK(weft_module_get_kernel(mod, "fill", fill));
  OK(weft_module_get_kernel(mod, "diff", diff));
  return mod;
}
