/*
 * test_engine_form.c — the overlapped ops' form where ranks share a GPU, without a GPU
 * (weft_ops_engine_form): there AUTO's copy-engine choice becomes the sequential form, an explicit
 * copy-engine request is WEFT_STATUS_NOT_SUPPORTED with a reason that names the op and the
 * sharing, and every other form passes unchanged; on a GPU of its own a rank keeps every form.
 */
// weft-test: timeout=30
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops/plan.h"
#include "runtime/comm.h"

static int failures;
static void expect(int ok, const char *what) {
  printf("%s %s\n", ok ? "ok  " : "FAIL", what);
  if (!ok) failures++;
}

int main(void) {
  weft_comm_t *comm = calloc(1, sizeof *comm);
  pthread_mutex_init(&comm->error_lock, NULL);
  static const weft_algo_t forms[] = {WEFT_ALGO_COPY_ENGINE, WEFT_ALGO_SM, WEFT_ALGO_LL,
                                      WEFT_ALGO_TWO_SHOT, WEFT_ALGO_SEQUENTIAL};
  for (int shared = 0; shared < 2; shared++) {
    comm->gpu_shared = shared;
    for (size_t i = 0; i < sizeof forms / sizeof forms[0]; i++) {
      char what[128];
      /* AUTO's choice */
      weft_algo_t algo = forms[i];
      weft_status_t st = weft_ops_engine_form(comm, WEFT_ALGO_AUTO, "ag_gemm", &algo);
      weft_algo_t want = shared && forms[i] == WEFT_ALGO_COPY_ENGINE ? WEFT_ALGO_SEQUENTIAL : forms[i];
      snprintf(what, sizeof what, "%s GPU, AUTO chose %s: runs %s", shared ? "shared" : "own",
               weft_ops_algo_name(forms[i]), weft_ops_algo_name(want));
      expect(st == WEFT_STATUS_SUCCESS && algo == want, what);
      /* the caller's request */
      algo = forms[i];
      st = weft_ops_engine_form(comm, forms[i], "gemm_rs", &algo);
      int refused = shared && forms[i] == WEFT_ALGO_COPY_ENGINE;
      snprintf(what, sizeof what, "%s GPU, %s asked for: %s", shared ? "shared" : "own",
               weft_ops_algo_name(forms[i]), refused ? "not supported" : "runs");
      expect(refused ? st == WEFT_STATUS_NOT_SUPPORTED && algo == forms[i] &&
                           strstr(weft_comm_get_last_error(comm), "gemm_rs") &&
                           strstr(weft_comm_get_last_error(comm), "shares its GPU")
                     : st == WEFT_STATUS_SUCCESS && algo == forms[i],
             what);
    }
  }
  printf("%s\n", failures ? "FAILED" : "ok");
  return failures ? 1 : 0;
}
