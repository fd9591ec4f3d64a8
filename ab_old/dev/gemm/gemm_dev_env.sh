# Sourced by the dev/gemm probe scripts: multicast off, repository root, $out, and gemm_dev built
# into $out (exits on a failed build).
set -uo pipefail
export NCCL_NVLS_ENABLE=0 NVSHMEM_DISABLE_NVLS=1 TORCH_SYMM_MEM_DISABLE_MULTICAST=1
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
out=${OUT:-gpu-logs}; mkdir -p "$out"
nvcc -O2 -std=c++17 -arch=sm_90a -Iinclude dev/gemm/gemm_dev.cu -o "$out/gemm_dev" -lcuda -lnvrtc -lcublas \
  > "$out/build.log" 2>&1 || { tail -30 "$out/build.log"; echo BUILD FAILED; exit 1; }
