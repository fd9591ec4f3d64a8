# dev/variant.sh — sourced by the dev scripts that measure copies of the tree side by side, each
# with some #defines changed and built apart (the tree itself is never touched): the GPU
# scripts' preamble (multicast off, the JIT cache, $OUT, machine.txt) and two functions.
export NCCL_NVLS_ENABLE=0 NVSHMEM_DISABLE_NVLS=1 TORCH_SYMM_MEM_DISABLE_MULTICAST=1
export WEFT_CACHE_DIR=${WEFT_CACHE_DIR:-/tmp/weft-cache}
out=${OUT:-gpu-logs}
mkdir -p "$out"
{ date -u; nvidia-smi -L; nvidia-smi topo -m 2>/dev/null | head -6; } > "$out/machine.txt" 2>&1
variant_src=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

# variant_tree DIR [FILE NAME VALUE]...: a copy of the tree at DIR (no build, no .git) in which
# the line "#define NAME ..." of FILE (relative to the tree) reads "#define NAME VALUE"; fails
# where FILE has no such line.
variant_tree() {
  local tree=$1
  shift
  rm -rf "$tree" && mkdir -p "$tree"
  (cd "$variant_src" && tar --exclude=./build --exclude=./.git -cf - .) | tar -C "$tree" -xf -
  while [ $# -ge 3 ]; do
    sed -i "s|^#define $2 .*|#define $2 $3|" "$tree/$1"
    grep -qxF "#define $2 $3" "$tree/$1" || { echo "variant_tree: no '#define $2' in $1"; return 1; }
    shift 3
  done
}

# variant_build DIR LOG [TARGET]...: configures and builds the copy at DIR (the TARGETs, else
# everything), its output into LOG.
variant_build() {
  local tree=$1 log=$2
  shift 2
  local targets=()
  [ $# -gt 0 ] && targets=(--target "$@")
  (cmake -S "$tree" -B "$tree/build" -DCMAKE_BUILD_TYPE=Release > /dev/null &&
     cmake --build "$tree/build" -j "$(nproc)" "${targets[@]}") > "$log" 2>&1
}
