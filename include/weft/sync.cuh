/*
 * weft/sync.cuh — memory-ordering primitives and the timed wait every spin in weft goes through.
 *
 * Provides: weft_ld_acquire (.sys) / weft_ld_acquire_gpu, weft_st_release (.sys) /
 * weft_st_release_gpu, weft_red_release (.sys add) / weft_red_release_gpu, weft_atomic_add,
 * weft_atomic_cas (acq_rel, .sys), weft_fence (fence.acq_rel.sys), weft_quiet, weft_globaltimer,
 * weft_pdl_begin (the start of a kernel launched for programmatic dependent launch),
 * weft_wait_until (the bounded acquire spin), weft_spin_check (the deadline/abort check that
 * hand-written polls, e.g. the LL ones, call on every spin) and weft_error_record (what a kernel
 * reports to the host: the waits on expiry, weft_alltoallv on disagreeing counts).
 *
 * Ordering rules:
 * - Scope: anything another GPU, the host or the copy engine reads or writes uses .sys; .gpu only
 *   between blocks of one GPU (same memory-sync domain).
 * - A producer signals with a release (st.release / red.release / atom.acq_rel), a consumer waits
 *   with ld.acquire, so data written before the signal is visible to loads after the wait.
 * - A whole block's data behind one signal: __syncthreads() (bar.sync orders the block's writes
 *   before it), then ONE thread releases; release is cumulative over what that thread observed.
 * - One thread's wait for a whole block: that thread acquires, then __syncthreads().
 * - weft_fence orders this thread's earlier accesses before its later ones (e.g. puts before a
 *   relaxed flag store); weft_quiet additionally is sequentially consistent (OpenSHMEM's quiet:
 *   every earlier put is complete w.r.t. every later access of any kind).
 *
 * Every wait is bounded: weft_state.timeout_ns from the first check, polled with %globaltimer;
 * the host-mapped abort flag (weft_comm_abort) is read every 1024 spins as well. On expiry or
 * abort the wait fills the host-mapped error record (first reporter only) and traps (a timeout)
 * or exits the thread (an abort); the host's watchdog prints one line per rank from the record
 * (rank, peer, signal and values) and raises the node's abort word, which ends the other ranks'
 * waits (src/runtime/watchdog.c).
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
/* A count that orders nothing (its readers wait for the count alone, no data behind it). */
static __device__ __forceinline__ void weft_red_relaxed(weft_u64_t *p, weft_u64_t v) {
  asm volatile("red.relaxed.sys.global.add.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
}
/* Same-GPU forms (block to block on one GPU, e.g. a GEMM's tiles to a communication block). */
static __device__ __forceinline__ void weft_st_release_gpu(weft_u64_t *p, weft_u64_t v) {
  asm volatile("st.release.gpu.global.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
}
static __device__ __forceinline__ void weft_red_release_gpu(weft_u64_t *p, weft_u64_t v) {
  asm volatile("red.release.gpu.global.add.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
}
/* Atomics return the old value; acq_rel at system scope, so they may guard data themselves. */
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
/* The calling thread's linear index in its block, the block's size, and its lane in its warp
 * (warps are formed from linear indices, so this is right for 2-D and 3-D blocks too). */
static __device__ __forceinline__ unsigned weft_thread_rank(void) {
  return threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
}
static __device__ __forceinline__ unsigned weft_block_size(void) {
  return blockDim.x * blockDim.y * blockDim.z;
}
static __device__ __forceinline__ unsigned weft_lane(void) {
  unsigned l;
  asm volatile("mov.u32 %0, %%laneid;" : "=r"(l));
  return l;
}

static __device__ __forceinline__ weft_u64_t weft_globaltimer(void) {
  weft_u64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

/* Programmatic dependent launch (weft_launch_config_t.programmatic): the kernel's blocks may be
 * scheduled while the stream's previous kernel still runs, so that its launch latency hides
 * behind that kernel. weft_pdl_begin is then the first statement: it waits until the previous
 * kernel has completed and its writes are visible (griddepcontrol.wait: a no-op for a launch
 * without the attribute), then lets the stream's next such kernel be scheduled already. Its
 * blocks wait in their own weft_pdl_begin, beside this grid, which is wholly resident by then
 * (the next grid is scheduled only once every block of this one has begun): kernels that need
 * their whole grid resident (the LL forms) stay deadlock-free. */
static __device__ __forceinline__ void weft_pdl_begin(void) {
  asm volatile("griddepcontrol.wait;" ::: "memory");
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
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

/* Word offset of a signal inside its rank's heap, wherever it is mapped (this rank's heap or a
 * local peer's), or ~0 when it is not in the symmetric heap. */
static __device__ __forceinline__ weft_u64_t weft_signal_index(const void *sig) {
  weft_u64_t a = (weft_u64_t)sig;
  if (a < weft_state.heap_base || !weft_state.heap_stride) return ~0ull;
  weft_u64_t off = a - weft_state.heap_base;
  if (off / weft_state.heap_stride >= (weft_u64_t)weft_state.local_world) return ~0ull;
  off %= weft_state.heap_stride;
  return off < weft_state.heap_size ? off / 8 : ~0ull;
}

/* Writes the host-mapped error record if it is free (the first reporter wins, except that a fatal
 * report replaces a count mismatch or an invalid input, which let their kernels go on): claimed
 * with WEFT_DEVICE_ERROR_BUSY, filled, then given its status, so that the host never reads a status
 * with half-written fields. */
static __device__ __noinline__ void weft_error_record(unsigned status, const char *op, int peer,
                                                     int cmp, weft_u64_t index,
                                                     weft_u64_t expected, weft_u64_t observed) {
  weft_device_error_t *e = (weft_device_error_t *)weft_state.error;
  if (!e) return;
  /* System scope: the record is host memory, which the host frees with its own CAS. */
  unsigned old = atomicCAS_system((unsigned *)&e->status, 0u, WEFT_DEVICE_ERROR_BUSY);
  if ((old == WEFT_DEVICE_ERROR_MISMATCH || old == WEFT_DEVICE_ERROR_INVALID) &&
      (status == WEFT_DEVICE_ERROR_TIMEOUT || status == WEFT_DEVICE_ERROR_ABORTED))
    old = atomicCAS_system((unsigned *)&e->status, old, WEFT_DEVICE_ERROR_BUSY) == old ? 0u : old;
  if (old != 0u) return;
  e->rank = weft_state.rank;
  e->peer = peer;
  e->cmp = cmp;
  e->signal_index = index;
  e->expected = expected;
  e->observed = observed;
  int i = 0;
  for (; op[i] && i < (int)sizeof e->op - 1; i++) e->op[i] = op[i];
  e->op[i] = 0;
  __threadfence_system();
  *(volatile unsigned *)&e->status = status;
  __threadfence_system();
}

/* Writes the error record, then ends the thread: a timeout traps (the kernel ends, its stream
 * fails, and the host reads the record from host-mapped memory); an abort exits the thread, so
 * that the kernel ends with its results void but without failing the context (barriers for the
 * whole block or warp count exited threads as arrived, and the other threads reach a wait of
 * their own and exit there). Several contexts trapping at once on one GPU (ranks sharing it)
 * left one of them running for many seconds. No printf: every thread of a grid may get here, and
 * the watchdog says it once per rank (a trapped kernel's printf buffer may never be flushed). */
static __device__ __noinline__ void weft_wait_fail(unsigned status, const char *op, int peer,
                                                  const weft_u64_t *sig, int cmp,
                                                  weft_u64_t expected, weft_u64_t observed,
                                                  weft_u64_t waited_ns) {
  (void)waited_ns;
  weft_error_record(status, op, peer, cmp, weft_signal_index(sig), expected, observed);
  if (status == WEFT_DEVICE_ERROR_ABORTED) asm volatile("exit;");
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
