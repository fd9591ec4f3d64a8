/*
 * kernels/gemm_rs.cu — the reduction of GEMM + ReduceScatter and of GEMM + AllReduce's
 * copy-engine form (src/ops/gemm_rs.c launches it). Every peer puts its partial product of this
 * rank's segment ([m / world, n] elements of fp16, bf16 or fp32) into its staging slot here and
 * counts it on this rank's arrival flag of that peer, with a system-scope release after the data:
 * the copy-engine forms set the flag to the number of the segment's chunks copied so far; the
 * fused-scatter form's GEMM adds 1 per stored sub-tile (the host knows how many make the
 * segment). The kernel sums the segment chunk by chunk in rank order, the rank's own partial read
 * at `own`, each chunk once every peer's flag reaches `expected` times the chunks up to it (and,
 * with own_ctr, once this rank's GEMM has stored the chunk's rows).
 *
 *   weft_gemm_rs_reduce  out[i] = sum over ranks r in order of (r == me ? own[i] : slot r [i]),
 *                        i < n elements, in chunks of `chunk` elements. Slot r starts at
 *                        staging + r * slot_bytes, the segment inside it at byte `offset` (the
 *                        copy-engine forms: own & 15, so that every source shares own's alignment
 *                        mod 16 for 16-byte vectors; the fused scatter: where the 64-row blocks
 *                        put it). flags: this rank's [world] arrival flags (symmetric; reset to 0
 *                        by the host's stream after the call). own_ctr (or NULL): chunk j's rows
 *                        are stored once own_ctr[j] >= own_expected (the GEMM's notify counters:
 *                        GEMM + AllReduce runs this kernel beside the GEMM of its own segment).
 *                        push 0: out is this rank's; push 1: the sums go to `out` on every rank
 *                        (symmetric: the AllGather fused into the stores), and the call ends with
 *                        a handshake under the GEMM_AR epoch: the last block to finish sets "done
 *                        e" on every rank and waits for every rank's, so that no rank's out is
 *                        read before every peer's stores into it have landed.
 */
#include <weft/device.cuh>
#include <weft/reduce.cuh>

/* 512 threads (src/ops/gemm_rs.c, GEMM_RS_THREADS) */
extern "C" __global__ void __launch_bounds__(512)
    weft_gemm_rs_reduce(const char *own, const char *staging, unsigned long long slot_bytes,
                        unsigned long long offset, char *out, unsigned long long n,
                        unsigned long long chunk, int dtype, const unsigned long long *flags,
                        unsigned long long expected, const unsigned long long *own_ctr,
                        unsigned long long own_expected, int push) {
  __shared__ const char *srcs[WEFT_MAX_LOCAL_RANKS];
  __shared__ char *dsts[WEFT_MAX_LOCAL_RANKS];
  int world = weft_state.local_world, me = weft_state.local_rank, first = weft_state.node_first_rank;
  unsigned t = threadIdx.x;
  weft_u64_t e = push ? weft_epoch_begin(WEFT_EPOCH_GEMM_AR) : 0, es = dtype == WEFT_RED_FP32 ? 4 : 2;
  for (weft_u64_t j = 0, lo = 0; lo < n; j++, lo += chunk) {
    for (int p = (int)t; p < world; p += (int)blockDim.x) {
      srcs[p] = (p == me ? own : staging + (weft_u64_t)p * slot_bytes + offset) + lo * es;
      /* own out first, then the next ranks' (spreads the stores) */
      dsts[p] = push ? (char *)weft_remote_ptr(out + lo * es, first + (me + p) % world) : out + lo * es;
      if (p != me)
        weft_wait_until(flags + p, WEFT_CMP_GE, expected * (j + 1), "gemm_rs(arrival)", first + p);
      else if (own_ctr)
        weft_wait_until(own_ctr + j, WEFT_CMP_GE, own_expected, "gemm_ar(own rows stored)", weft_state.rank);
    }
    __syncthreads();
    weft_red_sum_range(srcs, world, dsts, push ? world : 1, n - lo < chunk ? n - lo : chunk, dtype,
                       blockIdx.x * (weft_u64_t)blockDim.x + t, gridDim.x * (weft_u64_t)blockDim.x);
    __syncthreads(); /* srcs and dsts are rewritten for the next chunk */
  }
  if (push && t == 0 && weft_epoch_last_block(WEFT_EPOCH_GEMM_AR)) {
    weft_op_signal_all(WEFT_FLAGS_GEMM_AR_DONE, e);
    for (int p = 0; p < world; p++)
      if (p != me) weft_op_wait(WEFT_FLAGS_GEMM_AR_DONE, p, e, "gemm_ar(done)");
    weft_epoch_publish(WEFT_EPOCH_GEMM_AR, e);
  }
}
