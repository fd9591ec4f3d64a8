/* plan.c — AUTO's algorithm, the overlapped ops' candidate plans and the partition model
 * (plan.h); the autotuner that times the candidates is autotune.c. */
#include "plan.h"

#include <stdio.h>

#include "../runtime/comm.h"
#include "gemm/gemm.h"
#include "ops.h"

typedef struct plan_trial {
  const weft_ops_plan_t *plans;
  weft_ops_run_t run;
  const void *ctx;
} plan_trial_t;

static weft_status_t plan_run(weft_comm_t *comm, const void *ctx, int i, CUstream stream) {
  const plan_trial_t *t = ctx;
  return t->run(comm, t->ctx, &t->plans[i], stream);
}

const char *weft_ops_algo_name(weft_algo_t a) {
  return a == WEFT_ALGO_COPY_ENGINE ? "ce"
         : a == WEFT_ALGO_SM        ? "sm"
         : a == WEFT_ALGO_LL        ? "ll"
         : a == WEFT_ALGO_TWO_SHOT  ? "two_shot"
                                    : "seq";
}

int weft_ops_plan_candidates(const weft_gemm_problem_t *p, const weft_ops_gpu_t *gpu,
                             size_t ws_floats, int ws_counters, const weft_algo_t *algos,
                             int nalgos, int sm_consumer,
                             weft_ops_plan_t plans[WEFT_OPS_PLAN_MAX],
                             char names[WEFT_OPS_PLAN_MAX][32]) {
  static const int widths[] = {256, 192, 128}, consumers[] = {16, 32};
  weft_gemm_config_t cfg;
  weft_gemm_config_choose(p, gpu, ws_floats, ws_counters, 1, &cfg);
  int n = 0;
  for (int i = 0; i < nalgos && n < WEFT_OPS_PLAN_MAX; i++) {
    weft_algo_t a = algos[i];
    plans[n++] = (weft_ops_plan_t){a, 0, 0};
    /* (LL and the two-shot epilogue: decode tiles only, which take no width) */
    if (a == WEFT_ALGO_SEQUENTIAL || a == WEFT_ALGO_LL || a == WEFT_ALGO_TWO_SHOT) continue;
    for (int w = 0; w < 3 && n < WEFT_OPS_PLAN_MAX; w++) {
      weft_gemm_config_t c = cfg;
      if (weft_gemm_config_width(p, widths[w], &c)) plans[n++] = (weft_ops_plan_t){a, widths[w], 0};
    }
    if (a == WEFT_ALGO_SM && sm_consumer)
      for (int g = 0; g < 2 && n < WEFT_OPS_PLAN_MAX; g++)
        plans[n++] = (weft_ops_plan_t){a, 0, consumers[g]};
  }
  for (int i = 0; i < n; i++) {
    size_t size = sizeof names[i];
    int len = snprintf(names[i], size, "%s", weft_ops_algo_name(plans[i].algo));
    if (plans[i].bn) len += snprintf(names[i] + len, size - (size_t)len, "/bn%d", plans[i].bn);
    if (plans[i].comm_sms) snprintf(names[i] + len, size - (size_t)len, "/sms%d", plans[i].comm_sms);
  }
  return n;
}

weft_status_t weft_ops_plan(weft_comm_t *comm, weft_algo_t algo, const char *op,
                            const weft_gemm_problem_t *p, const weft_algo_t *algos, int nalgos,
                            int allreduce, weft_ops_run_t run, const void *ctx, CUstream stream,
                            weft_ops_plan_t *plan) {
  *plan = (weft_ops_plan_t){algo, 0, 0};
  if (algo != WEFT_ALGO_AUTO || !comm->ops->autotune || comm->world < 2) return WEFT_STATUS_SUCCESS;
  /* AUTO's algorithm first: the autotuner's near-ties go to the earliest candidate */
  weft_algo_t order[WEFT_OPS_PLAN_MAX];
  weft_algo_t heuristic =
      weft_ops_overlap_algo(WEFT_ALGO_AUTO, p->m, comm->local_world, allreduce, (long long)p->n * p->k);
  int no = 0;
  for (int pass = 0; pass < 2; pass++)
    for (int i = 0; i < nalgos && no < WEFT_OPS_PLAN_MAX; i++)
      if ((algos[i] == heuristic) == (pass == 0)) order[no++] = algos[i];
  weft_ops_plan_t plans[WEFT_OPS_PLAN_MAX];
  char names[WEFT_OPS_PLAN_MAX][32];
  const char *name[WEFT_OPS_PLAN_MAX];
  int n = weft_ops_plan_candidates(p, &comm->ops->gpu, comm->ops->gemm_ws_floats,
                                   comm->ops->gemm_ws_counters, order, no, allreduce, plans, names);
  for (int i = 0; i < n; i++) name[i] = names[i];
  char key[256];
  snprintf(key, sizeof key, "%s m=%d n=%d k=%d lda=%lld ldb=%lld ldc=%lld in=%d out=%d b=%s", op,
           p->m, p->n, p->k, p->lda, p->ldb, p->ldc, (int)p->in, (int)p->out, p->b_kmajor ? "nk" : "kn");
  plan_trial_t t = {plans, run, ctx};
  int best;
  WEFT_CHECK(weft_autotune(comm, key, name, n, plan_run, &t, stream, &best));
  if (best >= 0) *plan = plans[best];
  return WEFT_STATUS_SUCCESS;
}

weft_status_t weft_ops_form(weft_comm_t *comm, const weft_ops_plan_t *plan, const char *op,
                            const weft_gemm_problem_t *p, int allreduce, weft_algo_t *algo) {
  *algo = weft_ops_overlap_algo(plan->algo, p->m, comm->local_world, allreduce,
                                (long long)p->n * p->k);
  if (p->n == 0 || p->k == 0) *algo = WEFT_ALGO_SEQUENTIAL; /* zeros or nothing: no overlap */
  return weft_ops_engine_form(comm, plan->algo, op, algo);
}

weft_status_t weft_ops_engine_form(weft_comm_t *comm, weft_algo_t requested, const char *op,
                                   weft_algo_t *algo) {
  if (*algo != WEFT_ALGO_COPY_ENGINE || !comm->gpu_shared) return WEFT_STATUS_SUCCESS;
  if (requested == WEFT_ALGO_AUTO) {
    *algo = WEFT_ALGO_SEQUENTIAL;
    return WEFT_STATUS_SUCCESS;
  }
  return WEFT_ERR(comm, WEFT_STATUS_NOT_SUPPORTED,
                  "%s's copy-engine form: rank %d shares its GPU with another rank "
                  "(WEFT_SHARE_GPUS), where copies and stream signals between the ranks do not "
                  "progress beside the GEMM that waits for them; AUTO or the sequential form run "
                  "here", op, comm->rank);
}

void weft_ops_gemm_config(weft_comm_t *comm, const weft_gemm_problem_t *p,
                          const weft_ops_plan_t *plan, weft_gemm_config_t *cfg) {
  weft_ops_t *o = comm->ops;
  weft_gemm_config_choose(p, &o->gpu, o->gemm_ws_floats, o->gemm_ws_counters, 1, cfg);
  if (plan->bn) weft_gemm_config_width(p, plan->bn, cfg);
}

/* The partition model's time (s) of a GEMM beside a consumer on g of sms SMs (ops.h). */
static double part_time(int g, int sms, double flops, double hbm_bytes, double link_bytes,
                        double tail_bytes) {
  double rate = g * WEFT_PART_SM_LINK_GBPS < WEFT_PART_LINK_GBPS ? g * WEFT_PART_SM_LINK_GBPS
                                                                 : WEFT_PART_LINK_GBPS;
  double gemm = flops / ((sms - g) * WEFT_PART_SM_TFLOPS * 1e12), mem = hbm_bytes / (WEFT_PART_HBM_GBPS * 1e9);
  double body = (link_bytes - tail_bytes) / (rate * 1e9);
  if (mem > gemm) gemm = mem;
  return (gemm > body ? gemm : body) + tail_bytes / (rate * 1e9);
}

int weft_ops_comm_sms(int sms, int override, long long m, long long n, int tile_m, int tile_n,
                      double flops, double hbm_bytes, double link_bytes) {
  if (override > 0) return override < sms ? override : sms - 1;
  long long tiles_n = (n + tile_n - 1) / tile_n;
  double wave_rows = (double)((sms + tiles_n - 1) / tiles_n) * tile_m;
  double tail = link_bytes * (wave_rows < (double)m ? wave_rows / (double)m : 1.0);
  int hi = sms / 4 > 2 ? sms / 4 : 2;
  double best = part_time(2, sms, flops, hbm_bytes, link_bytes, tail);
  for (int g = 3; g <= hi; g++) {
    double t = part_time(g, sms, flops, hbm_bytes, link_bytes, tail);
    if (t < best) best = t;
  }
  int g = 2;
  while (g < hi && part_time(g, sms, flops, hbm_bytes, link_bytes, tail) > best * 1.01) g++;
  return g;
}
