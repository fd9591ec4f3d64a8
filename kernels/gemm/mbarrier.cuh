/*
 * kernels/gemm/mbarrier.cuh — the mbarrier PTX of weft's GEMM (kernels/gemm/gemm.cu), for any
 * kernel: initialise a barrier, arrive, arrive setting the transaction bytes that the phase
 * still waits for (TMA loads and st.async complete them), and wait for the phase of a parity to
 * complete, with CTA or cluster acquire semantics; cp.async's 16-byte copy and its arrival on a
 * barrier once landed. A barrier is a shared-memory address (u32:
 * weft_gemm_smem); an arrive on a peer CTA's barrier is in kernels/gemm/cluster.cuh.
 *
 * Expects nothing before it (includes kernels/gemm/ptx.cuh).
 */
#ifndef WEFT_KERNELS_GEMM_MBARRIER_CUH
#define WEFT_KERNELS_GEMM_MBARRIER_CUH

#include "kernels/gemm/ptx.cuh"

__device__ __forceinline__ void weft_gemm_mbar_init(u32 bar, u32 count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(bar), "r"(count) : "memory");
}

__device__ __forceinline__ void weft_gemm_mbar_expect_tx(u32 bar, u32 bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(bar), "r"(bytes)
               : "memory");
}

/* Waits for the phase of parity `parity` of a barrier of this CTA to complete, with the given
 * semantics ("": acquire at CTA scope; ".acquire.cluster": what peer CTAs wrote before their
 * arrivals, too). */
#define WEFT_GEMM_MBAR_WAIT(name, sem)                                                  \
  __device__ __forceinline__ void name(u32 bar, u32 parity) {                             \
    u32 ok;                                                                               \
    do {                                                                                  \
      asm volatile("{\n.reg .pred p;\n"                                                   \
                   "mbarrier.try_wait.parity" sem ".shared::cta.b64 p, [%1], %2;\n"      \
                   "selp.u32 %0, 1, 0, p;\n}\n"                                           \
                   : "=r"(ok)                                                             \
                   : "r"(bar), "r"(parity)                                                \
                   : "memory");                                                           \
    } while (!ok);                                                                        \
  }
WEFT_GEMM_MBAR_WAIT(weft_gemm_mbar_wait, "")
WEFT_GEMM_MBAR_WAIT(weft_gemm_mbar_wait_cluster, ".acquire.cluster")

__device__ __forceinline__ void weft_gemm_mbar_arrive(u32 bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(bar) : "memory");
}

/* cp.async of 16 bytes from global src to shared dst, the last 16 - src_bytes of them zeros
 * (src_bytes 0: all zeros, src not read), and the arrival on a barrier once this thread's
 * cp.asyncs so far have landed (noinc: the barrier's count includes it) */
__device__ __forceinline__ void weft_gemm_cp_async16(u32 dst, const void *src, u32 src_bytes) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(dst), "l"(src),
               "r"(src_bytes)
               : "memory");
}
__device__ __forceinline__ void weft_gemm_cp_async_arrive(u32 bar) {
  asm volatile("cp.async.mbarrier.arrive.noinc.shared::cta.b64 [%0];" ::"r"(bar) : "memory");
}

#endif
