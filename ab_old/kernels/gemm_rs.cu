/*
 * kernels/gemm_rs.cu — the reduction of GEMM + ReduceScatter and of GEMM + AllReduce's
 * copy-engine form (src/ops/gemm_rs.c launches it on the caller's stream after the GEMM). Every
 * peer has put its partial product of this rank's segment ([m / world, n] elements of fp16, bf16
 * or fp32) into its staging slot here and counted it on this rank's arrival flag of that peer,
 * with a system-scope release after the data: the copy-engine form sets the flag to 1 once the
 * whole segment is copied; the fused-scatter form's GEMM adds 1 per stored sub-tile (the host
 * knows how many make the segment). The kernel waits for every peer's flag to reach `expected`
 * and sums the segment in rank order, the rank's own partial read at `own`.
 *
 *   weft_gemm_rs_reduce  out[i] = sum over ranks r in order of (r == me ? own[i] : slot r [i]),
 *                        i < n elements. Slot r starts at staging + r * slot_bytes, the segment
 *                        inside it at byte `offset` (the copy-engine form: own & 15, so that
 *                        every source shares own's alignment mod 16 for 16-byte vectors; the
 *                        fused scatter: where the 64-row blocks put it). flags: this rank's
 *                        [world] arrival flags (symmetric; reset to 0 by the host's stream after
 *                        the call). push 0: out is this rank's. push 1 (GEMM + AllReduce): the
 *                        sums go to `out` on every rank (symmetric: the AllGather fused into the
 *                        stores), and the call ends with a handshake under the GEMM_AR epoch:
 *                        the last block to finish sets "done e" on every rank and waits for
 *                        every rank's, so that no rank's out is read before every peer's stores
 *                        into it have landed.
 */
#include <weft/device.cuh>
#include <weft/reduce.cuh>

/* A peer's arrival flag here reaching `expected`. Out of line: inlined, the wait's deadline
 * bookkeeping stayed live into the sum loop, and 128 registers spilled 8 bytes. */
static __device__ __noinline__ void gemm_rs_arrival(const unsigned long long *flag,
                                                    unsigned long long expected, int pe) {
  weft_wait_until(flag, WEFT_CMP_GE, expected, "gemm_rs(arrival)", pe);
}

/* 512 threads (src/ops/gemm_rs.c, GEMM_RS_THREADS) */
extern "C" __global__ void __launch_bounds__(512)
    weft_gemm_rs_reduce(const char *own, const char *staging, unsigned long long slot_bytes,
                        unsigned long long offset, char *out, unsigned long long n, int dtype,
                        const unsigned long long *flags, unsigned long long expected, int push) {
  __shared__ const char *srcs[WEFT_MAX_LOCAL_RANKS];
  __shared__ char *dsts[WEFT_MAX_LOCAL_RANKS];
  int world = weft_state.local_world, me = weft_state.local_rank, first = weft_state.node_first_rank;
  unsigned t = threadIdx.x;
  weft_u64_t e = push ? weft_epoch_begin(WEFT_EPOCH_GEMM_AR) : 0;
  for (int p = (int)t; p < world; p += (int)blockDim.x) {
    srcs[p] = p == me ? own : staging + (weft_u64_t)p * slot_bytes + offset;
    dsts[p] = push ? (char *)weft_remote_ptr(out, weft_local_next(p)) : out; /* own first */
    if (p != me) gemm_rs_arrival(flags + p, expected, first + p);
  }
  __syncthreads();
  weft_red_sum_range(srcs, world, dsts, push ? world : 1, n, dtype,
                     blockIdx.x * (weft_u64_t)blockDim.x + t, gridDim.x * (weft_u64_t)blockDim.x);
  if (!push) return;
  __syncthreads();
  if (t == 0) weft_epoch_done_all(WEFT_EPOCH_GEMM_AR, WEFT_FLAGS_GEMM_AR_DONE, e, "gemm_ar(done)");
}
