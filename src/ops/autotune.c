/*
 * autotune.c — the distributed autotuner (docs/architecture.md, "How a plan is chosen"; plan.h):
 * which of an op's candidate plans runs fastest, decided by timing the whole op on the caller's
 * data, the same choice on every rank, remembered in memory and on disk.
 *
 * Data shapes:
 *   key (op and shapes) + world size + GPU name + SM count + weft version  --SHA-256-->
 *       <cache dir>/autotune/<hex>.txt: "weft-autotune 2\n<full key>\n<winner's name>\n"
 *   candidates: names[0..n), run(ctx, i, stream) enqueues the op as candidate i
 *
 * One call (collective over the world, in the same order on every rank, like the op itself):
 *   1. the process's table: a key decided before is answered at once (every rank holds the same
 *      table: entries are only added after an agreement);
 *   2. each rank reads its disk entry (the candidate by name, or none) and whether the stream is
 *      capturing; one bootstrap all-gather of both. Any rank capturing: no decision now (the
 *      caller takes its heuristic; a graph cannot hold the trials). All ranks found the same
 *      candidate: taken. Otherwise:
 *   3. trials: each candidate once (compiles, loads, warms), then TRIAL_ROUNDS rounds over the
 *      candidates in turn (interleaved, so that clocks and temperature drift hit all alike), each
 *      a stream barrier of the ranks then TRIAL_CALLS calls between two events; a rank's time for
 *      a candidate is the median of its rounds; the all-gathered maximum over ranks (the op ends
 *      when its slowest rank does) decides: the earliest candidate within TRIAL_MARGIN of the
 *      fastest wins (the ops list their heuristic's plan first). Short trials of plans that close
 *      do not order them reliably: on 2 H100s, gemm_rs 8192x16384x53248's trials gave ce 9.82 ms,
 *      sm 9.99, seq 9.97 in one run, and another run's winner (not ce) ran 11.8 ms in weft-bench
 *      where ce ran 10.5 (2026-11-25);
 *   4. the winner enters the table, and local rank 0 of each node writes the disk entry
 *      (temporary file renamed into place).
 * The trials run the op on the caller's buffers: outputs are overwritten by each trial and last
 * by the caller's own call with the winner; inputs are only read.
 */
#include "plan.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../jit/jit.h"
#include "../runtime/bootstrap.h"
#include "../runtime/comm.h"
#include "../runtime/loader.h"
#include "ops.h"

#define TRIAL_ROUNDS 3
#define TRIAL_CALLS 3
#define TRIAL_MARGIN 0.03
#define ENTRY_HEAD "weft-autotune 2" /* 2: winners picked with TRIAL_MARGIN (1: the fastest) */

struct weft_tuned {
  char *key; /* the full key */
  int best;
  struct weft_tuned *next;
};

/* The key with what else decides the winner: world size, GPU model and SM count, weft version. */
static void full_key(weft_comm_t *comm, const char *key, char *out, size_t size) {
  snprintf(out, size, "%s world=%d gpu=%s sms=%d weft=%d.%d.%d", key, comm->world,
           comm->device_name, comm->ops->gpu.sms, WEFT_VERSION_MAJOR, WEFT_VERSION_MINOR,
           WEFT_VERSION_PATCH);
}

static int table_find(weft_comm_t *comm, const char *key) {
  int best = -1;
  pthread_mutex_lock(&comm->ops->tune_lock);
  for (struct weft_tuned *t = comm->ops->tuned; t; t = t->next)
    if (!strcmp(t->key, key)) {
      best = t->best;
      break;
    }
  pthread_mutex_unlock(&comm->ops->tune_lock);
  return best;
}

static void table_add(weft_comm_t *comm, const char *key, int best) {
  struct weft_tuned *t = calloc(1, sizeof *t);
  if (!t || !(t->key = strdup(key))) { /* only a lost memo: the next call decides again */
    free(t);
    return;
  }
  t->best = best;
  pthread_mutex_lock(&comm->ops->tune_lock);
  t->next = comm->ops->tuned;
  comm->ops->tuned = t;
  pthread_mutex_unlock(&comm->ops->tune_lock);
}

void weft_autotune_forget(weft_comm_t *comm) {
  pthread_mutex_lock(&comm->ops->tune_lock);
  for (struct weft_tuned *t = comm->ops->tuned, *next; t; t = next) {
    next = t->next;
    free(t->key);
    free(t);
  }
  comm->ops->tuned = NULL;
  pthread_mutex_unlock(&comm->ops->tune_lock);
}

/* The entry's path; false when the cache is off. */
static bool entry_path(const char *key, char *dir, size_t dsize, char *path, size_t psize) {
  char base[4096], hex[65];
  if (!weft_jit_cache_dir(base, sizeof base)) return false;
  weft_sha256_hex(key, strlen(key), hex);
  return snprintf(dir, dsize, "%s/autotune", base) < (int)dsize &&
         snprintf(path, psize, "%s/%s.txt", dir, hex) < (int)psize;
}

int weft_autotune_entry_read(const char *key, const char *const *names, int n) {
  char dir[4200], path[4300];
  if (!entry_path(key, dir, sizeof dir, path, sizeof path)) return -1;
  FILE *f = fopen(path, "r");
  if (!f) return -1;
  char line[3][4096];
  int ok = 1;
  for (int i = 0; i < 3 && ok; i++) {
    ok = fgets(line[i], sizeof line[i], f) != NULL;
    if (ok) line[i][strcspn(line[i], "\n")] = 0;
  }
  fclose(f);
  if (!ok || strcmp(line[0], ENTRY_HEAD) || strcmp(line[1], key)) return -1;
  for (int i = 0; i < n; i++)
    if (!strcmp(line[2], names[i])) return i;
  return -1;
}

void weft_autotune_entry_write(const char *key, const char *name) {
  char dir[4200], path[4300], tmp[4400];
  if (!entry_path(key, dir, sizeof dir, path, sizeof path)) return;
  if (!weft_jit_cache_make_dirs(dir)) {
    WEFT_WARN("autotune: cannot create %s (%s); the choice is not kept on disk", dir, strerror(errno));
    return;
  }
  snprintf(tmp, sizeof tmp, "%s.tmp.XXXXXX", path);
  int fd = mkstemp(tmp);
  FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
  if (!f) {
    WEFT_WARN("autotune: cannot write %s: %s", tmp, strerror(errno));
    if (fd >= 0) close(fd);
    return;
  }
  int ok = fchmod(fd, 0644) == 0 && fprintf(f, "%s\n%s\n%s\n", ENTRY_HEAD, key, name) > 0;
  ok = fclose(f) == 0 && ok;
  if (!ok || rename(tmp, path) != 0) {
    WEFT_WARN("autotune: entry %s not written: %s", path, strerror(errno));
    unlink(tmp);
  }
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* Step 3 of the file comment: this rank's median time of each candidate into mine[n] (ms). */
static weft_status_t trials(weft_comm_t *comm, int n, weft_autotune_run_t run, const void *ctx,
                            CUstream stream, double *mine) {
  CUevent ev[2] = {NULL, NULL};
  double *t = calloc((size_t)n * TRIAL_ROUNDS, sizeof *t);
  weft_status_t st = WEFT_STATUS_SUCCESS;
  if (!t) return WEFT_ERR(comm, WEFT_STATUS_OUT_OF_MEMORY, "autotune: %d candidates", n);
  WEFT_CU_GOTO(comm, cuEventCreate(&ev[0], CU_EVENT_DEFAULT), st, out);
  WEFT_CU_GOTO(comm, cuEventCreate(&ev[1], CU_EVENT_DEFAULT), st, out);
  for (int c = 0; c < n; c++) WEFT_CHECK_GOTO(run(comm, ctx, c, stream), st, out);
  WEFT_CHECK_GOTO(weft_stream_synchronize(comm, (weft_stream_t)stream), st, out);
  for (int r = 0; r < TRIAL_ROUNDS; r++)
    for (int c = 0; c < n; c++) {
      WEFT_CHECK_GOTO(weft_stream_barrier(comm, (weft_stream_t)stream), st, out);
      WEFT_CU_GOTO(comm, cuEventRecord(ev[0], stream), st, out);
      for (int i = 0; i < TRIAL_CALLS; i++) WEFT_CHECK_GOTO(run(comm, ctx, c, stream), st, out);
      WEFT_CU_GOTO(comm, cuEventRecord(ev[1], stream), st, out);
      WEFT_CHECK_GOTO(weft_stream_synchronize(comm, (weft_stream_t)stream), st, out);
      float ms = 0;
      WEFT_CU_GOTO(comm, cuEventElapsedTime(&ms, ev[0], ev[1]), st, out);
      t[(size_t)c * TRIAL_ROUNDS + r] = ms / TRIAL_CALLS;
    }
  for (int c = 0; c < n; c++) {
    qsort(t + (size_t)c * TRIAL_ROUNDS, TRIAL_ROUNDS, sizeof *t, cmp_double);
    mine[c] = t[(size_t)c * TRIAL_ROUNDS + TRIAL_ROUNDS / 2];
  }
out:
  for (int i = 0; i < 2; i++)
    if (ev[i]) weft_cu.cuEventDestroy(ev[i]);
  free(t);
  return st;
}

int weft_autotune_pick(const double *times, int n) {
  double fastest = times[0];
  for (int c = 1; c < n; c++)
    if (times[c] < fastest) fastest = times[c];
  int c = 0;
  while (c < n - 1 && times[c] > fastest * (1 + TRIAL_MARGIN)) c++;
  return c;
}

weft_status_t weft_autotune(weft_comm_t *comm, const char *key, const char *const *names, int n,
                            weft_autotune_run_t run, const void *ctx, CUstream stream, int *best) {
  *best = -1;
  char full[3072];
  full_key(comm, key, full, sizeof full);
  if ((*best = table_find(comm, full)) >= 0) return WEFT_STATUS_SUCCESS;

  /* step 2: what every rank has on disk, and whether any is capturing */
  CUstreamCaptureStatus cap = CU_STREAM_CAPTURE_STATUS_NONE;
  WEFT_CU(comm, cuStreamIsCapturing(stream, &cap));
  int *seen = calloc((size_t)comm->world * 2, sizeof *seen);
  double *times = calloc((size_t)comm->world * (size_t)n, sizeof *times);
  weft_status_t st = WEFT_STATUS_SUCCESS;
  if (!seen || !times) {
    st = WEFT_ERR(comm, WEFT_STATUS_OUT_OF_MEMORY, "autotune: %d ranks x %d candidates", comm->world, n);
    goto out;
  }
  int *me = seen + 2 * comm->rank;
  me[0] = weft_autotune_entry_read(full, names, n);
  me[1] = cap != CU_STREAM_CAPTURE_STATUS_NONE;
  WEFT_CHECK_GOTO(weft_bootstrap_allgather(comm->bootstrap, seen, 2 * sizeof *seen), st, out);
  int agree = 1, capturing = 0;
  for (int r = 0; r < comm->world; r++) {
    agree &= seen[2 * r] == seen[0];
    capturing |= seen[2 * r + 1];
  }
  if (capturing) {
    WEFT_INFO("autotune: %s: a rank is capturing a graph, the op takes its heuristic's plan "
              "(tune it once outside a capture first)", key);
    goto out;
  }
  if (agree && seen[0] >= 0) {
    *best = seen[0];
    table_add(comm, full, *best);
    WEFT_INFO("autotune: %s: %s (from the cache)", key, names[*best]);
    goto out;
  }

  /* step 3 */
  double *mine = times + (size_t)comm->rank * n;
  WEFT_CHECK_GOTO(trials(comm, n, run, ctx, stream, mine), st, out);
  WEFT_CHECK_GOTO(weft_bootstrap_allgather(comm->bootstrap, times, (size_t)n * sizeof *times), st, out);
  for (int c = 0; c < n; c++) { /* each candidate's slowest rank, kept in rank 0's row */
    double worst = 0;
    for (int r = 0; r < comm->world; r++)
      if (times[(size_t)r * n + c] > worst) worst = times[(size_t)r * n + c];
    if (comm->rank == 0) WEFT_INFO("autotune: %s: %-16s %.4f ms (slowest rank)", key, names[c], worst);
    times[c] = worst;
  }
  *best = weft_autotune_pick(times, n);
  double best_t = times[*best];
  /* step 4 */
  __atomic_add_fetch(&comm->ops->tune_trials, 1, __ATOMIC_RELAXED);
  table_add(comm, full, *best);
  if (comm->local_rank == 0) weft_autotune_entry_write(full, names[*best]);
  if (comm->rank == 0) WEFT_INFO("autotune: %s: %s wins (%.4f ms)", key, names[*best], best_t);
out:
  free(seen);
  free(times);
  return st;
}
