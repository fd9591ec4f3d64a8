#!/bin/sh
# bench_cli.sh WEFT_BENCH — weft-bench's command line without a GPU: every suite's -h answers on
# stdout with success and names the suite; a missing or unknown suite, an unknown option and a
# bad value are refused (exit 2) with the usage or the reason on stderr, before any GPU work.
set -u
wb=$1
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
fails=0
expect() { # rc, what, command...
  want=$1 what=$2
  shift 2
  "$@" > "$tmp/out" 2> "$tmp/err"
  rc=$?
  if [ "$rc" != "$want" ]; then
    echo "FAIL: $what: exit $rc, expected $want"; cat "$tmp/out" "$tmp/err"; fails=$((fails + 1))
  fi
}
has() { # pattern, file, what
  grep -q -- "$1" "$tmp/$2" || { echo "FAIL: $3"; fails=$((fails + 1)); }
}
expect 0 "weft-bench -h" "$wb" -h
suites=$(sed -n '/^suites:/,$p' "$tmp/out" | awk 'NR > 1 {print $1}')
[ -n "$suites" ] || { echo "FAIL: weft-bench -h lists no suites"; exit 1; }
for s in $suites; do
  expect 0 "$s -h" "$wb" "$s" -h
  has "^usage: weftrun -n N weft-bench $s " out "$s -h: no usage line"
  has "-T SECONDS" out "$s -h: no option legend"
done
expect 2 "no suite" "$wb"
has "^suites:" err "no suite: no usage on stderr"
expect 2 "unknown suite" "$wb" nosuch
expect 2 "unknown option (a sweep suite)" "$wb" allreduce -x 1
expect 2 "unknown option (a matrix suite)" "$wb" gemm_ar --nosuch 1
has "^usage: weftrun -n N weft-bench gemm_ar " err "gemm_ar: no usage on stderr"
expect 2 "bad -T" "$wb" allreduce -T 0
expect 2 "bad -T (matrix)" "$wb" gemm -T x
expect 2 "bad --config" "$wb" gemm --config ZZ=1
expect 2 "bad -s" "$wb" ag_gemm -s 1,2
expect 2 "bad -o" "$wb" reduce_scatter -o mean
has "-o takes sum, prod, max, min or avg" err "bad -o: no reason on stderr"
expect 2 "bad -d (a reduction)" "$wb" allreduce -d int32
echo "$(echo "$suites" | wc -w) suites; $fails failures"
[ "$fails" = 0 ]
