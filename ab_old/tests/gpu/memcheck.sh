#!/bin/sh
# memcheck.sh WEFTRUN TEST [ARGS...] — runs a GPU test program (one rank) under compute-sanitizer's
# memcheck; any report of a kernel's memory access fails the test. Skips (77) without
# compute-sanitizer or without a GPU (weftrun's own skip). Driver-call errors are not reported:
# loading a module probes for its optional weft_state symbol (an expected NOT_FOUND), and weft
# checks every driver status itself.
weftrun=$1
shift
cs=$(command -v compute-sanitizer || true)
[ -z "$cs" ] && [ -x /usr/local/cuda/bin/compute-sanitizer ] && cs=/usr/local/cuda/bin/compute-sanitizer
if [ -z "$cs" ]; then
  echo "skipped: compute-sanitizer not found"
  exit 77
fi
exec "$weftrun" -n 1 "$cs" --tool memcheck --report-api-errors no --error-exitcode 1 --print-limit 20 "$@"
