#!/usr/bin/env bash
# One GPU call (H100 or H200) for issue 4's open points. Sections (default: all):
#   hooks     gemm_dev hooks suite (hooks on/off bit-identical, notify counters exact)
#   hookcost  gemm_dev hookcost suite (each hook's cost; notifier warp against the consumer's
#             own release, gpu and sys scope)
#   trace     decode shapes, several tile configurations interleaved with cuBLAS, then one
#             traced launch of each (per-CTA %globaltimer: start-up, mainloop, epilogue)
#   decode    weft-bench gemm on the slow decode shapes, plain and as CUDA graphs (-G 1)
#   bench     weft-bench gemm --hooks on the shapes where the hooks cost most
#   ncu       Nsight Compute durations of weft and cuBLAS at 1x4096x3584
#   sass      SASS of the 128-column kernel with and without the wait hook (cuobjdump)
#   ctest     the GEMM GPU tests (float64 reference, hooks, memcheck)
# (TRACE=1 adds a traced launch per decode configuration)
# Logs under $OUT; the sections' tables last.
set -uo pipefail
export NCCL_NVLS_ENABLE=0 NVSHMEM_DISABLE_NVLS=1 TORCH_SYMM_MEM_DISABLE_MULTICAST=1
cd "$(dirname "$0")/../.."
out=${OUT:-gpu-logs}
mkdir -p "$out"
sections=${*:-hooks hookcost trace decode bench ncu}
{ date -u; nvidia-smi -L; nvcc --version | tail -1; } > "$out/machine.txt" 2>&1
t0=$(date +%s)
(cmake -S . -B build -DCMAKE_BUILD_TYPE=Release > /dev/null && cmake --build build -j16) > "$out/build.log" 2>&1 &
nvcc -O2 -std=c++17 -arch=sm_90a -Iinclude dev/gemm/gemm_dev.cu -o "$out/gemm_dev" -lcuda -lnvrtc -lcublas \
  > "$out/gemm_dev_build.log" 2>&1 || { tail -20 "$out/gemm_dev_build.log"; echo GEMM_DEV BUILD FAILED; }
wait || true
[ -x build/tools/weft-bench ] || { tail -30 "$out/build.log"; echo BUILD FAILED; exit 1; }
echo "builds $(( $(date +%s) - t0 )) s" > "$out/summary.txt"
G="stdbuf -oL $out/gemm_dev"
W="build/tools/weftrun -n 1 build/tools/weft-bench gemm"
has() { [[ " $sections " == *" $1 "* ]]; }
if has hooks; then
  timeout 120 $G --suite hooks > "$out/hooks.log" 2>&1; echo "hooks rc=$?: $(tail -1 "$out/hooks.log")" >> "$out/summary.txt"
fi
if has hookcost; then
  timeout 240 $G --suite hookcost --json "$out/hookcost.json" > "$out/hookcost.log" 2>&1; echo "hookcost rc=$?" >> "$out/summary.txt"
fi
if has trace; then
  : > "$out/trace.log"
  for s in "1 4096 3584" "1 4096 2752" "1 3584 4096" "1 8192 7168" "16 2752 4096" "16 4096 2752" "64 4096 3584" "128 2752 4096" "128 3584 4096"; do
    set -- $s
    if [ $1 -le 32 ]; then
      ar=$(( $1 <= 8 ? 8 : $1 <= 16 ? 16 : 32 ))
      cf="BM=64,BN=64,ST=16,CL=1,EPI=1,KS=2,AR=$ar BM=64,BN=64,ST=16,CL=1,EPI=1,KS=1,AR=$ar BM=64,BN=128,ST=16,CL=1,EPI=1,KS=3,AR=$ar BM=64,BN=128,ST=16,CL=1,EPI=1,KS=1,AR=$ar BM=64,BN=128,ST=8,CL=1,EPI=1,KS=3"
    else
      cf="BM=64,BN=64,ST=16,CL=1,EPI=1,KS=1 BM=128,BN=64,ST=16,CL=1,EPI=1,KS=1 BM=64,BN=128,ST=16,CL=1,EPI=1,KS=1 BM=128,BN=128,ST=16,CL=1,EPI=2,KS=1 BM=64,BN=64,ST=8,CL=1,EPI=1,KS=1"
    fi
    args=""; for c in $cf; do args="$args --cfg $c"; done
    timeout 60 $G --m $1 --n $2 --k $3 --samples 20 ${TRACE:+--trace} $args >> "$out/trace.log" 2>&1
    echo "trace $s rc=$?" >> "$out/summary.txt"
  done
fi
if has sass; then
  mkdir -p "$out/cubin"
  GEMM_DEV_CUBIN_DIR="$out/cubin" timeout 60 $G --compile-only --m 8192 --n 1792 --k 4096 \
    --cfg BM=128,BN=128,ST=6,CL=2,EPI=2 --cfg BM=128,BN=128,ST=6,CL=2,EPI=2,WAIT=1 > "$out/sass.log" 2>&1
  for c in "$out"/cubin/*.cubin; do cuobjdump -sass "$c" > "${c%.cubin}.sass" 2>&1; rm -f "$c"; done
  echo "sass rc=$?: $(ls "$out"/cubin | tr '\n' ' ')" >> "$out/summary.txt"
fi
if has ctest; then
  timeout 200 ctest --test-dir build -R "gpu_test_gemm" --output-on-failure > "$out/ctest_gemm.log" 2>&1
  echo "ctest gemm rc=$?: $(grep 'tests passed' "$out/ctest_gemm.log")" >> "$out/summary.txt"
fi
DEC="-s 1,4096,2752 -s 1,3584,4096 -s 1,4096,3584 -s 1,8192,7168 -s 16,2752,4096 -s 16,4096,2752 -s 64,4096,3584 -s 128,2752,4096 -s 128,3584,4096"
if has decode; then
  for g in 0 1; do
    timeout 120 $W $DEC -n 20 -G $g > "$out/decode_G$g.log" 2>&1; echo "decode G=$g rc=$?" >> "$out/summary.txt"
  done
fi
if has bench; then
  timeout 150 $W --hooks -s 8192,2752,4096 -s 8192,1792,4096 -s 8192,4096,1376 -s 8192,8192,8192 -n 15 \
    > "$out/bench_hooks.log" 2>&1; echo "bench hooks rc=$?" >> "$out/summary.txt"
fi
if has ncu && command -v ncu > /dev/null; then
  timeout 150 ncu --target-processes all -c 30 --section SpeedOfLight $W -s 1,4096,3584 -n 1 -w 0 \
    > "$out/ncu_decode.txt" 2>&1; echo "ncu rc=$?" >> "$out/summary.txt"
fi
has hooks && { echo "---- hooks (correctness)"; grep -h "hooks.*exact\|WRONG\|FAIL\|ALL OK" "$out/hooks.log" | head -12; }
has hookcost && { echo "---- hookcost"; grep -v "^compiled\|^ptxas\|^weft gemm_dev\|^device" "$out/hookcost.log" | tail -70; }
has trace && { echo "---- trace"; grep -E "^  (one|trace)|FAIL" "$out/trace.log" | sed 's/bf16->bf16 B\[N,K\]//; s/,CL=1//; s/,G=8//; s/,EPI=[0-9]//; s/TFLOP\/s//'; }
has ctest && { echo "---- ctest"; grep -E "Test +#|tests passed|FAIL|WRONG" "$out/ctest_gemm.log" | head; }
for f in "$out"/decode_*.log; do [ -f "$f" ] && { echo "---- $(basename "$f")"; grep -v "^#  rank" "$f" | tail -11; }; done
has bench && { echo "---- bench hooks"; tail -6 "$out/bench_hooks.log"; }
has ncu && { echo "---- ncu"; grep -E "^  [a-zA-Z_].*\(|Duration" "$out/ncu_decode.txt" 2>/dev/null | head -24; }
echo "---- summary"; cat "$out/summary.txt"
