/*
 * kernels/gemm/cluster.cuh — the distributed shared memory PTX of weft's GEMM
 * (kernels/gemm/gemm.cu), for any kernel run in thread block clusters: an arrive on the
 * mbarrier at the same offset in another CTA of the cluster, and a 16-byte st.async into another
 * CTA's shared memory that completes bytes of its mbarrier. The kernel reads its CTA's rank in
 * the cluster and syncs the cluster inline; a TMA load multicast to the cluster's CTAs is in
 * kernels/gemm/tma.cuh.
 *
 * Expects nothing before it (includes kernels/gemm/ptx.cuh).
 */
#ifndef WEFT_KERNELS_GEMM_CLUSTER_CUH
#define WEFT_KERNELS_GEMM_CLUSTER_CUH

#include "kernels/gemm/ptx.cuh"

/* Arrive on the barrier at the same smem offset in CTA `cta` of the cluster (itself included).
 * The default (.release.cta) semantics: the arrival only says that this warpgroup's wgmmas have
 * finished reading the stage (wgmma.wait_group already ordered that). A .release.cluster arrive
 * makes ptxas put MEMBAR.ALL.GPU before it, once per k-block, which halved the 2x1-cluster
 * kernel's speed (H100: 360 against 690 TFLOP/s without clusters, 8192^3). */
__device__ __forceinline__ void weft_gemm_mbar_arrive_cluster(u32 bar, u32 cta) {
  asm volatile("{\n.reg .b32 ra;\n"
               "mapa.shared::cluster.u32 ra, %0, %1;\n"
               "mbarrier.arrive.shared::cluster.b64 _, [ra];\n}\n" ::"r"(bar),
               "r"(cta)
               : "memory");
}

/* 16 bytes into CTA `cta`'s shared memory at the offset of `addr` here, completing 16 bytes of
 * the transaction count of its mbarrier at the offset of `bar` (the data is visible to whoever
 * waits for that barrier's phase: no fence, no release). */
__device__ __forceinline__ void weft_gemm_st_async_v4(u32 addr, u32 cta, u32 bar, float x, float y,
                                                      float z, float w) {
  asm volatile("{\n.reg .b32 ra, rb;\n"
               "mapa.shared::cluster.u32 ra, %0, %1;\n"
               "mapa.shared::cluster.u32 rb, %2, %1;\n"
               "st.async.shared::cluster.mbarrier::complete_tx::bytes.v4.f32 [ra], {%3, %4, %5, %6}, [rb];\n}\n" ::"r"(addr),
               "r"(cta), "r"(bar), "f"(x), "f"(y), "f"(z), "f"(w)
               : "memory");
}

#endif
