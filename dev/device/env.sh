# dev/device/env.sh — sourced first by every dev script that builds or runs on a GPU machine:
#   bash: no unset variables, a pipeline fails with its first failing command;
#   NVLink multicast off for NCCL, NVSHMEM and torch (the scripts also export these three on a
#   line of their own, so that each script states them where it is read);
#   the JIT cache in WEFT_CACHE_DIR (default /tmp/weft-cache);
#   $out: the log folder, $OUT or ./gpu-logs, created;
#   the working directory: the repository root.
set -uo pipefail
export NCCL_NVLS_ENABLE=0 NVSHMEM_DISABLE_NVLS=1 TORCH_SYMM_MEM_DISABLE_MULTICAST=1
export WEFT_CACHE_DIR=${WEFT_CACHE_DIR:-/tmp/weft-cache}
out=${OUT:-gpu-logs}
mkdir -p "$out"
cd "$(dirname "${BASH_SOURCE[0]}")/../.." || exit 1
