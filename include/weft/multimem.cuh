/*
 * weft/multimem.cuh — NVLink multicast loads with reduction and stores (multimem.ld_reduce,
 * multimem.st) on a multicast address. They compile everywhere; they run only where the runtime
 * created a multicast object, which it never does unless WEFT_ENABLE_MULTICAST=1 and no veto
 * variable is set (multicast can take shared GPUs out of service: docs/architecture.md,
 * "NVLink multicast is off"). Every entry point checks weft_state.multicast_enabled first and
 * traps with a message when it is 0.
 */
#ifndef WEFT_MULTIMEM_CUH
#define WEFT_MULTIMEM_CUH

#include "weft/sync.cuh"

static __device__ __forceinline__ void weft_multimem_guard(const char *op) {
  if (!weft_state.multicast_enabled) {
    printf("weft: rank %d: %s needs NVLink multicast, which is off (WEFT_ENABLE_MULTICAST)\n",
           weft_state.rank, op);
    asm volatile("trap;");
  }
}

/* Sum over all ranks of 4 fp32 values at multicast address mc (16-byte aligned). */
static __device__ __forceinline__ float4 weft_multimem_ld_reduce_f32x4(const float *mc) {
  weft_multimem_guard("multimem_ld_reduce");
  float4 v;
  asm volatile("multimem.ld_reduce.relaxed.sys.global.add.v4.f32 {%0, %1, %2, %3}, [%4];"
               : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w) : "l"(mc) : "memory");
  return v;
}

/* Sum over all ranks of 8 bf16 values (4 packed pairs), accumulated in fp32. */
static __device__ __forceinline__ uint4 weft_multimem_ld_reduce_bf16x8(const void *mc) {
  weft_multimem_guard("multimem_ld_reduce");
  uint4 v;
  asm volatile("multimem.ld_reduce.relaxed.sys.global.add.acc::f32.v4.bf16x2 {%0, %1, %2, %3}, [%4];"
               : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"(mc) : "memory");
  return v;
}

static __device__ __forceinline__ void weft_multimem_st_f32x4(float *mc, float4 v) {
  weft_multimem_guard("multimem_st");
  asm volatile("multimem.st.relaxed.sys.global.v4.f32 [%0], {%1, %2, %3, %4};" ::"l"(mc),
               "f"(v.x), "f"(v.y), "f"(v.z), "f"(v.w) : "memory");
}

static __device__ __forceinline__ void weft_multimem_st_bf16x8(void *mc, uint4 v) {
  weft_multimem_guard("multimem_st");
  asm volatile("multimem.st.relaxed.sys.global.v4.bf16x2 [%0], {%1, %2, %3, %4};" ::"l"(mc),
               "r"(v.x), "r"(v.y), "r"(v.z), "r"(v.w) : "memory");
}

#endif
