/*
 * kernels/gemm_rs.cu — the reduction of GEMM + ReduceScatter (src/ops/gemm_rs.c launches it on
 * the caller's stream after the GEMM). Every peer has put its partial product of this rank's
 * segment ([m / world, n] elements of fp16, bf16 or fp32) into its staging slot here and counted
 * it on this rank's arrival flag of that peer, with a system-scope release after the data: the
 * copy-engine form sets the flag to 1 once the whole segment is copied; the fused-scatter form's
 * GEMM adds 1 per stored sub-tile (the host knows how many make the segment). The kernel waits
 * for every peer's flag to reach `expected` and sums the segment in rank order, the rank's own
 * partial read at `own`.
 *
 *   weft_gemm_rs_reduce  out[i] = sum over ranks r in order of (r == me ? own[i] : slot r [i]),
 *                        i < n elements. Slot r starts at staging + r * slot_bytes, the segment
 *                        inside it at byte `offset` (the copy-engine form: own & 15, so that
 *                        every source shares own's alignment mod 16 for 16-byte vectors; the
 *                        fused scatter: where the 64-row blocks put it). flags: this rank's
 *                        [world] arrival flags (symmetric; reset to 0 by the host's stream after
 *                        the call).
 */
#include <weft/device.cuh>
#include <weft/reduce.cuh>

/* 512 threads (src/ops/gemm_rs.c, GEMM_RS_THREADS) */
extern "C" __global__ void __launch_bounds__(512)
    weft_gemm_rs_reduce(const char *own, const char *staging, unsigned long long slot_bytes,
                        unsigned long long offset, char *out, unsigned long long n, int dtype,
                        const unsigned long long *flags, unsigned long long expected) {
  __shared__ const char *srcs[WEFT_MAX_LOCAL_RANKS];
  __shared__ char *dsts[1];
  int world = weft_state.local_world, me = weft_state.local_rank;
  for (int p = (int)threadIdx.x; p < world; p += (int)blockDim.x) {
    srcs[p] = p == me ? own : staging + (weft_u64_t)p * slot_bytes + offset;
    if (p != me)
      weft_wait_until(flags + p, WEFT_CMP_GE, expected, "gemm_rs(arrival)", weft_state.node_first_rank + p);
  }
  if (threadIdx.x == 0) dsts[0] = out;
  __syncthreads();
  weft_red_sum_range(srcs, world, dsts, 1, n, dtype, blockIdx.x * (weft_u64_t)blockDim.x + threadIdx.x,
                     gridDim.x * (weft_u64_t)blockDim.x);
}
