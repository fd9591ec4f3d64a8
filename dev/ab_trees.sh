# dev/ab_trees.sh — sourced by the A/B scripts (dev/gemm/ab_build.sh, dev/collectives/ab_build.sh,
# dev/overlap/mid_m_ab.sh). ab_trees <old> <log dir> [targets of the new build...] builds
# weft-bench and weftrun from the parent tree <old> (a directory that travels with the working
# tree, e.g. `git archive <commit> | tar -x -C ab_old`, or a commit this checkout has) under
# /tmp/ab_old/build, and the working tree under build/ (the named targets, or everything),
# side by side; exits on a failed build.
ab_trees() {
  local old=$1 out=$2
  shift 2
  local targets=()
  [ $# -gt 0 ] && targets=(--target "$@")
  rm -rf /tmp/ab_old && mkdir -p /tmp/ab_old
  if [ -d "$old" ]; then cp -r "$old"/. /tmp/ab_old/; else git archive "$old" | tar -x -C /tmp/ab_old || exit 1; fi
  (cmake -S /tmp/ab_old -B /tmp/ab_old/build -DCMAKE_BUILD_TYPE=Release > /dev/null &&
    cmake --build /tmp/ab_old/build -j "$(nproc)" --target weft-bench weftrun) > "$out/build_old.log" 2>&1 &
  (cmake -S . -B build -DCMAKE_BUILD_TYPE=Release > /dev/null &&
    cmake --build build -j "$(nproc)" "${targets[@]}") > "$out/build_new.log" 2>&1
  wait
  [ -x /tmp/ab_old/build/tools/weft-bench ] && [ -x build/tools/weft-bench ] ||
    { tail -20 "$out"/build_*.log; echo BUILD FAILED; exit 1; }
}
