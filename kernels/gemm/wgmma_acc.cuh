/*
 * kernels/gemm/wgmma_acc.cuh — weft_gemm_wgmma, the m64nNk16 wgmma of weft's GEMM
 * (kernels/gemm/gemm.cu): A and B from shared memory (descriptors: kernels/gemm/wgmma.cuh), D in
 * a warpgroup's fp32 accumulators, N / 2 registers a thread. The accumulator macros build its asm
 * text for one width, N = WEFT_GEMM_WG_N (32 to 256 in steps of 16), with the input type of
 * WEFT_GEMM_DTYPE_IN and A or B read transposed where WEFT_GEMM_A_KMAJOR or WEFT_GEMM_B_KMAJOR is
 * 0.
 *
 * Expects nothing before it: kernels/gemm/config.cuh, which it includes, takes those defines from
 * the command line (or gives their defaults) and derives WEFT_GEMM_WG_N.
 */
#ifndef WEFT_KERNELS_GEMM_WGMMA_ACC_CUH
#define WEFT_KERNELS_GEMM_WGMMA_ACC_CUH

#include "kernels/gemm/config.cuh"
#include "kernels/gemm/ptx.cuh"

#if WEFT_GEMM_DTYPE_IN == 0
#define WEFT_GEMM_WGMMA_TYPES "f32.bf16.bf16"
#else
#define WEFT_GEMM_WGMMA_TYPES "f32.f16.f16"
#endif
#define WEFT_GEMM_TRANS_A (1 - WEFT_GEMM_A_KMAJOR)
#define WEFT_GEMM_TRANS_B (1 - WEFT_GEMM_B_KMAJOR)

/* ---------------------------------------------------------------------------------------- */
/* wgmma m64nWG_Nk16, A and B from shared memory, D += A*B (scale_d = 0: D = A*B)            */
/* ---------------------------------------------------------------------------------------- */
/* The instruction names every accumulator register: WG_N/2 floats, in chunks of 8 (chunk c:
 * d[8c..8c+7], present when WG_N > 16c: its register numbers S<c> and operands O<c>). The
 * width's line of WEFT_GEMM_ACC_END names the shape and the operands after the list: the
 * descriptors (%WG_N/2, %WG_N/2+1) and scale_d (%WG_N/2+2). */
#define WEFT_GEMM_D8(i)                                                                         \
  "+f"(d[i]), "+f"(d[i + 1]), "+f"(d[i + 2]), "+f"(d[i + 3]), "+f"(d[i + 4]), "+f"(d[i + 5]),      \
      "+f"(d[i + 6]), "+f"(d[i + 7])
#define WEFT_GEMM_ACC_S0 "%0, %1, %2, %3, %4, %5, %6, %7"
#define WEFT_GEMM_ACC_O0 WEFT_GEMM_D8(0)
#define WEFT_GEMM_ACC_S1 ", %8, %9, %10, %11, %12, %13, %14, %15"
#define WEFT_GEMM_ACC_O1 , WEFT_GEMM_D8(8)
#if WEFT_GEMM_WG_N > 32
#define WEFT_GEMM_ACC_S2 ", %16, %17, %18, %19, %20, %21, %22, %23"
#define WEFT_GEMM_ACC_O2 , WEFT_GEMM_D8(16)
#else
#define WEFT_GEMM_ACC_S2 ""
#define WEFT_GEMM_ACC_O2
#endif
#if WEFT_GEMM_WG_N > 48
#define WEFT_GEMM_ACC_S3 ", %24, %25, %26, %27, %28, %29, %30, %31"
#define WEFT_GEMM_ACC_O3 , WEFT_GEMM_D8(24)
#else
#define WEFT_GEMM_ACC_S3 ""
#define WEFT_GEMM_ACC_O3
#endif
#if WEFT_GEMM_WG_N > 64
#define WEFT_GEMM_ACC_S4 ", %32, %33, %34, %35, %36, %37, %38, %39"
#define WEFT_GEMM_ACC_O4 , WEFT_GEMM_D8(32)
#else
#define WEFT_GEMM_ACC_S4 ""
#define WEFT_GEMM_ACC_O4
#endif
#if WEFT_GEMM_WG_N > 80
#define WEFT_GEMM_ACC_S5 ", %40, %41, %42, %43, %44, %45, %46, %47"
#define WEFT_GEMM_ACC_O5 , WEFT_GEMM_D8(40)
#else
#define WEFT_GEMM_ACC_S5 ""
#define WEFT_GEMM_ACC_O5
#endif
#if WEFT_GEMM_WG_N > 96
#define WEFT_GEMM_ACC_S6 ", %48, %49, %50, %51, %52, %53, %54, %55"
#define WEFT_GEMM_ACC_O6 , WEFT_GEMM_D8(48)
#else
#define WEFT_GEMM_ACC_S6 ""
#define WEFT_GEMM_ACC_O6
#endif
#if WEFT_GEMM_WG_N > 112
#define WEFT_GEMM_ACC_S7 ", %56, %57, %58, %59, %60, %61, %62, %63"
#define WEFT_GEMM_ACC_O7 , WEFT_GEMM_D8(56)
#else
#define WEFT_GEMM_ACC_S7 ""
#define WEFT_GEMM_ACC_O7
#endif
#if WEFT_GEMM_WG_N > 128
#define WEFT_GEMM_ACC_S8 ", %64, %65, %66, %67, %68, %69, %70, %71"
#define WEFT_GEMM_ACC_O8 , WEFT_GEMM_D8(64)
#else
#define WEFT_GEMM_ACC_S8 ""
#define WEFT_GEMM_ACC_O8
#endif
#if WEFT_GEMM_WG_N > 144
#define WEFT_GEMM_ACC_S9 ", %72, %73, %74, %75, %76, %77, %78, %79"
#define WEFT_GEMM_ACC_O9 , WEFT_GEMM_D8(72)
#else
#define WEFT_GEMM_ACC_S9 ""
#define WEFT_GEMM_ACC_O9
#endif
#if WEFT_GEMM_WG_N > 160
#define WEFT_GEMM_ACC_S10 ", %80, %81, %82, %83, %84, %85, %86, %87"
#define WEFT_GEMM_ACC_O10 , WEFT_GEMM_D8(80)
#else
#define WEFT_GEMM_ACC_S10 ""
#define WEFT_GEMM_ACC_O10
#endif
#if WEFT_GEMM_WG_N > 176
#define WEFT_GEMM_ACC_S11 ", %88, %89, %90, %91, %92, %93, %94, %95"
#define WEFT_GEMM_ACC_O11 , WEFT_GEMM_D8(88)
#else
#define WEFT_GEMM_ACC_S11 ""
#define WEFT_GEMM_ACC_O11
#endif
#if WEFT_GEMM_WG_N > 192
#define WEFT_GEMM_ACC_S12 ", %96, %97, %98, %99, %100, %101, %102, %103"
#define WEFT_GEMM_ACC_O12 , WEFT_GEMM_D8(96)
#else
#define WEFT_GEMM_ACC_S12 ""
#define WEFT_GEMM_ACC_O12
#endif
#if WEFT_GEMM_WG_N > 208
#define WEFT_GEMM_ACC_S13 ", %104, %105, %106, %107, %108, %109, %110, %111"
#define WEFT_GEMM_ACC_O13 , WEFT_GEMM_D8(104)
#else
#define WEFT_GEMM_ACC_S13 ""
#define WEFT_GEMM_ACC_O13
#endif
#if WEFT_GEMM_WG_N > 224
#define WEFT_GEMM_ACC_S14 ", %112, %113, %114, %115, %116, %117, %118, %119"
#define WEFT_GEMM_ACC_O14 , WEFT_GEMM_D8(112)
#else
#define WEFT_GEMM_ACC_S14 ""
#define WEFT_GEMM_ACC_O14
#endif
#if WEFT_GEMM_WG_N > 240
#define WEFT_GEMM_ACC_S15 ", %120, %121, %122, %123, %124, %125, %126, %127"
#define WEFT_GEMM_ACC_O15 , WEFT_GEMM_D8(120)
#else
#define WEFT_GEMM_ACC_S15 ""
#define WEFT_GEMM_ACC_O15
#endif
#if WEFT_GEMM_WG_N == 32
#define WEFT_GEMM_ACC_END "m64n32k16", "%16, %17", "%18"
#elif WEFT_GEMM_WG_N == 48
#define WEFT_GEMM_ACC_END "m64n48k16", "%24, %25", "%26"
#elif WEFT_GEMM_WG_N == 64
#define WEFT_GEMM_ACC_END "m64n64k16", "%32, %33", "%34"
#elif WEFT_GEMM_WG_N == 80
#define WEFT_GEMM_ACC_END "m64n80k16", "%40, %41", "%42"
#elif WEFT_GEMM_WG_N == 96
#define WEFT_GEMM_ACC_END "m64n96k16", "%48, %49", "%50"
#elif WEFT_GEMM_WG_N == 112
#define WEFT_GEMM_ACC_END "m64n112k16", "%56, %57", "%58"
#elif WEFT_GEMM_WG_N == 128
#define WEFT_GEMM_ACC_END "m64n128k16", "%64, %65", "%66"
#elif WEFT_GEMM_WG_N == 144
#define WEFT_GEMM_ACC_END "m64n144k16", "%72, %73", "%74"
#elif WEFT_GEMM_WG_N == 160
#define WEFT_GEMM_ACC_END "m64n160k16", "%80, %81", "%82"
#elif WEFT_GEMM_WG_N == 176
#define WEFT_GEMM_ACC_END "m64n176k16", "%88, %89", "%90"
#elif WEFT_GEMM_WG_N == 192
#define WEFT_GEMM_ACC_END "m64n192k16", "%96, %97", "%98"
#elif WEFT_GEMM_WG_N == 208
#define WEFT_GEMM_ACC_END "m64n208k16", "%104, %105", "%106"
#elif WEFT_GEMM_WG_N == 224
#define WEFT_GEMM_ACC_END "m64n224k16", "%112, %113", "%114"
#elif WEFT_GEMM_WG_N == 240
#define WEFT_GEMM_ACC_END "m64n240k16", "%120, %121", "%122"
#elif WEFT_GEMM_WG_N == 256
#define WEFT_GEMM_ACC_END "m64n256k16", "%128, %129", "%130"
#endif
/* the asm text, from WEFT_GEMM_ACC_END's three strings */
#define WEFT_GEMM_ACC_ASM(shape, in, scale)                                                      \
  "{\n.reg .pred p;\nsetp.ne.b32 p, " scale ", 0;\n"                                             \
  "wgmma.mma_async.sync.aligned." shape "." WEFT_GEMM_WGMMA_TYPES " {" WEFT_GEMM_ACC_S0             \
  WEFT_GEMM_ACC_S1 WEFT_GEMM_ACC_S2 WEFT_GEMM_ACC_S3 WEFT_GEMM_ACC_S4 WEFT_GEMM_ACC_S5              \
  WEFT_GEMM_ACC_S6 WEFT_GEMM_ACC_S7 WEFT_GEMM_ACC_S8 WEFT_GEMM_ACC_S9 WEFT_GEMM_ACC_S10             \
  WEFT_GEMM_ACC_S11 WEFT_GEMM_ACC_S12 WEFT_GEMM_ACC_S13 WEFT_GEMM_ACC_S14 WEFT_GEMM_ACC_S15         \
  "}, " in ", p, 1, 1, " WEFT_GEMM_STR(WEFT_GEMM_TRANS_A) ", " WEFT_GEMM_STR(WEFT_GEMM_TRANS_B) ";\n}\n"
#define WEFT_GEMM_APPLY(macro, args) macro(args)
__device__ __forceinline__ void weft_gemm_wgmma(float *d, u64 da, u64 db, int scale_d) {
  asm volatile(WEFT_GEMM_APPLY(WEFT_GEMM_ACC_ASM, WEFT_GEMM_ACC_END)
               : WEFT_GEMM_ACC_O0 WEFT_GEMM_ACC_O1 WEFT_GEMM_ACC_O2 WEFT_GEMM_ACC_O3 WEFT_GEMM_ACC_O4
                 WEFT_GEMM_ACC_O5 WEFT_GEMM_ACC_O6 WEFT_GEMM_ACC_O7 WEFT_GEMM_ACC_O8 WEFT_GEMM_ACC_O9
                 WEFT_GEMM_ACC_O10 WEFT_GEMM_ACC_O11 WEFT_GEMM_ACC_O12 WEFT_GEMM_ACC_O13
                 WEFT_GEMM_ACC_O14 WEFT_GEMM_ACC_O15
               : "l"(da), "l"(db), "r"(scale_d));
}

#endif
