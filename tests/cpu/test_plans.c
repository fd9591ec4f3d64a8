/*
 * test_plans.c — the autotuner's candidate plans of the overlapped ops (weft_ops_plan_candidates,
 * src/ops/ops.c), on per-GPU shapes of DITRON's layers (Appendix C) and small m, both layouts:
 * every name unique (the disk entries keep the winner by name) and naming its plan; the
 * sequential form once; a tile width only where the configuration takes it (large m; [k, n] B:
 * multiples of 128) and never the heuristic's own width twice, nor on the LL or two-shot forms
 * (decode tiles); consumer SM counts only for an SM consumer. The algorithms are weft_gemm_ar's.
 */
#include <stdio.h>
#include <string.h>

#include "ops/gemm/gemm.h"
#include "gpu_models.h"
#include "ops/ops.h"

static int failures;

#define FAIL(...)                                                                         \
  do {                                                                                    \
    failures++;                                                                           \
    printf("FAIL ");                                                                      \
    printf(__VA_ARGS__);                                                                  \
    printf("\n");                                                                         \
  } while (0)

int main(void) {
  static const int shapes[][3] = {{8192, 4096, 2752}, {8192, 8192, 7168}, {8192, 2752, 4096},
                                  {8192, 14336, 1024}, {128, 4096, 2752}, {16, 8192, 7392},
                                  {128, 16384, 13312}};
  const weft_algo_t algos[] = {WEFT_ALGO_COPY_ENGINE, WEFT_ALGO_SM, WEFT_ALGO_SEQUENTIAL,
                               WEFT_ALGO_LL, WEFT_ALGO_TWO_SHOT};
  enum { NALGOS = sizeof algos / sizeof algos[0] };
  const weft_ops_gpu_t *gpu = &WEFT_GPU_H100_SXM;
  const int sms = gpu->sms;
  const size_t wsf = (size_t)WEFT_GEMM_WS_TILES_PER_SM * sms * 128 * 128;
  const int wsc = WEFT_GEMM_WS_TILES_PER_SM * sms;
  int total = 0;
  for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++)
    for (int kmaj = 0; kmaj < 2; kmaj++)
      for (int consumer = 0; consumer < 2; consumer++) {
        const int *s = shapes[i];
        weft_gemm_problem_t p = {s[0], s[1], s[2], s[2], kmaj ? s[2] : s[1], s[1],
                                 WEFT_DTYPE_BF16, WEFT_DTYPE_BF16, kmaj, 0};
        weft_ops_plan_t plans[WEFT_OPS_PLAN_MAX];
        char names[WEFT_OPS_PLAN_MAX][32];
        int n = weft_ops_plan_candidates(&p, gpu, wsf, wsc, algos, NALGOS, consumer, plans, names);
        weft_gemm_config_t cfg;
        weft_gemm_config_choose(&p, gpu, wsf, wsc, 1, &cfg);
        char what[96];
        snprintf(what, sizeof what, "%dx%dx%d %s%s", s[0], s[1], s[2], kmaj ? "NK" : "KN",
                 consumer ? " (SM consumer)" : "");
        int seq = 0;
        for (int a = 0; a < n; a++) {
          total++;
          for (int b = a + 1; b < n; b++)
            if (!strcmp(names[a], names[b])) FAIL("%s: two candidates named %s", what, names[a]);
          char want[32];
          int len = snprintf(want, sizeof want, "%s",
                             plans[a].algo == WEFT_ALGO_COPY_ENGINE ? "ce"
                             : plans[a].algo == WEFT_ALGO_SM        ? "sm"
                             : plans[a].algo == WEFT_ALGO_LL        ? "ll"
                             : plans[a].algo == WEFT_ALGO_TWO_SHOT  ? "two_shot"
                                                                    : "seq");
          if (plans[a].bn) len += snprintf(want + len, sizeof want - (size_t)len, "/bn%d", plans[a].bn);
          if (plans[a].comm_sms) snprintf(want + len, sizeof want - (size_t)len, "/sms%d", plans[a].comm_sms);
          if (strcmp(want, names[a])) FAIL("%s: candidate %d named %s, its plan says %s", what, a, names[a], want);
          if (plans[a].algo == WEFT_ALGO_SEQUENTIAL) seq++;
          if ((plans[a].algo == WEFT_ALGO_SEQUENTIAL || plans[a].algo == WEFT_ALGO_LL ||
               plans[a].algo == WEFT_ALGO_TWO_SHOT) && (plans[a].bn || plans[a].comm_sms))
            FAIL("%s: a %s candidate with a variant", what, names[a]);
          if (plans[a].bn) {
            if (cfg.splitk || cfg.bm != 128) FAIL("%s: width %d on a split-K / 64-row configuration", what, plans[a].bn);
            if (plans[a].bn == cfg.bn) FAIL("%s: the heuristic's own width %d again", what, cfg.bn);
            if (!kmaj && plans[a].bn % 64) FAIL("%s: width %d with [k, n] B", what, plans[a].bn);
          }
          if (plans[a].comm_sms && (!consumer || plans[a].algo != WEFT_ALGO_SM))
            FAIL("%s: consumer SMs on %s", what, names[a]);
        }
        if (seq != 1) FAIL("%s: %d sequential candidates", what, seq);
        printf("ok   %-34s %d candidates:", what, n);
        for (int a = 0; a < n; a++) printf(" %s", names[a]);
        printf("\n");
      }
  printf("%d candidates checked, %d failures\n", total, failures);
  return failures ? 1 : 0;
}
