#!/bin/sh
# bench_routing.sh WEFT_BENCH PYTHON ROOT — weft-bench grouped_gemm and its torch peer
# (bench/peers/torch_grouped_mm.py) draw the same routing for every shape: their --dry-run lines
# (rows, expert loads, a hash of every id) are equal for the default shapes and a few given ones,
# uniform and Zipf. Needs no GPU and no torch.
set -u
wb=$1 py=$2 root=$3
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
fails=0
for r in uniform zipf; do
  for shapes in "" "1,256,128,4,4 777,1408,2048,60,4 5,64,64,1,1"; do
    wargs="" pargs=""
    for s in $shapes; do wargs="$wargs -s $s"; done
    [ -n "$shapes" ] && pargs="--shapes $shapes"
    # shellcheck disable=SC2086
    "$wb" grouped_gemm -r $r $wargs --dry-run > "$tmp/c" 2>&1 || { echo "FAIL: weft-bench --dry-run ($r)"; cat "$tmp/c"; fails=$((fails + 1)); }
    # shellcheck disable=SC2086
    "$py" "$root/bench/peers/torch_grouped_mm.py" --routing $r $pargs --dry-run > "$tmp/p" 2>&1 || { echo "FAIL: torch_grouped_mm.py --dry-run ($r)"; cat "$tmp/p"; fails=$((fails + 1)); }
    if ! diff "$tmp/c" "$tmp/p" > "$tmp/d"; then
      echo "FAIL: the routings differ ($r, shapes: ${shapes:-default})"; cat "$tmp/d"; fails=$((fails + 1))
    elif [ ! -s "$tmp/c" ]; then
      echo "FAIL: no routing printed ($r)"; fails=$((fails + 1))
    else
      echo "ok   $r, shapes ${shapes:-default}: $(wc -l < "$tmp/c") routings the same"
    fi
  done
done
[ "$fails" -eq 0 ] && echo ok || echo FAILED
exit $((fails != 0))
