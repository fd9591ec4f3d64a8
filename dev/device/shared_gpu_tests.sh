#!/usr/bin/env bash
# The multi-rank GPU tests (2, 3 and 4 ranks) on a machine with fewer GPUs than ranks (one H100,
# say), as `make test` runs them there: ranks share the GPUs (WEFT_SHARE_GPUS=1, which ctest sets
# for those world sizes), their kernels take turns, so this checks correctness only.
#   [WEFT_TEST_BUDGET=s] bash dev/device/shared_gpu_tests.sh [ctest regex]    (logs under $OUT)
export NCCL_NVLS_ENABLE=0 NVSHMEM_DISABLE_NVLS=1 TORCH_SYMM_MEM_DISABLE_MULTICAST=1
source "$(dirname "$0")/env.sh"
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release > "$out/build.log" 2>&1 &&
  cmake --build build -j "$(nproc)" >> "$out/build.log" 2>&1 || { tail -30 "$out/build.log"; exit 1; }
(cd build && timeout "${WEFT_TEST_BUDGET:-400}" ctest -V -R "${1:-_np[234]$}" -j 1) > "$out/ctest.log" 2>&1
grep -E "Test +#[0-9]+:" "$out/ctest.log" | sed 's/^.*Test *#/#/'
grep -E "tests passed|tests failed" "$out/ctest.log"
