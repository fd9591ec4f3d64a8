# dev/gemm/gemm_dev_build.sh — sourced by the dev/gemm scripts that run gemm_dev: the GPU
# scripts' set-up (dev/device/env.sh: repository root, $out), the machine into $out/machine.txt,
# then gemm_dev built into $out/gemm_dev (exits with the log's tail on a failed build).
export NCCL_NVLS_ENABLE=0 NVSHMEM_DISABLE_NVLS=1 TORCH_SYMM_MEM_DISABLE_MULTICAST=1
source "$(dirname "${BASH_SOURCE[0]}")/../device/env.sh"
{ date -u; hostname; nvidia-smi -L
  nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,power.limit,temperature.gpu --format=csv
  nvcc --version | tail -1; git log -1 --format=%h 2>/dev/null; } > "$out/machine.txt" 2>&1
nvcc -O2 -std=c++17 -arch=sm_90a -Iinclude -I. dev/gemm/gemm_dev.cu -o "$out/gemm_dev" -lcuda -lnvrtc -lcublas \
  > "$out/build.log" 2>&1 || { tail -30 "$out/build.log"; echo BUILD FAILED; exit 1; }
