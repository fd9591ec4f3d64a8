#!/bin/sh
# bench_routing.sh WEFT_BENCH PYTHON ROOT — weft-bench grouped_gemm, moe_layer, ag_moe, moe_rs and
# moe_ar and their torch peers (bench/peers/torch_grouped_mm.py, torch_moe_layer.py,
# torch_moe_tp.py) draw the same routing for every shape: their --dry-run lines (rows, expert
# loads, a hash of every id) are equal for the default shapes and a few given ones, uniform and
# Zipf (the tensor-parallel suites at the dry run's default world size, 2). Needs no GPU and no
# torch.
set -u
wb=$1 py=$2 root=$3
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
fails=0
check() { # suite, peer script (and its suite option), routing, shapes
  suite=$1 peer=$2 r=$3 shapes=$4
  wargs="" pargs=""
  for s in $shapes; do wargs="$wargs -s $s"; done
  [ -n "$shapes" ] && pargs="--shapes $shapes"
  # shellcheck disable=SC2086
  "$wb" $suite -r $r $wargs --dry-run > "$tmp/c" 2>&1 || { echo "FAIL: weft-bench $suite --dry-run ($r)"; cat "$tmp/c"; fails=$((fails + 1)); }
  # shellcheck disable=SC2086
  "$py" "$root/bench/peers/"$peer --routing $r $pargs --dry-run > "$tmp/p" 2>&1 || { echo "FAIL: $peer --dry-run ($r)"; cat "$tmp/p"; fails=$((fails + 1)); }
  if ! diff "$tmp/c" "$tmp/p" > "$tmp/d"; then
    echo "FAIL: $suite and $peer: the routings differ ($r, shapes: ${shapes:-default})"; cat "$tmp/d"; fails=$((fails + 1))
  elif [ ! -s "$tmp/c" ]; then
    echo "FAIL: no routing printed ($suite, $r)"; fails=$((fails + 1))
  else
    echo "ok   $suite, $r, shapes ${shapes:-default}: $(wc -l < "$tmp/c") routings the same"
  fi
}
for r in uniform zipf; do
  for shapes in "" "1,256,128,4,4 777,1408,2048,60,4 5,64,64,1,1"; do
    check grouped_gemm torch_grouped_mm.py $r "$shapes"
    check moe_layer torch_moe_layer.py $r "$shapes"
    for tp in ag_moe moe_rs moe_ar; do
      check $tp "torch_moe_tp.py --suite $tp" $r "$shapes"
    done
  done
done
[ "$fails" -eq 0 ] && echo ok || echo FAILED
exit $((fails != 0))
