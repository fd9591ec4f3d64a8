/*
 * kernels/gemm/ptx.cuh — the types and small PTX wrappers that every part of weft's GEMM
 * (kernels/gemm/gemm.cu) uses, and any other kernel may: u32 and u64, the shared-memory address
 * of a generic pointer, 32-bit shared loads and stores, a named barrier, a 16-byte load that
 * bypasses L1, %globaltimer, a .sys acquire load; WEFT_GEMM_STR, which turns a define's value
 * into asm text.
 *
 * Expects nothing before it. Device code for NVRTC: no system or CUDA headers.
 */
#ifndef WEFT_KERNELS_GEMM_PTX_CUH
#define WEFT_KERNELS_GEMM_PTX_CUH

#define WEFT_GEMM_STR2(x) #x
#define WEFT_GEMM_STR(x) WEFT_GEMM_STR2(x)

typedef unsigned long long u64;
typedef unsigned int u32;

__device__ __forceinline__ u32 weft_gemm_smem(const void *p) {
  return (u32)__cvta_generic_to_shared(p);
}

__device__ __forceinline__ u32 weft_gemm_ld_shared_u32(u32 addr) {
  u32 v;
  asm volatile("ld.shared.u32 %0, [%1];" : "=r"(v) : "r"(addr) : "memory");
  return v;
}
__device__ __forceinline__ void weft_gemm_st_shared_u32(u32 addr, u32 v) {
  asm volatile("st.shared.u32 [%0], %1;" ::"r"(addr), "r"(v) : "memory");
}

__device__ __forceinline__ void weft_gemm_named_sync(u32 id, u32 threads) {
  asm volatile("bar.sync %0, %1;" ::"r"(id), "r"(threads) : "memory");
}

__device__ __forceinline__ float4 weft_gemm_ld_cg_v4(const float4 *p) {
  float4 v;
  asm volatile("ld.global.cg.v4.f32 {%0, %1, %2, %3}, [%4];"
               : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w)
               : "l"(p));
  return v;
}

__device__ __forceinline__ u64 weft_gemm_globaltimer(void) {
  u64 t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

__device__ __forceinline__ u64 weft_gemm_ld_acquire_sys(const u64 *p) {
  u64 v;
  asm volatile("ld.acquire.sys.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
  return v;
}

#endif
