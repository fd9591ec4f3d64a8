/*
 * kernels/gemm/hooks.cuh — the device functions of weft's GEMM (kernels/gemm/gemm.cu) that its
 * overlap hooks use: the notify (a release add on a counter, at gpu or sys scope:
 * WEFT_GEMM_NOTIFY_SYS) and, in a kernel that waits (WEFT_GEMM_HOOK_WAIT: AG+GEMM's per-tile
 * wait; WEFT_GEMM_AR_OWN: GEMM + AllReduce's waits for the peers' partials), the bounded wait on
 * a signal word, the report of a timeout or an abort into the runtime's host-mapped error
 * record, and weft_state, the module's state block that the runtime fills (the rank, the node's
 * abort word).
 *
 * Expects nothing before it: includes kernels/gemm/config.cuh (the defines), kernels/gemm/ptx.cuh
 * and weft/state.h. A kernel that includes weft/device.cuh, which declares weft_state too, takes
 * the waits from there instead.
 */
#ifndef WEFT_KERNELS_GEMM_HOOKS_CUH
#define WEFT_KERNELS_GEMM_HOOKS_CUH

#include "weft/state.h"
#include "kernels/gemm/config.cuh"
#include "kernels/gemm/ptx.cuh"

/* Notify: +n on a counter, released at gpu or sys scope (the data it guards must already be
 * complete and, if written by TMA, fenced with fence.proxy.async.global). Several counters
 * behind one memory barrier: weft_gemm_notify_fence, then weft_gemm_notify_relaxed on each (a
 * relaxed add after a release one could be performed before it). */
#if WEFT_GEMM_NOTIFY_SYS
#define WEFT_GEMM_NOTIFY_SCOPE "sys"
#else
#define WEFT_GEMM_NOTIFY_SCOPE "gpu"
#endif
__device__ __forceinline__ void weft_gemm_notify(u64 *ctr, u64 n) {
  asm volatile("red.release." WEFT_GEMM_NOTIFY_SCOPE ".global.add.u64 [%0], %1;" ::"l"(ctr), "l"(n)
               : "memory");
}
__device__ __forceinline__ void weft_gemm_notify_fence(void) {
  asm volatile("fence.acq_rel." WEFT_GEMM_NOTIFY_SCOPE ";" ::: "memory");
}
__device__ __forceinline__ void weft_gemm_notify_relaxed(u64 *ctr, u64 n) {
  asm volatile("red.relaxed." WEFT_GEMM_NOTIFY_SCOPE ".global.add.u64 [%0], %1;" ::"l"(ctr), "l"(n)
               : "memory");
}

#if WEFT_GEMM_HOOK_WAIT || WEFT_GEMM_AR_OWN || WEFT_GEMM_GROUP_WAIT
/* The runtime's state block (weft/device.cuh declares it for the device library, which this
 * kernel does not include): the rank and the node's abort word, for the waits below. */
__constant__ weft_device_state_t weft_state;

/* Bounded spin on one signal word (written by a peer GPU, the copy engine or the host: .sys
 * acquire). `abortable` (the waiter thread's): it also ends when the node's abort word is raised,
 * read every 1024 spins; the own-segment waits of AR_OWN, in threads that hold a tile's
 * accumulators, keep the bare deadline (the spin count spilled them). Returns 0 when the signal
 * reached `expected`, else WEFT_DEVICE_ERROR_TIMEOUT or WEFT_DEVICE_ERROR_ABORTED with the last
 * value seen in *observed. The report (and trap) is made by the caller: a call (printf) reachable
 * here would make ptxas serialise every wgmma (C7510). */
__device__ __forceinline__ unsigned weft_gemm_wait_signal(const u64 *sig, u64 expected,
                                                          u64 timeout_ns, u64 *observed,
                                                          int abortable) {
  u64 v = weft_gemm_ld_acquire_sys(sig);
  if (v >= expected) return 0;
  u64 t0 = weft_gemm_globaltimer();
  for (unsigned spins = 1;; spins++) {
    v = weft_gemm_ld_acquire_sys(sig);
    if (v >= expected) return 0;
    if (!abortable) {
      if (weft_gemm_globaltimer() - t0 > timeout_ns) {
        *observed = v;
        return WEFT_DEVICE_ERROR_TIMEOUT;
      }
    } else if ((spins & 1023) == 0) {
      const volatile unsigned *ab = (const volatile unsigned *)weft_state.abort_flag;
      unsigned st = ab && *ab ? WEFT_DEVICE_ERROR_ABORTED
                    : weft_gemm_globaltimer() - t0 > timeout_ns ? WEFT_DEVICE_ERROR_TIMEOUT
                                                                : 0u;
      if (st) {
        *observed = v;
        return st;
      }
    }
  }
}

/* Fills the host-mapped error record (first reporter wins) with status (a timeout or an abort):
 * op "<op> tile <t>" (ag_gemm's per-tile wait, or gemm_ar's own-segment waits), this rank, the
 * peer whose signal it waited on (signal s of ag_gemm is rank s's rows; flag q of gemm_ar is
 * peer q's; -1 for a word many peers count on), the signal's index, expected and observed. Out
 * of line: inlined into the threads that hold a tile's accumulators (or the summers' 48
 * registers), its stores spilled them; it calls nothing outside the module (see above). */
__device__ __noinline__ void weft_gemm_report(weft_device_error_t *e, unsigned status, int tile,
                                             int peer, int index, u64 expected, u64 observed) {
  if (!e || atomicCAS_system((unsigned *)&e->status, 0u, WEFT_DEVICE_ERROR_BUSY) != 0u) return;
  e->rank = weft_state.rank;
  e->peer = peer;
  e->cmp = 3; /* WEFT_CMP_GE */
  e->signal_index = (u64)index;
  e->expected = expected;
  e->observed = observed;
#if WEFT_GEMM_HOOK_WAIT
  const char *pre = "ag_gemm tile ";
#elif WEFT_GEMM_GROUP_WAIT
  const char *pre = "ag_moe tile ";
#else
  const char *pre = "gemm_ar tile ";
#endif
  int i = 0;
  for (; pre[i]; i++) e->op[i] = pre[i];
  unsigned t = (unsigned)tile;
  int n = 1;
  for (unsigned x = t; x >= 10; x /= 10) n++;
  for (int k = n - 1; k >= 0; k--, t /= 10) e->op[i + k] = (char)('0' + t % 10);
  e->op[i + n] = 0;
  __threadfence_system();
  *(volatile unsigned *)&e->status = status;
  __threadfence_system();
}
#endif

#endif
