#!/bin/sh
# examples.sh header|readme SOURCE_DIR CC LIBWEFT — the examples a reader copies compile and link
# against this build: the usage example at the top of include/weft.h (the lines of its first
# comment indented four spaces past " * ", up to the text after them), or each ```c block of
# README.md. A fragment (statements outside any function) goes into main(), behind its #include
# lines and a paragraph of static declarations; a line that is only "..." (the reader's own code)
# is dropped, and the header's CHECK becomes a return on error. Compiled and linked, not run (no
# GPU is needed). Implicit declarations, pointer and integer mismatches and a missing return
# value are errors: each means the example no longer matches the API.
set -u
mode=$1 src=$2 cc=$3 lib=$4
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
fails=0 count=0

# wrap FRAGMENT OUT: a complete program from a fragment (as it is where it has a main()).
wrap() {
  if grep -q '^[a-z].*[ *]main *(' "$1"; then
    grep -v '^[[:space:]]*\.\.\.[[:space:]]*$' "$1" > "$2"
    return
  fi
  awk '
    /^[[:space:]]*\.\.\.[[:space:]]*$/ { next }
    /^[[:space:]]*$/ { para = 0; if (started) body = body "\n"; next }
    !para { para = 1; top_para = ($0 ~ /^static[[:space:]]/) }
    /^[[:space:]]*#/ || top_para { top = top $0 "\n"; next }
    { started = 1; body = body "  " $0 "\n" }
    END {
      printf "%s", top
      print "#ifndef CHECK"
      print "#define CHECK(call) do { if ((call) != WEFT_STATUS_SUCCESS) return 1; } while (0)"
      print "#endif"
      print "int main(void) {"
      printf "%s", body
      print "  return 0;"
      print "}"
    }' "$1" > "$2"
}

# check NAME FRAGMENT: wraps, compiles and links one example.
check() {
  count=$((count + 1))
  if [ ! -s "$2" ]; then
    echo "FAIL: $1: no example found"
    fails=$((fails + 1))
    return
  fi
  wrap "$2" "$tmp/$1.c"
  if "$cc" -std=c11 -Wall -Wextra -Werror=implicit-function-declaration \
      -Werror=incompatible-pointer-types -Werror=int-conversion -Werror=return-type \
      -I "$src/include" -o "$tmp/$1" "$tmp/$1.c" -L "$(dirname "$lib")" -lweft \
      > "$tmp/log" 2>&1; then
    echo "ok   $1 compiles and links"
    [ -s "$tmp/log" ] && cat "$tmp/log"
  else
    echo "FAIL: $1 does not compile; as compiled:"
    cat -n "$tmp/$1.c"
    cat "$tmp/log"
    fails=$((fails + 1))
  fi
}

case $mode in
  header)
    # The first comment's code lines: " *" and five spaces or more, blank " *" lines between.
    awk '
      NR == 1 && !/^\/\*/ { exit }
      /^ \*\// { exit }
      /^ \*     / { code = 1; sub(/^ \*     /, ""); print; next }
      code && /^ \*[[:space:]]*$/ { print ""; next }
      code { exit }' "$src/include/weft.h" > "$tmp/header.frag"
    check weft_h_example "$tmp/header.frag"
    ;;
  readme)
    awk -v dir="$tmp" '
      /^```c[[:space:]]*$/ { n++; inside = 1; printf "" > (dir "/readme_" n ".frag"); next }
      inside && /^```/ { inside = 0; close(dir "/readme_" n ".frag"); next }
      inside { print > (dir "/readme_" n ".frag") }' "$src/README.md"
    found=0
    for f in "$tmp"/readme_*.frag; do
      [ -e "$f" ] || continue
      found=1
      check "README_c_block_$(basename "$f" .frag | sed 's/readme_//')" "$f"
    done
    if [ $found = 0 ]; then
      echo "FAIL: README.md has no \`\`\`c block"
      fails=$((fails + 1))
    fi
    ;;
  *)
    echo "usage: examples.sh header|readme SOURCE_DIR CC LIBWEFT" >&2
    exit 2
    ;;
esac
echo "$count examples, $fails failed"
[ $fails = 0 ]
