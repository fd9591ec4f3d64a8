# dev/device/trees.sh — sourced (after env.sh) by the dev scripts that build before they measure,
# or measure copies of the tree side by side. Never touches the working tree itself.
#
# build_tree LOG [TARGET]...   builds the working tree under build/ (Release; the TARGETs, else
#   everything), its output in LOG; on a failure prints the log's tail and exits.
# ab_trees OLD DIR [TARGET]...   builds weft-bench and weftrun from OLD (a folder that travels
#   with the working tree, e.g. `git archive <commit> | tar -x -C ab_old`, or a commit this
#   checkout has) under /tmp/ab_old/build and the working tree as build_tree does, side by side,
#   logs in DIR; exits on a failed build.
# variant_tree DIR [FILE NAME VALUE]...   a copy of the tree at DIR (no build/, no .git) in which
#   the line "#define NAME ..." of FILE (relative to the tree) reads "#define NAME VALUE"; fails
#   where FILE has no such line.
# variant_build DIR LOG [TARGET]...   configures and builds the copy at DIR (the TARGETs, else
#   everything), its output in LOG.
# machine_txt   the date, the GPUs, their links and the commit into $out/machine.txt.
# (The GPU runs of these trees keep NVLink multicast off, as env.sh does.)
export NCCL_NVLS_ENABLE=0 NVSHMEM_DISABLE_NVLS=1 TORCH_SYMM_MEM_DISABLE_MULTICAST=1
variant_src=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)

build_tree() {
  local log=$1
  shift
  local targets=()
  [ $# -gt 0 ] && targets=(--target "$@")
  (cmake -S . -B build -DCMAKE_BUILD_TYPE=Release > /dev/null &&
    cmake --build build -j "$(nproc)" "${targets[@]}") > "$log" 2>&1 ||
    { tail -20 "$log"; echo BUILD FAILED; exit 1; }
}

ab_trees() {
  local old=$1 dir=$2
  shift 2
  rm -rf /tmp/ab_old && mkdir -p /tmp/ab_old
  if [ -d "$old" ]; then cp -r "$old"/. /tmp/ab_old/; else git archive "$old" | tar -x -C /tmp/ab_old || exit 1; fi
  (cmake -S /tmp/ab_old -B /tmp/ab_old/build -DCMAKE_BUILD_TYPE=Release > /dev/null &&
    cmake --build /tmp/ab_old/build -j "$(nproc)" --target weft-bench weftrun) > "$dir/build_old.log" 2>&1 &
  build_tree "$dir/build_new.log" "$@"
  wait
  [ -x /tmp/ab_old/build/tools/weft-bench ] ||
    { tail -20 "$dir/build_old.log"; echo BUILD FAILED; exit 1; }
}

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

variant_build() {
  local tree=$1 log=$2
  shift 2
  local targets=()
  [ $# -gt 0 ] && targets=(--target "$@")
  (cmake -S "$tree" -B "$tree/build" -DCMAKE_BUILD_TYPE=Release > /dev/null &&
     cmake --build "$tree/build" -j "$(nproc)" "${targets[@]}") > "$log" 2>&1
}

machine_txt() {
  { date -u; nvidia-smi -L; nvidia-smi topo -m 2>/dev/null | head -6; git log -1 --format=%h 2>/dev/null; } \
    > "$out/machine.txt" 2>&1
}
