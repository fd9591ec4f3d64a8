/*
 * test_watchdog.c — the watchdog's words, without a GPU: three ranks' communicators over one
 * node's abort page (as the fd exchange maps it), their error records in plain memory. When one
 * rank's record reports a timeout, its look raises the node's word and says what timed out; the
 * other ranks' looks end their waits (the communicator aborted) and say whose failure it was, one
 * whose kernel was stopped naming its op; each rank says exactly one line however often it looks;
 * a rank's own weft_comm_abort is not said twice; the error texts weft returns afterwards name the
 * same failure. Every line is read back from the log file (WEFT_DEBUG_FILE).
 */
// weft-test: timeout=30
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "runtime/comm.h"

static int failures;
static void expect(int ok, const char *what) {
  printf("%s %s\n", ok ? "ok  " : "FAIL", what);
  if (!ok) failures++;
}

static weft_comm_t *fake(int rank, void *page) {
  weft_comm_t *c = calloc(1, sizeof *c);
  c->rank = c->local_rank = rank;
  c->world = c->local_world = 3;
  c->timeout_ns = 2000000000ull;
  c->error_host = calloc(1, sizeof(weft_device_error_t));
  c->node_abort = page;
  pthread_mutex_init(&c->error_lock, NULL);
  return c;
}

/* Log lines whose message (after " weft WARN file:line ") starts with prefix. */
static int said(const char *path, const char *prefix) {
  FILE *f = fopen(path, "r");
  char line[2048];
  int n = 0;
  while (f && fgets(line, sizeof line, f)) {
    const char *m = strstr(line, " weft WARN ");
    if (m) m = strchr(m + 11, ' ');
    if (m && !strncmp(m + 1, prefix, strlen(prefix))) n++;
  }
  if (f) fclose(f);
  return n;
}

static int lines_with(const char *path, const char *a, const char *b) {
  FILE *f = fopen(path, "r");
  char line[2048];
  int n = 0;
  while (f && fgets(line, sizeof line, f))
    if (strstr(line, a) && (!b || strstr(line, b))) n++;
  if (f) fclose(f);
  return n;
}

int main(void) {
  char path[] = "/tmp/weft-watchdog-XXXXXX";
  int fd = mkstemp(path);
  if (fd < 0) return 1;
  close(fd);
  setenv("WEFT_DEBUG_FILE", path, 1);
  void *page = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  const volatile uint32_t *flag = page; /* the node's word is the page's first */
  weft_comm_t *c[3];
  for (int r = 0; r < 3; r++) c[r] = fake(r, page);

  for (int i = 0; i < 3; i++)
    for (int r = 0; r < 3; r++) weft_watchdog_check(c[r]);
  expect(lines_with(path, "rank", NULL) == 0 && !*flag,
         "nothing failed: no line, the node's word down");

  /* rank 2's GEMM wait on rank 1 timed out (the record as kernels write it) */
  weft_device_error_t *e = c[2]->error_host;
  e->rank = 2, e->peer = 1, e->cmp = 3, e->signal_index = 1, e->expected = 1, e->observed = 0;
  snprintf(e->op, sizeof e->op, "ag_gemm tile 7");
  e->status = WEFT_DEVICE_ERROR_TIMEOUT;
  /* rank 0's kernel was waiting too: it sees the word and records an abort */
  for (int i = 0; i < 3; i++) weft_watchdog_check(c[2]);
  expect(*flag != 0 && c[2]->aborted, "a timeout raises the node's word");
  c[0]->error_host->rank = 0, c[0]->error_host->peer = 1, c[0]->error_host->signal_index = ~0ull;
  snprintf(c[0]->error_host->op, sizeof c[0]->error_host->op, "gemm_rs(arrival)");
  c[0]->error_host->status = WEFT_DEVICE_ERROR_ABORTED;
  for (int i = 0; i < 3; i++)
    for (int r = 0; r < 2; r++) weft_watchdog_check(c[r]);
  for (int r = 0; r < 3; r++) {
    char who[32], what[64];
    snprintf(what, sizeof what, "rank %d said one line", r);
    snprintf(who, sizeof who, "rank %d ", r);
    int n = said(path, who);
    snprintf(who, sizeof who, "rank %d:", r);
    expect(n + said(path, who) == 1, what);
  }
  expect(said(path, "rank 2 timed out in ag_gemm tile 7 waiting on rank 1, signal word 1: "
                    "expected >= 1, observed 0") == 1,
         "the failing rank names op, itself, the peer, the signal and the values");
  expect(said(path, "rank 0: gemm_rs(arrival) stopped because rank 2 timed out in ag_gemm") == 1,
         "a rank whose kernel was stopped names its op and the failure");
  expect(said(path, "rank 1: its waits end because rank 2 timed out in ag_gemm") == 1,
         "a rank with nothing running says whose failure ended its waits");
  expect(c[0]->aborted && c[1]->aborted, "the abort reached every rank");
  weft_status_t st = weft_comm_get_async_error(c[1]);
  expect(st == WEFT_STATUS_ABORTED && strstr(weft_comm_get_last_error(c[1]), "rank 2 timed out"),
         "weft_comm_get_async_error on a stopped rank: ABORTED, naming the failure");
  st = weft_comm_get_async_error(c[2]);
  expect(st == WEFT_STATUS_TIMEOUT && strstr(weft_comm_get_last_error(c[2]), "ag_gemm tile 7"),
         "weft_comm_get_async_error on the failing rank: TIMEOUT, naming the wait");
  expect(lines_with(path, "timed out in ag_gemm", NULL) == 3,
         "returning the failure logs no second line of it");
  if (!failures) unlink(path);
  else printf("the log: %s\n", path);
  printf("%s\n", failures ? "FAILED" : "ok");
  return failures ? 1 : 0;
}
