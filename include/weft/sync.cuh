/*
 * weft/sync.cuh — memory-ordering primitives and the timed wait every spin in weft goes through.
 *
 * Scope: anything another GPU, the host or the copy engine reads or writes uses .sys; .gpu only
 * between blocks of one GPU. A producer signals with a release (st.release / red.release), a
 * consumer waits with ld.acquire, so data written before the signal is visible after the wait.
 */
#ifndef WEFT_SYNC_CUH
#define WEFT_SYNC_CUH

#include "weft/state.h"

/* The state block the runtime fills in every module it loads (found by name with
 * cuModuleGetGlobal, so it must stay a global-scope, non-static __constant__). */
__constant__ weft_device_state_t weft_state;

typedef unsigned long long weft_u64_t;

#ifndef WEFT_CMP_DEFINED
#define WEFT_CMP_DEFINED
/* The same values as weft_cmp_t in weft.h. */
#define WEFT_CMP_EQ 0
#define WEFT_CMP_NE 1
#define WEFT_CMP_GT 2
#define WEFT_CMP_GE 3
#define WEFT_CMP_LT 4
#define WEFT_CMP_LE 5
#endif

static __device__ __forceinline__ weft_u64_t weft_ld_acquire(const weft_u64_t *p) {
  weft_u64_t v;
  asm volatile("ld.acquire.sys.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
  return v;
}
static __device__ __forceinline__ weft_u64_t weft_ld_acquire_gpu(const weft_u64_t *p) {
  weft_u64_t v;
  asm volatile("ld.acquire.gpu.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
  return v;
}
static __device__ __forceinline__ void weft_st_release(weft_u64_t *p, weft_u64_t v) {
  asm volatile("st.release.sys.global.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
}
static __device__ __forceinline__ void weft_red_release(weft_u64_t *p, weft_u64_t v) {
  asm volatile("red.release.sys.global.add.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
}
static __device__ __forceinline__ weft_u64_t weft_atomic_add(weft_u64_t *p, weft_u64_t v) {
  weft_u64_t old;
  asm volatile("atom.acq_rel.sys.global.add.u64 %0, [%1], %2;" : "=l"(old) : "l"(p), "l"(v) : "memory");
  return old;
}
static __device__ __forceinline__ weft_u64_t weft_atomic_cas(weft_u64_t *p, weft_u64_t cmp,
                                                               weft_u64_t v) {
  weft_u64_t old;
  asm volatile("atom.acq_rel.sys.global.cas.b64 %0, [%1], %2, %3;"
               : "=l"(old) : "l"(p), "l"(cmp), "l"(v) : "memory");
  return old;
}
/* Orders this thread's earlier memory operations before its later ones, system-wide. */
static __device__ __forceinline__ void weft_fence(void) {
  asm volatile("fence.acq_rel.sys;" ::: "memory");
}
/* Completes this thread's earlier puts (stores are complete once ordered at system scope). */
static __device__ __forceinline__ void weft_quiet(void) {
  asm volatile("fence.sc.sys;" ::: "memory");
}
static __device__ __forceinline__ weft_u64_t weft_globaltimer(void) {
  weft_u64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

static __device__ __forceinline__ int weft_cmp(weft_u64_t v, int cmp, weft_u64_t x) {
  switch (cmp) {
  case WEFT_CMP_EQ: return v == x;
  case WEFT_CMP_NE: return v != x;
  case WEFT_CMP_GT: return v > x;
  case WEFT_CMP_GE: return v >= x;
  case WEFT_CMP_LT: return v < x;
  default: return v <= x;
  }
}

/* Writes the error record once (the first reporter wins), prints, and traps: a trapped kernel
 * ends, its stream fails, and the host reads the record from host-mapped memory. */
static __device__ __noinline__ void weft_wait_fail(unsigned status, const char *op, int peer,
                                                  const weft_u64_t *sig, int cmp,
                                                  weft_u64_t expected, weft_u64_t observed,
                                                  weft_u64_t waited_ns) {
  weft_device_error_t *e = (weft_device_error_t *)weft_state.error;
  weft_u64_t index = ~0ull;
  weft_u64_t a = (weft_u64_t)sig;
  if (a >= weft_state.my_heap && a < weft_state.my_heap + weft_state.heap_size) index = (a - weft_state.my_heap) / 8;
  if (e && atomicCAS((unsigned *)&e->status, 0u, status) == 0u) {
    e->rank = weft_state.rank;
    e->peer = peer;
    e->signal_index = index;
    e->expected = expected;
    e->observed = observed;
    int i = 0;
    for (; op[i] && i < (int)sizeof e->op - 1; i++) e->op[i] = op[i];
    e->op[i] = 0;
    __threadfence_system();
  }
  if (status == WEFT_DEVICE_ERROR_TIMEOUT)
    printf("weft: rank %d timed out in %s waiting on peer %d signal[%lld] (expected cmp %d %llu, "
           "observed %llu) after %llu ms\n", weft_state.rank, op, peer, (long long)index, cmp,
           expected, observed, waited_ns / 1000000ull);
  else
    printf("weft: rank %d: %s stopped by weft_comm_abort\n", weft_state.rank, op);
  asm volatile("trap;");
}

/* Call on every spin of a wait: every 1024 spins it checks the abort flag and the deadline
 * (weft_state.timeout_ns from *start, which it sets on the first check) and reports and traps
 * on either. op, peer, sig, cmp, expected and observed only describe the wait in the report. */
static __device__ __forceinline__ void weft_spin_check(unsigned spins, weft_u64_t *start,
                                                       const char *op, int peer,
                                                       const weft_u64_t *sig, int cmp,
                                                       weft_u64_t expected, weft_u64_t observed) {
  if ((spins & 1023) != 1023) return;
  weft_u64_t now = weft_globaltimer();
  if (!*start) *start = now;
  const volatile unsigned *ab = (const volatile unsigned *)weft_state.abort_flag;
  if (ab && *ab)
    weft_wait_fail(WEFT_DEVICE_ERROR_ABORTED, op, peer, sig, cmp, expected, observed, now - *start);
  if (weft_state.timeout_ns && now - *start > weft_state.timeout_ns)
    weft_wait_fail(WEFT_DEVICE_ERROR_TIMEOUT, op, peer, sig, cmp, expected, observed, now - *start);
}

/* Spins until *sig cmp value holds (acquire), bounded by weft_state.timeout_ns and by the abort
 * flag. op and peer only describe the wait in the report. Returns the value seen. */
static __device__ __forceinline__ weft_u64_t weft_wait_until(const weft_u64_t *sig, int cmp,
                                                            weft_u64_t value, const char *op,
                                                            int peer) {
  weft_u64_t start = 0;
  for (unsigned spins = 0;; spins++) {
    weft_u64_t v = weft_ld_acquire(sig);
    if (weft_cmp(v, cmp, value)) return v;
    weft_spin_check(spins, &start, op, peer, sig, cmp, value, v);
  }
}

#endif
