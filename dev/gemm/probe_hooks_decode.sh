#!/usr/bin/env bash
# One GPU call (H100 or H200) for issue 4's open points: the notifier-warp notify and the wait's
# producer registers (gemm_dev hooks + hookcost suites), and the decode fixed cost (weft-bench
# gemm on the slow decode shapes with and without CUDA graphs and programmatic dependent launch,
# plus Nsight Compute durations of one weft and one cuBLAS call). Logs under $OUT; a short
# summary last. Usage: bash dev/gemm/probe_hooks_decode.sh
set -uo pipefail
export NCCL_NVLS_ENABLE=0 NVSHMEM_DISABLE_NVLS=1 TORCH_SYMM_MEM_DISABLE_MULTICAST=1
cd "$(dirname "$0")/../.."
out=${OUT:-gpu-logs}
mkdir -p "$out"
{ date -u; nvidia-smi -L; nvcc --version | tail -1; git log -1 --format=%h 2>/dev/null; } > "$out/machine.txt" 2>&1
t0=$(date +%s)
(cmake -S . -B build -DCMAKE_BUILD_TYPE=Release > /dev/null && cmake --build build -j16) > "$out/build.log" 2>&1 &
nvcc -O2 -std=c++17 -arch=sm_90a -Iinclude dev/gemm/gemm_dev.cu -o "$out/gemm_dev" -lcuda -lnvrtc -lcublas \
  > "$out/gemm_dev_build.log" 2>&1 || { tail -20 "$out/gemm_dev_build.log"; echo GEMM_DEV BUILD FAILED; }
wait || true
[ -x build/tools/weft-bench ] || { tail -30 "$out/build.log"; echo BUILD FAILED; exit 1; }
echo "builds $(( $(date +%s) - t0 )) s" > "$out/summary.txt"
G="$out/gemm_dev"
timeout 120 $G --suite hooks > "$out/hooks.log" 2>&1; echo "gemm_dev hooks rc=$?: $(tail -1 "$out/hooks.log")" >> "$out/summary.txt"
timeout 240 $G --suite hookcost --json "$out/hookcost.json" > "$out/hookcost.log" 2>&1; echo "gemm_dev hookcost rc=$?" >> "$out/summary.txt"
W="build/tools/weftrun -n 1 build/tools/weft-bench gemm"
DEC="-s 1,4096,2752 -s 1,3584,4096 -s 1,4096,3584 -s 1,8192,7168 -s 16,2752,4096 -s 16,4096,2752 -s 64,4096,3584 -s 128,2752,4096 -s 128,3584,4096"
for pdl in 0 1; do
  for g in 0 1; do
    WEFT_GEMM_PDL=$pdl timeout 120 $W $DEC -n 20 -G $g > "$out/decode_pdl${pdl}_G${g}.log" 2>&1
    echo "decode pdl=$pdl G=$g rc=$?" >> "$out/summary.txt"
  done
done
WEFT_GEMM_PDL=1 timeout 150 $W --hooks -s 8192,2752,4096 -s 8192,1792,4096 -s 8192,4096,1376 -s 8192,8192,8192 -n 15 \
  > "$out/bench_hooks.log" 2>&1; echo "bench hooks rc=$?" >> "$out/summary.txt"
WEFT_GEMM_PDL=1 timeout 150 ctest --test-dir build -R "gpu_test_gemm" > "$out/ctest_gemm.log" 2>&1
echo "ctest gemm (PDL on) rc=$?: $(grep 'tests passed' "$out/ctest_gemm.log")" >> "$out/summary.txt"
if command -v ncu > /dev/null; then
  timeout 150 ncu --target-processes all -c 30 --section SpeedOfLight $W -s 1,4096,3584 -n 1 -w 0 \
    > "$out/ncu_decode.txt" 2>&1
  echo "ncu rc=$?" >> "$out/summary.txt"
fi
echo "---- hooks (correctness)"; grep -h "hooks.*exact\|WRONG\|FAIL\|ALL OK" "$out/hooks.log" | head -12
echo "---- hookcost"; grep -v "^compiled" "$out/hookcost.log" | tail -80
for f in "$out"/decode_*.log; do echo "---- $(basename "$f")"; grep -v "^#  rank" "$f" | tail -11; done
echo "---- bench hooks"; tail -6 "$out/bench_hooks.log"
echo "---- ncu"; grep -E "^  [a-zA-Z_].*\(|Duration|DRAM Throughput|Memory Throughput" "$out/ncu_decode.txt" 2>/dev/null | head -80
echo "---- summary"; cat "$out/summary.txt"
