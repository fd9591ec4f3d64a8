# dev/builds.sh — sourced by the dev scripts that build before they measure.
#
# build_tree <log file> [targets...] builds the working tree under build/ (Release; the named
# targets, or everything), its output in the log; exits with the log's tail on a failure.
#
# ab_trees <old> <log dir> [targets of the new build...] builds weft-bench and weftrun from the
# parent tree <old> (a directory that travels with the working tree, e.g. `git archive <commit> |
# tar -x -C ab_old`, or a commit this checkout has) under /tmp/ab_old/build, and the working tree
# as build_tree does, side by side (dev/gemm/ab_build.sh, dev/collectives/ab_build.sh,
# dev/overlap/mid_m_ab.sh); exits on a failed build.
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
  local old=$1 out=$2
  shift 2
  rm -rf /tmp/ab_old && mkdir -p /tmp/ab_old
  if [ -d "$old" ]; then cp -r "$old"/. /tmp/ab_old/; else git archive "$old" | tar -x -C /tmp/ab_old || exit 1; fi
  (cmake -S /tmp/ab_old -B /tmp/ab_old/build -DCMAKE_BUILD_TYPE=Release > /dev/null &&
    cmake --build /tmp/ab_old/build -j "$(nproc)" --target weft-bench weftrun) > "$out/build_old.log" 2>&1 &
  build_tree "$out/build_new.log" "$@"
  wait
  [ -x /tmp/ab_old/build/tools/weft-bench ] ||
    { tail -20 "$out/build_old.log"; echo BUILD FAILED; exit 1; }
}
