#!/usr/bin/env bash
# One GPU call for the split tail (WEFT_GEMM_TAIL): the GEMM's GPU tests, the overlapped ops'
# tests on one GPU (ranks sharing it; with TAIL_SHARED=1), then weft-bench gemm on its 21 default large shapes, the
# build of <commit> (before the split tail) and the working tree alternating (A B A B).
#   [TAIL_SHARED=1] bash dev/gemm/tail_ab.sh <commit> [weft-bench gemm args: default the
#   21 shapes, -n 15]                             (logs under $OUT)
set -uo pipefail
export NCCL_NVLS_ENABLE=0 NVSHMEM_DISABLE_NVLS=1 TORCH_SYMM_MEM_DISABLE_MULTICAST=1
cd "$(dirname "$0")/../.."
out=${OUT:-gpu-logs}; mkdir -p "$out"
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release > "$out/build.log" 2>&1 &&
  cmake --build build -j16 >> "$out/build.log" 2>&1 || { tail -30 "$out/build.log"; exit 1; }
(cd build && timeout 300 ctest -V -R gpu_test_gemm) > "$out/ctest_gemm.log" 2>&1
grep -E "^[0-9]+: (FAIL|ok +tail|ok +split tail|ok +the same)|checks passed|tests passed|tests failed" "$out/ctest_gemm.log" | head -40
[ -n "${TAIL_SHARED:-}" ] && OUT=$out/shared WEFT_TEST_BUDGET=240 bash dev/device/shared_gpu_tests.sh "overlap_np2"
large="-s 8192,8192,8192 -s 8192,2752,4096 -s 8192,4096,2752 -s 8192,3584,4096 -s 8192,4096,3584
 -s 8192,7168,8192 -s 8192,8192,7168 -s 8192,13312,16384 -s 8192,16384,13312 -s 8192,7392,8192
 -s 8192,8192,7392 -s 8192,1376,4096 -s 8192,4096,1376 -s 8192,1792,4096 -s 8192,4096,1792
 -s 8192,3584,8192 -s 8192,8192,3584 -s 8192,6656,16384 -s 8192,16384,6656 -s 8192,3696,8192
 -s 8192,8192,3696"
old=$1; shift
if [ $# -gt 0 ]; then OUT=$out bash dev/gemm/ab_build.sh "$old" "$@"; else OUT=$out bash dev/gemm/ab_build.sh "$old" $large -n 15; fi
